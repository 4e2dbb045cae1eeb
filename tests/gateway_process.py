"""Gateway child processes for tests: ``python -m homarus gateway run`` with drained output.

Used where the real process matters: the CLI, and crash recovery (``kill -9`` and a restart).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

CLI_TIMEOUT = 20.0  # seconds for one short-lived CLI command
START_TIMEOUT = 15.0  # seconds for `gateway run` to print its listening line
EXIT_TIMEOUT = 8.0  # seconds for a signalled gateway to exit
LISTEN_RE = re.compile(r"^homarus gateway listening on ws://127\.0\.0\.1:(\d+) \(http on the same port\)$")


# -- helpers ------------------------------------------------------------------------------
def scrubbed_env(state_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment minus every HOMARUS_* variable, pointed at ``state_dir``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMARUS_")}
    env["HOMARUS_STATE_DIR"] = str(state_dir)
    env.update(extra)
    return env


def run_cli(env: dict[str, str], *args: str, timeout: float = CLI_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run ``python -m homarus ARGS`` to completion (killed on timeout)."""
    return subprocess.run(
        [sys.executable, "-m", "homarus", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def write_config(state_dir: Path, text: str) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = state_dir / "homarus.json"
    path.write_text(text, encoding="utf-8")
    return path


def free_port() -> int:
    """A loopback port with (very probably) nothing listening on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GatewayProcess:
    """A `homarus gateway run` child whose stdout/stderr are drained by threads."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self._out: list[str] = []
        self._err: list[str] = []
        self._lock = threading.Lock()
        self._listening = threading.Event()
        self.port: int | None = None
        assert proc.stdout is not None and proc.stderr is not None
        self._threads = [
            threading.Thread(target=self._pump, args=(proc.stdout, self._out, True), daemon=True),
            threading.Thread(target=self._pump, args=(proc.stderr, self._err, False), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _pump(self, stream: IO[str], sink: list[str], watch: bool) -> None:
        try:
            for line in stream:
                with self._lock:
                    sink.append(line)
                if watch and self.port is None and (m := LISTEN_RE.match(line.rstrip("\n"))):
                    self.port = int(m.group(1))
                    self._listening.set()
        finally:
            if watch:
                self._listening.set()  # EOF: the process is gone, stop waiting

    @property
    def stdout(self) -> str:
        with self._lock:
            return "".join(self._out)

    @property
    def stderr(self) -> str:
        with self._lock:
            return "".join(self._err)

    @property
    def url(self) -> str:
        assert self.port is not None
        return f"ws://127.0.0.1:{self.port}"

    @property
    def http(self) -> str:
        assert self.port is not None
        return f"http://127.0.0.1:{self.port}"

    def wait_listening(self, timeout: float = START_TIMEOUT) -> int:
        self._listening.wait(timeout)
        if self.port is None:
            raise AssertionError(
                f"gateway did not report listening within {timeout}s (rc={self.proc.poll()})\n"
                f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}"
            )
        return self.port

    def wait_stdout(self, needle: str, timeout: float = START_TIMEOUT) -> str:
        """Wait until ``needle`` appears on stdout; return all stdout so far."""
        deadline = time.monotonic() + timeout
        while needle not in (out := self.stdout):
            if time.monotonic() > deadline or (self.proc.poll() is not None and not self._threads[0].is_alive()):
                raise AssertionError(f"{needle!r} not on stdout within {timeout}s:\n{out}\nstderr:\n{self.stderr}")
            time.sleep(0.02)
        return out

    def wait_exit(self, timeout: float = EXIT_TIMEOUT) -> int:
        """Wait for the process to exit and its output to be fully drained."""
        rc = self.proc.wait(timeout)
        for t in self._threads:
            t.join(5)
        return rc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        finally:
            for t in self._threads:
                t.join(5)
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


@contextmanager
def start_gateway(env: dict[str, str], *args: str) -> Iterator[GatewayProcess]:
    """Start `homarus gateway run --port 0 ARGS`; the child is always killed on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "homarus", "gateway", "run", "--port", "0", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    gw = GatewayProcess(proc)
    try:
        yield gw
    finally:
        gw.stop()


def stop_gracefully(gw: GatewayProcess) -> int:
    gw.proc.send_signal(signal.SIGINT)
    return gw.wait_exit()


def json_out(result: subprocess.CompletedProcess[str]) -> Any:
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"stdout is not JSON: {result.stdout!r} (stderr: {result.stderr!r})") from exc
