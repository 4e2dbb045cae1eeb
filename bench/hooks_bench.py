"""Hook runner benchmark: dispatch overhead per handler, the no-handler fast path, a turn with 10 plugins.

Run with ``.venv/bin/python bench/hooks_bench.py [--rounds N] [--turns N] [--json out.json]`` (or
``make bench``). Nothing leaves the process: the turn phase uses the gateway's composition root
(``build_gateway``) in a fresh temp state dir (on tmpfs when ``/dev/shm`` is writable, else in
``$TMPDIR``) with the default scripted model, and removes it afterwards.

Phases:

1. **dispatch**: a ``HookRunner`` with 1, 10 and 100 handlers on a void hook (``message_received``,
   async no-op handlers) and on a modifying hook (``agent_turn_prepare``, sync handlers returning a
   dict that is validated and merged). Each round times enough dispatches for about 4,000 handler
   calls; the row is the median over the rounds of (round time / handler calls), in µs.
2. **no handlers**: ``has()`` (what every call site checks before it builds an event), and
   ``void()`` / ``modify()`` called anyway on a hook nobody registered.
3. **turn**: ``await gateway.runtime.run(RunRequest(...))`` for N turns each with 0, 1 and 10
   plugins, where a plugin registers a no-op handler on every hook of the run path (async for
   void/mod/gate/claim hooks, sync for the sync hooks). The three configurations alternate turn by
   turn, each in its own session (the sessions grow alike; a fresh set every 50 turns). Void hooks
   run in background tasks, so a turn is timed until those have finished too ("turn + background");
   ``run()`` alone is reported as well. CPU is ``time.process_time`` (the whole process, threads
   included). 1 plugin vs 10 separates the fixed cost of a hook having listeners (building its
   event, e.g. ``llm_input``'s history as JSON) from the cost per handler call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # after the sys.path line above
    bench_main,
    machine_cpu_seconds,
    machine_facts,
    machine_footer,
    markdown_table,
    progress,
    verdict,
)
from homarus.agents.runtime import RunRequest
from homarus.config.paths import StatePaths
from homarus.gateway.app import Gateway, GatewayOptions
from homarus.gateway.server import build_gateway
from homarus.plugins import events as ev
from homarus.plugins.hookspecs import HOOKS
from homarus.plugins.runner import HookRegistration, HookRunner

TARGET_US_PER_HANDLER = 10.0
HANDLER_COUNTS = (1, 10, 100)
CALLS_PER_ROUND = 4000  # handler calls per timed round
TMPFS = Path("/dev/shm")  # noqa: S108 - a fresh mkdtemp dir inside it, removed after use
TURN_TIMEOUT_S = 30.0
SESSION_TURNS = 50  # turns per session before the pair of sessions is replaced
PLUGINS = 10
TURN_PLUGINS = (0, 1, PLUGINS)  # plugins per configuration in the turn phase

#: hooks a turn can meet, in pipeline order (tool hooks only fire on tool turns)
RUN_PATH = (
    "message_received",
    "session_start",
    "before_model_resolve",
    "agent_turn_prepare",
    "before_prompt_build",
    "before_agent_start",
    "before_agent_run",
    "before_agent_reply",
    "model_call_started",
    "llm_input",
    "llm_output",
    "model_call_ended",
    "before_tool_call",
    "after_tool_call",
    "tool_result_persist",
    "before_message_write",
    "before_agent_finalize",
    "agent_end",
    "message_sending",
    "message_sent",
)


# -- handlers -----------------------------------------------------------------------------------------
async def async_noop(event: Any, ctx: ev.HookContext) -> None:
    return None


def sync_noop(event: Any, ctx: ev.HookContext) -> None:
    return None


def sync_dict(event: Any, ctx: ev.HookContext) -> dict[str, Any]:
    return {"append_context": "x"}


# -- 1 and 2: dispatch ------------------------------------------------------------------------------------
async def time_rounds(
    call: Callable[[], Awaitable[Any]], calls_per_round: int, rounds: int, cpu: list[float] | None = None
) -> list[float]:
    """Wall seconds per ``call()`` for each round (one untimed warm-up round first); CPU seconds into ``cpu``."""
    samples: list[float] = []
    for r in range(rounds + 1):
        c0 = time.process_time()
        t0 = time.perf_counter()
        for _ in range(calls_per_round):
            await call()
        if r:
            samples.append((time.perf_counter() - t0) / calls_per_round)
            if cpu is not None:
                cpu.append((time.process_time() - c0) / calls_per_round)
    return samples


def per_handler(wall: list[float], cpu: list[float], hook: str, n: int) -> dict[str, Any]:
    us = [s / n * 1e6 for s in wall]
    cpu_us = [s / n * 1e6 for s in cpu]
    return {
        "hook": hook,
        "handlers": n,
        "us_per_handler": us,
        "median": statistics.median(us),
        "cpu_median": statistics.median(cpu_us),
    }


def bind(dispatch: Callable[[HookRunner], Awaitable[Any]], runner: HookRunner) -> Callable[[], Awaitable[Any]]:
    return lambda: dispatch(runner)


def runner_with(hook: str, handler: Callable[..., Any], n: int) -> HookRunner:
    runner = HookRunner()
    for i in range(n):
        runner.add(HookRegistration(f"plugin-{i}", hook, handler, priority=i % 3))
    return runner


async def measure_dispatch(rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    received = ev.MessageReceivedEvent("hi", session_key="agent:main:main")
    prepare = ev.AgentTurnPrepareEvent("hi", [{"role": "user", "content": "earlier"}])
    cases: list[tuple[str, str, Callable[..., Any], Callable[[HookRunner], Awaitable[Any]]]] = [
        ("void", "message_received", async_noop, lambda r: r.void("message_received", received)),
        ("mod", "agent_turn_prepare", sync_dict, lambda r: r.modify("agent_turn_prepare", prepare)),
    ]
    for kind, hook, handler, dispatch in cases:
        for n in HANDLER_COUNTS:
            runner = runner_with(hook, handler, n)
            cpu: list[float] = []
            wall = await time_rounds(bind(dispatch, runner), max(1, CALLS_PER_ROUND // n), rounds, cpu)
            out[f"{kind}_{n}"] = per_handler(wall, cpu, hook, n)
    # extra context: the per-tool-call gate (async handlers under its 15 s default timeout)
    runner = runner_with("before_tool_call", async_noop, 10)
    tool = ev.BeforeToolCallEvent("exec", {"cmd": "ls"})
    cpu = []
    wall = await time_rounds(
        lambda: runner.modify("before_tool_call", tool, tool_name="exec"), CALLS_PER_ROUND // 10, rounds, cpu
    )
    out["gate_10"] = per_handler(wall, cpu, "before_tool_call", 10)
    return out


async def measure_empty(rounds: int) -> dict[str, float]:
    runner = HookRunner()
    runner.add(HookRegistration("other", "agent_end", async_noop))  # a runner that is not entirely empty
    n = 100_000
    has_s: list[float] = []
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        for _ in range(n):
            runner.has("message_received")
        if r:
            has_s.append((time.perf_counter() - t0) / n)
    event = ev.MessageReceivedEvent("hi")
    void_s = await time_rounds(lambda: runner.void("message_received", event), 20_000, rounds)
    prep = ev.AgentTurnPrepareEvent("hi")
    modify_s = await time_rounds(lambda: runner.modify("agent_turn_prepare", prep), 20_000, rounds)
    return {
        "has_ns": statistics.median(has_s) * 1e9,
        "void_us": statistics.median(void_s) * 1e6,
        "modify_us": statistics.median(modify_s) * 1e6,
    }


# -- 3: turns ----------------------------------------------------------------------------------------------
def install_plugins(runner: HookRunner, n: int) -> None:
    for i in range(n):
        for hook in RUN_PATH:
            handler = sync_noop if HOOKS[hook].kind == "sync" else async_noop
            runner.add(HookRegistration(f"bench-plugin-{i}", hook, handler, plugin_config={"n": i}))


def remove_plugins(runner: HookRunner, n: int) -> None:
    for i in range(n):
        runner.remove_plugin(f"bench-plugin-{i}")


async def drain_background() -> None:
    """Wait for every other task (the void hooks a turn fired in the background)."""
    pending = asyncio.all_tasks() - {asyncio.current_task()}
    if pending:
        await asyncio.wait(pending, timeout=TURN_TIMEOUT_S)


async def one_turn(gateway: Gateway, session: str, turn: int) -> tuple[float, float, float, str]:
    req = RunRequest(
        run_id=f"hooks-bench-{turn}-{uuid.uuid4().hex[:8]}",
        session_key=gateway.sessions.resolve_key(session),
        message=f"hi {turn % 7}",
    )
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    async with asyncio.timeout(TURN_TIMEOUT_S):
        outcome = await gateway.runtime.run(req)
    run_s = time.perf_counter() - t0
    await drain_background()
    total_s = time.perf_counter() - t0
    cpu_s = time.process_time() - cpu0
    if outcome.status != "ok":
        raise RuntimeError(f"turn {turn} in {session}: {outcome.status} {outcome.error}")
    return run_s, total_s, cpu_s, outcome.text


async def _turns(state: Path, turns: int, warmup: int) -> dict[str, Any]:
    paths = StatePaths(state_dir=state, config_path=state / "homarus.json")
    gateway = build_gateway(paths, GatewayOptions())
    runner = gateway.hooks
    samples: dict[int, dict[str, list[float]]] = {n: {"run": [], "total": [], "cpu": []} for n in TURN_PLUGINS}
    calls: dict[int, int] = dict.fromkeys(TURN_PLUGINS, 0)
    try:
        for i in range(warmup + turns):
            pair = i // SESSION_TURNS
            texts: set[str] = set()
            for n in TURN_PLUGINS:  # the configurations alternate turn by turn, each in its own session
                install_plugins(runner, n)
                calls0 = sum(runner.calls.values())
                sample = await one_turn(gateway, f"hooks-bench-{n}-plugins-{pair}", i)
                calls_this_turn = sum(runner.calls.values()) - calls0
                remove_plugins(runner, n)
                texts.add(sample[3])
                if i >= warmup:
                    calls[n] += calls_this_turn
                    for name, value in zip(("run", "total", "cpu"), sample[:3], strict=True):
                        samples[n][name].append(value)
            if len(texts) != 1:
                raise RuntimeError(f"no-op plugins changed the reply: {sorted(texts)!r}")
    finally:
        gateway.journal.close()
    out: dict[str, Any] = {"turns": turns}
    for n, s in samples.items():
        out[str(n)] = {
            name: {"median_ms": statistics.median(v) * 1000, "mean_ms": statistics.fmean(v) * 1000}
            for name, v in s.items()
        }
        out[str(n)]["handler_calls_per_turn"] = calls[n] / turns
    return out


def measure_turns(turns: int, warmup: int, use_tmpfs: bool) -> dict[str, Any]:
    where = TMPFS if use_tmpfs and TMPFS.is_dir() and os.access(TMPFS, os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="homarus-hooks-bench-", dir=where))
    try:
        state = root / "state"
        state.mkdir(mode=0o700)
        result = asyncio.run(_turns(state, turns, warmup))
        result["dir"] = "tmpfs (/dev/shm)" if where is not None else f"disk ({tempfile.gettempdir()})"
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


class OtherCpu:
    """Cores the rest of the machine used while the block ran (machine busy CPU minus this process's)."""

    def __enter__(self) -> OtherCpu:
        self.busy0, self.own0, self.t0 = machine_cpu_seconds()[0], time.process_time(), time.perf_counter()
        self.cores = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        busy = machine_cpu_seconds()[0] - self.busy0
        own = time.process_time() - self.own0
        self.cores = max(0.0, busy - own) / (time.perf_counter() - self.t0)


# -- run and report ---------------------------------------------------------------------------------------------
def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine_facts(),
        "loadavg_before": os.getloadavg(),
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "json"},
    }
    progress(
        "dispatch: void and mod hooks with %s handlers, %d rounds", "/".join(map(str, HANDLER_COUNTS)), args.rounds
    )
    with OtherCpu() as other:
        out["dispatch"] = asyncio.run(measure_dispatch(args.rounds))
        progress("no handlers: has(), void(), modify()")
        out["empty"] = asyncio.run(measure_empty(args.rounds))
    out["other_cores_dispatch"] = other.cores
    progress(
        "turns: %d each with %s plugins (+%d warm-up each)", args.turns, "/".join(map(str, TURN_PLUGINS)), args.warmup
    )
    with OtherCpu() as other:
        out["turn"] = measure_turns(args.turns, args.warmup, args.tmpfs)
    out["other_cores_turns"] = other.cores
    out["loadavg_after"] = os.getloadavg()
    return out


def render(r: dict[str, Any]) -> str:
    rows: list[tuple[str, str, str, str]] = []
    d = r["dispatch"]
    labels = {
        "void": "void hook (`message_received`), async no-op handlers",
        "mod": "modifying hook (`agent_turn_prepare`), sync handlers returning a dict",
    }
    for kind in ("void", "mod"):
        for n in HANDLER_COUNTS:
            row = d[f"{kind}_{n}"]
            us = row["us_per_handler"]
            rows.append(
                (
                    f"{labels[kind]}: {n} handler{'s' if n > 1 else ''}, µs per handler: wall median of {len(us)}"
                    " rounds (min / max); CPU median",
                    f"{row['median']:.2f} ({min(us):.2f} / {max(us):.2f}); CPU {row['cpu_median']:.2f}",
                    f"≤ {TARGET_US_PER_HANDLER:.0f} µs",
                    verdict(row["median"] <= TARGET_US_PER_HANDLER),
                )
            )
    g = d["gate_10"]
    rows.append(
        (
            "gate (`before_tool_call`, 15 s default timeout), 10 async no-op handlers, µs per handler (as above)",
            f"{g['median']:.2f} ({min(g['us_per_handler']):.2f} / {max(g['us_per_handler']):.2f});"
            f" CPU {g['cpu_median']:.2f}",
            "—",
            "—",
        )
    )
    e = r["empty"]
    rows.append(("no handlers: `has(hook)` (the call sites' fast path)", f"{e['has_ns']:.0f} ns", "—", "—"))
    rows.append(
        (
            "no handlers: `await void(...)` / `await modify(...)` called anyway",
            f"{e['void_us']:.2f} / {e['modify_us']:.2f} µs",
            "—",
            "—",
        )
    )
    t = r["turn"]
    base, one, ten = t["0"], t["1"], t[str(PLUGINS)]
    for name, label in (("total", "turn + background hook tasks"), ("run", "`runtime.run()` alone"), ("cpu", "CPU")):
        d1 = one[name]["median_ms"] - base[name]["median_ms"]
        d10 = ten[name]["median_ms"] - base[name]["median_ms"]
        rows.append(
            (
                f"{label}: 0 → 1 → {PLUGINS} plugins, median of {t['turns']} turns each (state on {t['dir']})",
                f"{base[name]['median_ms']:.3f} → {one[name]['median_ms']:.3f} → {ten[name]['median_ms']:.3f} ms"
                f" (+{d1:.3f} / **+{d10:.3f} ms per turn**; means +{one[name]['mean_ms'] - base[name]['mean_ms']:.3f}"
                f" / +{ten[name]['mean_ms'] - base[name]['mean_ms']:.3f})",
                "—",
                "—",
            )
        )
    calls1, calls10 = one["handler_calls_per_turn"], ten["handler_calls_per_turn"]
    d1_us = (one["total"]["median_ms"] - base["total"]["median_ms"]) * 1000
    d10_us = (ten["total"]["median_ms"] - base["total"]["median_ms"]) * 1000
    marginal = (d10_us - d1_us) / (calls10 - calls1) if calls10 > calls1 else float("nan")
    rows.append(
        (
            f"  handler calls per turn (1 / {PLUGINS} plugins); added time per call with {PLUGINS} plugins;"
            f" marginal time per call from 1 to {PLUGINS} plugins (turn + background)",
            f"{calls1:.0f} / {calls10:.0f}; {d10_us / calls10:.1f} µs; {marginal:.1f} µs",
            "—",
            "—",
        )
    )
    rows.append(
        (
            "other processes' CPU during the dispatch / turn phases",
            f"{r['other_cores_dispatch']:.2f} / {r['other_cores_turns']:.2f} cores",
            "—",
            "—",
        )
    )
    return "\n".join(markdown_table(("metric", "Homarus", "target", "result"), rows) + machine_footer(r))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--rounds", type=int, default=9, help="timed rounds per dispatch case (default 9)")
    p.add_argument("--turns", type=int, default=200, help="measured turns per configuration (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="warm-up turns of each kind, not counted (default 20)")
    p.add_argument("--no-tmpfs", dest="tmpfs", action="store_false", help="keep the turn phase's state dir in $TMPDIR")
    p.add_argument("--json", type=Path, help="also write all results as JSON to this file")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.turns < 1 or args.warmup < 0:
        p.error("--rounds and --turns must be >= 1, --warmup >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args, run_bench, render)


if __name__ == "__main__":
    sys.exit(main())
