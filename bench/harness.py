"""What every benchmark script shares: a gateway subprocess, the connect handshake, statistics,
machine facts, and the report and command-line plumbing.

Everything talks to 127.0.0.1 only; a gateway started here gets a fresh state dir and is stopped
with SIGTERM (SIGKILL if it does not go), its temp files removed, whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import psutil
from websockets.asyncio.client import ClientConnection, connect

HOST = "127.0.0.1"
TOKEN = "bench-token-0123456789abcdef"  # a throwaway shared secret for gateways this script starts
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
MIB = 1024 * 1024


# -- small helpers ----------------------------------------------------------------------------
def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of ``samples`` (pct in 0..100)."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summarize(samples: Sequence[float]) -> dict[str, float]:
    return {
        "n": float(len(samples)),
        "min": min(samples),
        "p50": percentile(samples, 50),
        "p95": percentile(samples, 95),
        "p99": percentile(samples, 99),
        "max": max(samples),
        "mean": statistics.fmean(samples),
    }


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine so far, all cores."""
    t = psutil.cpu_times()
    busy = t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
    return float(busy), float(getattr(t, "steal", 0.0))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def homarus_executable() -> str:
    candidate = Path(sys.executable).parent / "homarus"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("homarus")
    if found is None:
        raise SystemExit("cannot find the `homarus` console script; run `make install` first")
    return found


def http_health_ok(port: int) -> bool:
    """One ``GET /health``; True on a 200 with the live body, False when not (yet) listening."""
    try:
        with socket.create_connection((HOST, port), timeout=1.0) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            chunks: list[bytes] = []
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError:
        return False
    data = b"".join(chunks)
    return data.startswith(b"HTTP/1.1 200") and b'"live"' in data


def connect_frame(token: str) -> str:
    return json.dumps(
        {
            "type": "req",
            "id": "1",
            "method": "connect",
            "params": {
                "minProtocol": 3,
                "maxProtocol": 3,
                "client": {"id": "test", "version": "1", "platform": "linux", "mode": "test"},
                "role": "operator",
                "scopes": ["operator.admin"],
                "auth": {"token": token},
            },
        }
    )


def health_frame(request_id: str) -> str:
    return f'{{"type":"req","id":"{request_id}","method":"health"}}'


def machine_facts() -> dict[str, Any]:
    cpu_model = "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "ram_gib": round(psutil.virtual_memory().total / (1024**3), 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


# -- the gateway process ----------------------------------------------------------------------
@dataclass
class GatewayProcess:
    """One `homarus gateway run` with its own temp dir (state + log), stopped on exit."""

    log_level: str | None = None
    #: environment overrides for the gateway process; a None value removes the variable
    env_overrides: dict[str, str | None] = field(default_factory=dict)
    #: written to the state dir's homarus.json before the start (None: no config file)
    config: dict[str, Any] | None = None
    port: int = 0
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="homarus-bench-")))
    proc: subprocess.Popen[bytes] | None = None
    spawned_at: float = 0.0

    def start(self) -> None:
        state = self.workdir / "state"
        state.mkdir()
        if self.config is not None:
            (state / "homarus.json").write_text(json.dumps(self.config), encoding="utf-8")
        env = {**os.environ, "HOMARUS_STATE_DIR": str(state)}
        env.pop("HOMARUS_GATEWAY_TOKEN", None)
        for key, value in self.env_overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        self.port = free_port()
        cmd = [homarus_executable(), "gateway", "run", "--bind", "loopback", "--port", str(self.port)]
        cmd += ["--token", TOKEN]
        if self.log_level is not None:
            cmd += ["--log-level", self.log_level]
        with open(self.workdir / "gateway.log", "wb") as log:
            self.spawned_at = time.perf_counter()
            self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_healthy(self) -> float:
        """Poll ``GET /health`` until 200; seconds since spawn."""
        assert self.proc is not None
        deadline = self.spawned_at + START_TIMEOUT_S
        while True:
            if http_health_ok(self.port):
                return time.perf_counter() - self.spawned_at
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode} during start-up:\n{self.log_text()}")
            if time.perf_counter() > deadline:
                raise RuntimeError(f"gateway not healthy after {START_TIMEOUT_S} s:\n{self.log_text()}")
            time.sleep(0.002)

    def log_text(self) -> str:
        with contextlib.suppress(OSError):
            return (self.workdir / "gateway.log").read_text(errors="replace")[-4000:]
        return ""

    @property
    def url(self) -> str:
        return f"ws://{HOST}:{self.port}"

    @property
    def ps(self) -> psutil.Process:
        assert self.proc is not None
        return psutil.Process(self.proc.pid)

    def rss_mib(self) -> float:
        return float(self.ps.memory_info().rss) / MIB

    def cpu_seconds(self) -> float:
        t = self.ps.cpu_times()
        return float(t.user + t.system)

    def stop(self) -> tuple[float, int | None]:
        """SIGTERM, wait (SIGKILL after a timeout); returns (seconds to exit, exit code)."""
        if self.proc is None or self.proc.poll() is not None:
            return 0.0, None if self.proc is None else self.proc.returncode
        started = time.perf_counter()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        return time.perf_counter() - started, code

    def cleanup(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


@contextlib.contextmanager
def running_gateway(log_level: str | None, config: dict[str, Any] | None = None) -> Iterator[GatewayProcess]:
    gw = GatewayProcess(log_level=log_level, config=config)
    try:
        gw.start()
        gw.wait_healthy()
        yield gw
    finally:
        gw.cleanup()


# -- WebSocket client -------------------------------------------------------------------------
async def open_session(url: str, token: str) -> ClientConnection:
    """Open a socket and complete the connect handshake (challenge -> connect -> hello-ok)."""
    ws = await connect(url, compression=None, max_size=None, ping_interval=None, open_timeout=10, close_timeout=2)
    try:
        async with asyncio.timeout(10):
            challenge = orjson.loads(await ws.recv())
            if challenge.get("event") != "connect.challenge":
                raise RuntimeError(f"expected connect.challenge, got {challenge!r}")
            await ws.send(connect_frame(token))
            while True:
                frame = orjson.loads(await ws.recv())
                if frame.get("type") == "res" and frame.get("id") == "1":
                    break
        if not frame.get("ok") or frame.get("payload", {}).get("type") != "hello-ok":
            raise RuntimeError(f"connect refused: {frame!r}")
    except BaseException:
        await ws.close()
        raise
    return ws


def progress(fmt: str, *values: Any) -> None:
    print("# " + (fmt % values), file=sys.stderr, flush=True)


# -- report -----------------------------------------------------------------------------------
def verdict(ok: bool) -> str:
    return "pass" if ok else "**miss**"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        f"| {' | '.join(header)} |",
        f"| {' | '.join('---' for _ in header)} |",
        *(f"| {' | '.join(row)} |" for row in rows),
    ]


def machine_footer(r: dict[str, Any], note: str = "") -> list[str]:
    """The dated machine line under a report table (``r`` holds date, machine and load averages)."""
    m = r["machine"]
    lb = ", ".join(f"{x:.2f}" for x in r["loadavg_before"])
    la = ", ".join(f"{x:.2f}" for x in r["loadavg_after"])
    return [
        "",
        f"{r['date']}; {m['cpus']} CPUs ({m['cpu_model']}), {m['ram_gib']} GiB RAM, Python {m['python']};"
        f" load average before: {lb}; after: {la}.{note}",
    ]


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop gateways and remove temp dirs


def bench_main(
    argv: Sequence[str] | None,
    parse_args: Callable[[Sequence[str] | None], argparse.Namespace],
    run_bench: Callable[[argparse.Namespace], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
) -> int:
    """Parse, run, print the table, and write ``--json`` if asked; SIGTERM still cleans up."""
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    results = run_bench(args)
    print(render(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0
