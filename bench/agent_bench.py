"""Agent runtime benchmark: per-turn overhead, end-to-end turn latency, first turn, request size.

Run with ``.venv/bin/python bench/agent_bench.py [--turns N] [--starts N] [--json out.json]
[--profile out.txt]`` (or ``make bench-agent``). Everything talks to 127.0.0.1 only. Every gateway gets a fresh temp dir
(state + config + log). Gateway subprocesses are stopped with SIGTERM (SIGKILL if they do not go),
the in-process gateway's journal is closed, the loopback model server is stopped, and all temp
files are removed, whatever happens.

Phases (models are configured through the config file, as a user would do it):

1. **in-process**: the gateway's composition root (``build_gateway``) with no sockets, timing
   ``runtime.run`` for plain turns (the scripted provider echoes) and one-tool turns (a scripted
   ``current_time`` call, then a reply). Run once with the state dir on disk (``$TMPDIR``) and once
   on tmpfs (``/dev/shm``) when that exists. ``os.fsync`` is wrapped to count fsync calls and time,
   and each scripted provider is wrapped to time its own work (the "model"), so a turn splits into
   fsync, model and the rest (orchestration: Python, file reads and writes without fsync, threads).
2. **end to end**: a ``homarus gateway run`` subprocess and a ``websockets`` client: ``agent``
   one-tool and plain turns (request → final ``res``) and ``chat.send`` → ``chat`` final.
3. **first turn after start**: spawn a fresh gateway, wait for ``GET /health``, connect and send the
   first ``agent`` turn at once; median over several starts.
4. **model request**: an ``openai-completions`` provider pointed at a small SSE server inside this
   script. Records the bytes of the JSON body the gateway sends for "hi" with the default tools, and
   times plain and one-tool turns over HTTP (the method of the OpenClaw bench, which used a fake
   model over HTTP).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.agent_client import (
    TURN_TIMEOUT_S,
    agent_params,
    agent_turn,
    chat_turn,
    final_text,
    gateway_with_config,
)
from bench.agent_report import render
from bench.harness import (  # after the sys.path line above
    TOKEN,
    GatewayProcess,
    bench_main,
    machine_cpu_seconds,
    machine_facts,
    open_session,
    progress,
    summarize,
)
from bench.loopback_model import HTTP_TOOL_MARK, TOOL_REPLY, LoopbackModel, describe_request
from homarus.agents.runtime import RunRequest
from homarus.config.paths import StatePaths
from homarus.gateway.app import GatewayOptions
from homarus.gateway.server import build_gateway
from homarus.messages import Context, ModelInfo, StreamEvent, StreamOptions
from homarus.providers.base import Provider

T = TypeVar("T")
TMPFS = Path("/dev/shm")  # noqa: S108 - a fresh mkdtemp dir inside it, removed after use


# Scripted models, configured in the config file. "plain" has an empty script, so it falls back to
# `then: echo` and answers every message with its text. "tool" alternates a `current_time` call and
# a reply; its script is sized to the run (when exhausted it would echo, which the checks catch).
HTTP_MODEL = "fake/fake-model"
PLAIN_MODEL = "plain/echo"
TOOL_MODEL = "tool/one-call"


def scripted_config(tool_turns: int) -> dict[str, Any]:
    script: list[dict[str, Any]] = []
    for _ in range(tool_turns):
        script += [{"toolCalls": [{"name": "current_time", "arguments": {}}]}, {"reply": TOOL_REPLY}]
    return {
        "models": {
            "providers": {
                "plain": {"api": "scripted", "script": []},
                "tool": {"api": "scripted", "script": script},
            }
        },
        "agents": {"defaults": {"model": {"primary": PLAIN_MODEL}}},
    }


def http_config(base_url: str) -> dict[str, Any]:
    return {
        "models": {
            "providers": {
                "fake": {
                    "api": "openai-completions",
                    "baseUrl": base_url,
                    "apiKey": "bench-not-a-real-key",
                    "models": [{"id": "fake-model"}],
                }
            }
        },
        "agents": {"defaults": {"model": {"primary": HTTP_MODEL}}},
    }


def ms_summary(samples_s: Sequence[float]) -> dict[str, float]:
    return summarize([s * 1000 for s in samples_s])


def tenths_ms(samples_s: Sequence[float]) -> tuple[float, float]:
    """Mean of the first and of the last tenth of the samples (in order), in ms: growth over a run."""
    tenth = max(1, len(samples_s) // 10)
    return sum(samples_s[:tenth]) / tenth * 1000, sum(samples_s[-tenth:]) / tenth * 1000


# -- 1. in-process ----------------------------------------------------------------------------
class FsyncMeter:
    """Stands in for ``os.fsync`` while installed: counts calls and their wall time (any thread)."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self._real = os.fsync
        self._lock = threading.Lock()

    def __call__(self, fd: Any) -> None:
        t0 = time.perf_counter()
        try:
            self._real(fd)
        finally:
            elapsed = time.perf_counter() - t0
            with self._lock:
                self.calls += 1
                self.seconds += elapsed

    def snapshot(self) -> tuple[int, float]:
        with self._lock:
            return self.calls, self.seconds


class TimedProvider:
    """Wraps a provider and adds up the time spent inside its stream (between our awaits)."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.api = inner.api
        self.seconds = 0.0

    async def stream(self, model: ModelInfo, context: Context, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        events = self.inner.stream(model, context, options)
        for _ in range(1_000_000):  # bounded: a scripted reply is a few dozen events
            t0 = time.perf_counter()
            try:
                event = await anext(events)
            except StopAsyncIteration:
                self.seconds += time.perf_counter() - t0
                return
            self.seconds += time.perf_counter() - t0
            yield event
        raise RuntimeError("provider stream did not end")


@dataclass
class TurnStats:
    total_s: list[float] = field(default_factory=list)
    fsync_s: list[float] = field(default_factory=list)
    fsync_calls: list[int] = field(default_factory=list)
    model_s: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        n = len(self.total_s)
        overhead = [t - m for t, m in zip(self.total_s, self.model_s, strict=True)]
        return {
            "turn_ms": ms_summary(self.total_s),
            "overhead_ms": ms_summary(overhead),  # the turn minus the scripted provider's own time
            "turns_per_s": n / sum(self.total_s),
            "fsync_calls_per_turn": sum(self.fsync_calls) / n,
            "fsync_ms_per_turn": sum(self.fsync_s) / n * 1000,
            "model_ms_per_turn": sum(self.model_s) / n * 1000,
            "tenths_ms": tenths_ms(self.total_s),
        }


async def _inline_to_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread`` stand-in for --profile: cProfile only sees the main thread."""
    return fn(*args, **kwargs)


async def _inprocess(state: Path, turns: int, warmup: int, profiler: cProfile.Profile | None = None) -> dict[str, Any]:
    paths = StatePaths(state_dir=state, config_path=state / "homarus.json")
    gateway = build_gateway(paths, GatewayOptions())
    meter = FsyncMeter()
    patches = contextlib.ExitStack()
    if profiler is not None:
        patches.enter_context(mock.patch.object(asyncio, "to_thread", _inline_to_thread))
    try:
        timed: dict[str, TimedProvider] = {}
        for ref in (PLAIN_MODEL, TOOL_MODEL):
            provider_id = ref.split("/")[0]
            timed[ref] = TimedProvider(gateway.models.resolve(ref).provider)
            gateway.models.overrides[provider_id] = timed[ref]
        out: dict[str, Any] = {}
        with patches, mock.patch.object(os, "fsync", meter):
            for kind, model, message, expect in (
                ("plain", PLAIN_MODEL, "hi", "hi"),
                ("tool", TOOL_MODEL, "what time is it?", TOOL_REPLY),
            ):
                provider = timed[model]
                # warm-up in its own session, so the measured conversation starts empty
                warm_key = gateway.sessions.resolve_key(f"bench-warm-{kind}")
                key = gateway.sessions.resolve_key(f"bench-{kind}")
                stats = TurnStats()
                for i in range(warmup + turns):
                    req = RunRequest(
                        run_id=f"{kind}-{i}-{uuid.uuid4().hex[:8]}",
                        session_key=warm_key if i < warmup else key,
                        message=message,
                        model=model,
                    )
                    if profiler is not None and i == warmup:
                        profiler.enable()
                    calls0, fsync0 = meter.snapshot()
                    model0 = provider.seconds
                    t0 = time.perf_counter()
                    async with asyncio.timeout(TURN_TIMEOUT_S):
                        outcome = await gateway.runtime.run(req)
                    elapsed = time.perf_counter() - t0
                    calls1, fsync1 = meter.snapshot()
                    if outcome.status != "ok" or outcome.text != expect:
                        raise RuntimeError(f"{kind} turn {i}: {outcome.status} {outcome.text!r} {outcome.error}")
                    if i >= warmup:
                        stats.total_s.append(elapsed)
                        stats.fsync_s.append(fsync1 - fsync0)
                        stats.fsync_calls.append(calls1 - calls0)
                        stats.model_s.append(provider.seconds - model0)
                if profiler is not None:
                    profiler.disable()
                out[kind] = stats.to_json()
    finally:
        gateway.journal.close()
    return out


def measure_inprocess(
    where: Path | None, turns: int, warmup: int, profiler: cProfile.Profile | None = None
) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="homarus-agent-bench-", dir=where))
    try:
        state = root / "state"
        state.mkdir(mode=0o700)
        config = scripted_config(warmup + turns)
        (state / "homarus.json").write_text(json.dumps(config), encoding="utf-8")
        result = asyncio.run(_inprocess(state, turns, warmup, profiler))
        result["dir"] = str(root.parent)
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- 2. end to end ----------------------------------------------------------------------------
async def _e2e_client(gw: GatewayProcess, turns: int, warmup: int) -> dict[str, Any]:
    ws = await open_session(gw.url, TOKEN)
    out: dict[str, Any] = {}
    try:
        kinds: list[tuple[str, str, str | None, str]] = [
            ("tool", "what time is it?", TOOL_MODEL, TOOL_REPLY),
            ("plain", "hi", None, "hi"),  # the configured default model
        ]
        for kind, message, model, expect in kinds:
            accepted: list[float] = []
            final: list[float] = []
            frames = 0
            cpu0 = 0.0
            for i in range(warmup + turns):
                if i == warmup:
                    cpu0 = gw.cpu_seconds()
                timing = await agent_turn(ws, agent_params(message, f"bench-{kind}", model))
                if timing.payload.get("status") != "ok" or final_text(timing.payload) != expect:
                    raise RuntimeError(f"{kind} turn {i}: unexpected final payload {timing.payload!r}")
                if i >= warmup:
                    accepted.append(timing.accepted_s)
                    final.append(timing.final_s)
                    frames += timing.frames
            out[kind] = {
                "frames_per_turn": frames / turns,
                "final_ms": ms_summary(final),
                "tenths_ms": tenths_ms(final),
                "accepted_ms": ms_summary(accepted),
                "server_cpu_ms_per_turn": (gw.cpu_seconds() - cpu0) / turns * 1000,
            }
        chat: list[float] = []
        frames = 0
        cpu0 = 0.0
        for i in range(warmup + turns):
            if i == warmup:
                cpu0 = gw.cpu_seconds()
            elapsed, text, n = await chat_turn(ws, "bench-chat", "hi")
            if text != "hi":
                raise RuntimeError(f"chat turn {i}: unexpected final text {text!r}")
            if i >= warmup:
                chat.append(elapsed)
                frames += n
        out["chat"] = {
            "frames_per_turn": frames / turns,
            "final_ms": ms_summary(chat),
            "tenths_ms": tenths_ms(chat),
            "server_cpu_ms_per_turn": (gw.cpu_seconds() - cpu0) / turns * 1000,
        }
    finally:
        await ws.close()
    return out


def measure_e2e(where: Path | None, turns: int, warmup: int) -> dict[str, Any]:
    gw = gateway_with_config(scripted_config(warmup + turns), where)
    try:
        gw.start()
        gw.wait_healthy()
        result = asyncio.run(_e2e_client(gw, turns, warmup))
        result["dir"] = str(gw.workdir.parent)
        result["rss_after_mib"] = gw.rss_mib()
        return result
    finally:
        gw.cleanup()


# -- 3. first turn after start ----------------------------------------------------------------
async def _first_turn(gw: GatewayProcess) -> dict[str, float]:
    t0 = time.perf_counter()
    ws = await open_session(gw.url, TOKEN)
    try:
        connected = time.perf_counter() - t0
        timing = await agent_turn(ws, agent_params("hi", "bench-first"))
        done = time.perf_counter()
        if timing.payload.get("status") != "ok" or final_text(timing.payload) != "hi":
            raise RuntimeError(f"first turn: unexpected final payload {timing.payload!r}")
        second = await agent_turn(ws, agent_params("hi again", "bench-first"))
    finally:
        await ws.close()
    return {
        "connect_s": connected,
        "turn_s": timing.final_s,
        "accepted_s": timing.accepted_s,
        "spawn_to_final_s": done - gw.spawned_at,
        "second_turn_s": second.final_s,
    }


def measure_first_turns(starts: int) -> dict[str, Any]:
    rows: list[dict[str, float]] = []
    for _ in range(starts):
        gw = gateway_with_config(scripted_config(0))
        try:
            gw.start()
            health = gw.wait_healthy()
            row = asyncio.run(_first_turn(gw))
            row["health_s"] = health
            rows.append(row)
        finally:
            gw.cleanup()
    return {k: summarize([r[k] for r in rows]) for k in rows[0]}


# -- 4. model request size, turns over HTTP ---------------------------------------------------
async def _http_client(gw: GatewayProcess, llm: LoopbackModel, turns: int, warmup: int) -> dict[str, Any]:
    ws = await open_session(gw.url, TOKEN)
    out: dict[str, Any] = {}
    try:
        first = await agent_turn(ws, agent_params("hi", "bench-bytes"))
        if first.payload.get("status") != "ok" or final_text(first.payload) != "Hello!":
            raise RuntimeError(f"HTTP model turn failed: {first.payload!r}")
        bodies = llm.requests()
        out["hi_request"] = describe_request(bodies[0])
        out["hi_requests"] = len(bodies)
        kinds = (("tool", f"what time is it? {HTTP_TOOL_MARK}", TOOL_REPLY, 2), ("plain", "hi", "Hello!", 1))
        for kind, message, expect, requests_per_turn in kinds:
            final: list[float] = []
            n0 = len(llm.requests())
            for i in range(warmup + turns):
                timing = await agent_turn(ws, agent_params(message, f"bench-http-{kind}"))
                if timing.payload.get("status") != "ok" or final_text(timing.payload) != expect:
                    raise RuntimeError(f"HTTP {kind} turn {i}: unexpected final payload {timing.payload!r}")
                if i >= warmup:
                    final.append(timing.final_s)
            sizes = [len(b) for b in llm.requests()[n0:]]
            if len(sizes) != (warmup + turns) * requests_per_turn:
                raise RuntimeError(f"HTTP {kind}: {len(sizes)} model requests for {warmup + turns} turns")
            out[kind] = {"final_ms": ms_summary(final), "tenths_ms": tenths_ms(final), "request_bytes_max": max(sizes)}
    finally:
        await ws.close()
    return out


def measure_http_model(turns: int, warmup: int) -> dict[str, Any]:
    llm = LoopbackModel()
    try:
        llm.start()
        gw = gateway_with_config(http_config(llm.base_url))
        try:
            gw.start()
            gw.wait_healthy()
            return asyncio.run(_http_client(gw, llm, turns, warmup))
        finally:
            gw.cleanup()
    finally:
        llm.stop()


# -- run and report ---------------------------------------------------------------------------
@contextlib.contextmanager
def other_cpu(out: dict[str, float], phase: str) -> Iterator[None]:
    """Store in ``out[phase]`` the cores the rest of the machine used while the block ran.

    Machine busy CPU minus this process (all its threads) minus reaped children (the gateways,
    which are all stopped and waited for by the end of each phase).
    """
    machine0 = machine_cpu_seconds()[0]
    own0 = time.process_time()
    t = os.times()
    children0 = t.children_user + t.children_system
    wall0 = time.perf_counter()
    try:
        yield
    finally:
        wall = time.perf_counter() - wall0
        t = os.times()
        used = machine_cpu_seconds()[0] - machine0 - (time.process_time() - own0)
        used -= t.children_user + t.children_system - children0
        out[phase] = max(0.0, used) / wall if wall > 0 else 0.0


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine_facts(),
        "loadavg_before": os.getloadavg(),
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "json"},
    }
    dirs: list[tuple[str, Path | None]] = [("disk", None)]
    if args.tmpfs and TMPFS.is_dir() and os.access(TMPFS, os.W_OK):
        dirs.append(("tmpfs", TMPFS))
    out["tmpdir"] = tempfile.gettempdir()
    out["inprocess"] = {}
    out["e2e"] = {}
    other: dict[str, float] = {}
    out["other_cpu_cores"] = other
    for name, where in dirs:
        progress(
            "in-process turns, state on %s: %d plain, %d one-tool (+%d warm-up)",
            name,
            args.turns,
            args.turns,
            args.warmup,
        )
        with other_cpu(other, f"inprocess-{name}"):
            out["inprocess"][name] = measure_inprocess(where, args.turns, args.warmup)
    for name, where in dirs:
        progress("end-to-end turns, state on %s: %d each of tool / plain / chat.send", name, args.turns)
        with other_cpu(other, f"e2e-{name}"):
            out["e2e"][name] = measure_e2e(where, args.turns, args.warmup)
    progress("first turn after start: %d fresh gateways", args.starts)
    with other_cpu(other, "first"):
        out["first"] = measure_first_turns(args.starts)
    progress("model request size and turns over HTTP: %d tool / plain turns", args.http_turns)
    with other_cpu(other, "http"):
        out["http"] = measure_http_model(args.http_turns, min(args.warmup, 5))
    out["loadavg_after"] = os.getloadavg()
    if args.profile is not None:
        where = dirs[-1][1]
        progress("profile: in-process turns on %s under cProfile (to_thread inlined) -> %s", dirs[-1][0], args.profile)
        profiler = cProfile.Profile()
        measure_inprocess(where, args.turns, args.warmup, profiler)
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("cumulative").print_stats(60)
        stats.sort_stats("tottime").print_stats(40)
        args.profile.write_text(text.getvalue(), encoding="utf-8")
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--turns", type=int, default=100, help="measured turns per kind and phase (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="warm-up turns per kind, not counted (default 10)")
    p.add_argument("--starts", type=int, default=5, help="fresh gateways for the first-turn latency (default 5)")
    p.add_argument("--http-turns", type=int, default=20, help="turns per kind over HTTP (default 20)")
    p.add_argument("--no-tmpfs", dest="tmpfs", action="store_false", help="skip the runs with the state on /dev/shm")
    p.add_argument("--json", type=Path, help="also write all results as JSON to this file")
    p.add_argument(
        "--profile",
        type=Path,
        help="afterwards, profile the in-process turns (tmpfs if available) with cProfile; write the stats here",
    )
    args = p.parse_args(argv)
    for name in ("turns", "starts", "http_turns"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.warmup < 0:
        p.error("--warmup must be >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args, run_bench, render)


if __name__ == "__main__":
    sys.exit(main())
