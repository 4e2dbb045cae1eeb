"""`POST /tools/invoke` benchmark: throughput, latency and server CPU; tool-policy evaluation alone.

Run with ``.venv/bin/python bench/tools_invoke_bench.py [--total N] [--concurrency N] [--json out.json]``
(``make bench`` runs it with defaults). One gateway (``homarus gateway run --port <free> --token T``,
fresh ``HOMARUS_STATE_DIR``, stopped and removed at the end whatever happens, via
:class:`bench.gateway_bench.GatewayProcess`) serves two cases:

* an allowed, cheap tool: ``current_time`` (200);
* a denied tool: ``exec`` (404: not registered, and on the HTTP deny list anyway).

Each case is loaded by ``--concurrency`` keep-alive connections with one request in flight each
(the OpenClaw measurement's method: 8 concurrent), bounded by ``--total`` requests and
``--max-seconds``, by two clients:

* ``httpx``: one ``httpx.AsyncClient`` in this process (what the OpenClaw numbers used);
* ``raw``: pre-built HTTP/1.1 request bytes over asyncio streams, in ``--procs`` worker processes,
  so the client's own CPU cost disturbs the server less (truer server numbers on 2 cores).

Server CPU per request is the gateway process's psutil ``cpu_times`` delta / requests. The second
part times :meth:`homarus.security.tool_policy.ToolPolicy.verdicts` in-process: cold (a new
``ToolPolicy`` per call, as a config change does) and cached, plus the request path's
``set(allowed(...))``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # after the sys.path line above
    HOST,
    TOKEN,
    GatewayProcess,
    bench_main,
    machine_cpu_seconds,
    machine_facts,
    machine_footer,
    markdown_table,
    percentile,
    progress,
    verdict,
)
from homarus.security.tool_policy import LayerSpec, PolicyInputs, ToolPolicy

TARGET_RPS = 1500.0
# /work/shared/peers/openclaw/README.md, "Measured numbers" (2026-11-22, same kind of 2-core VM):
# httpx x2000 @8 on sessions_list: 61 / 61 / 73 req/s (p50 130 / 130 / 108 ms, 12.6 ms CPU/req);
# wrk 5 s @8: 91 / 78 / 88 req/s; "about 12-15 ms of server CPU per call even for a non-existent tool".
OPENCLAW = {"rps": "61-91 req/s", "p50": "108-130 ms", "cpu": "12-15 ms"}

CASES: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("current_time", {"tool": "current_time", "args": {}}, 200),
    ("exec", {"tool": "exec", "args": {"command": "id"}}, 404),
)
#: the gateway's core tools plus the ones issues add (the policy sees every registered name)
TOOL_NAMES = (
    "sessions_list",
    "sessions_history",
    "read",
    "write",
    "edit",
    "apply_patch",
    "current_time",
    "session_status",
    "web_fetch",
    "web_search",
    "exec",
    "process",
)


# -- clients ---------------------------------------------------------------------------------------
def request_bytes(port: int, body: bytes) -> bytes:
    head = (
        f"POST /tools/invoke HTTP/1.1\r\nHost: {HOST}:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _raw_conn(port: int, req: bytes, quota: int, deadline: float, expect: int) -> tuple[list[float], int]:
    """One keep-alive connection, one request in flight: (latencies in ms, unexpected responses)."""
    reader, writer = await asyncio.open_connection(HOST, port)
    lat: list[float] = []
    errors = 0
    try:
        for _ in range(quota):
            if time.monotonic() > deadline:
                break
            t0 = time.perf_counter_ns()
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            lat.append((time.perf_counter_ns() - t0) / 1e6)
            if int(head[9:12]) != expect:
                errors += 1
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return lat, errors


async def _httpx_load(port: int, body: bytes, conns: int, total: int, deadline: float, expect: int) -> Any:
    limits = httpx.Limits(max_connections=conns, max_keepalive_connections=conns)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}", limits=limits, headers=headers) as client:

        async def worker(quota: int) -> tuple[list[float], int]:
            lat: list[float] = []
            errors = 0
            for _ in range(quota):
                if time.monotonic() > deadline:
                    break
                t0 = time.perf_counter_ns()
                response = await client.post("/tools/invoke", content=body)
                lat.append((time.perf_counter_ns() - t0) / 1e6)
                errors += response.status_code != expect
            return lat, errors

        return await asyncio.gather(*(worker(q) for q in split(total, conns)))


def split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _raw_worker(port: int, req: bytes, conns: int, total: int, max_s: float, expect: int, barrier: Any, q: Any) -> None:
    async def main() -> list[tuple[list[float], int]]:
        barrier.wait(60)
        started = time.monotonic()
        results = await asyncio.gather(
            *(_raw_conn(port, req, quota, started + max_s, expect) for quota in split(total, conns))
        )
        q.put(("timing", (started, time.monotonic(), time.process_time())))
        return list(results)

    try:
        cpu0 = time.process_time()
        results = asyncio.run(main())
        q.put(("ok", ([x for lat, _ in results for x in lat], sum(e for _, e in results), time.process_time() - cpu0)))
    except BaseException as exc:
        with contextlib.suppress(Exception):
            barrier.abort()
        q.put(("error", f"{type(exc).__name__}: {exc}"))


def load_raw(gw: GatewayProcess, body: bytes, args: argparse.Namespace, expect: int) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(args.procs + 1)
    q = ctx.Queue()
    req = request_bytes(gw.port, body)
    conns = split(args.concurrency, args.procs)
    totals = split(args.total, args.procs)
    workers = [
        ctx.Process(target=_raw_worker, args=(gw.port, req, c, t, args.max_seconds, expect, barrier, q), daemon=True)
        for c, t in zip(conns, totals, strict=True)
    ]
    lat: list[float] = []
    errors = 0
    client_cpu = 0.0
    spans: list[tuple[float, float]] = []
    try:
        for w in workers:
            w.start()
        barrier.wait(60)
        machine0, cpu0 = machine_cpu_seconds(), gw.cpu_seconds()
        for _ in range(2 * len(workers)):
            kind, value = q.get(timeout=args.max_seconds + 60)
            if kind == "error":
                raise RuntimeError(f"load worker failed: {value}")
            if kind == "timing":
                spans.append((value[0], value[1]))
            else:
                lat.extend(value[0])
                errors += value[1]
                client_cpu += value[2]
        server_cpu, machine1 = gw.cpu_seconds() - cpu0, machine_cpu_seconds()
    finally:
        for w in workers:
            w.join(timeout=10)
            if w.is_alive():
                w.kill()
                w.join(timeout=5)
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    return summary(f"raw, {args.procs} client processes", lat, errors, wall, server_cpu, client_cpu, machine0, machine1)


def load_httpx(gw: GatewayProcess, body: bytes, args: argparse.Namespace, expect: int) -> dict[str, Any]:
    machine0, cpu0, own0 = machine_cpu_seconds(), gw.cpu_seconds(), time.process_time()
    started = time.monotonic()
    results = asyncio.run(_httpx_load(gw.port, body, args.concurrency, args.total, started + args.max_seconds, expect))
    wall = time.monotonic() - started
    server_cpu, machine1 = gw.cpu_seconds() - cpu0, machine_cpu_seconds()
    lat = [x for r, _ in results for x in r]
    errors = sum(e for _, e in results)
    return summary(
        "httpx, 1 client process", lat, errors, wall, server_cpu, time.process_time() - own0, machine0, machine1
    )


def summary(
    client: str,
    lat: list[float],
    errors: int,
    wall: float,
    server_cpu: float,
    client_cpu: float,
    machine0: tuple[float, float],
    machine1: tuple[float, float],
) -> dict[str, Any]:
    n = len(lat)
    other = max(0.0, machine1[0] - machine0[0] - server_cpu - client_cpu)
    return {
        "client": client,
        "requests": n,
        "errors": errors,
        "wall_s": wall,
        "rps": n / wall if wall > 0 else math.nan,
        "p50_ms": percentile(lat, 50),
        "p95_ms": percentile(lat, 95),
        "server_cpu_ms_per_req": server_cpu / n * 1000 if n else math.nan,
        "server_ceiling_rps": n / server_cpu if server_cpu > 0 else math.nan,
        "client_cpu_ms_per_req": client_cpu / n * 1000 if n else math.nan,
        "other_cpu_cores": other / wall if wall > 0 else math.nan,
    }


# -- policy evaluation in-process ------------------------------------------------------------------
def policy_configs() -> dict[str, PolicyInputs]:
    layered = PolicyInputs(
        layers=(LayerSpec("tools", profile="coding", deny=("write",), also_allow=("web_*",)),),
        by_provider={"openai": LayerSpec("tools.byProvider.openai", deny=("apply_patch",))},
        agent_layers={"main": (LayerSpec("agents.main.tools", deny=("process",)),)},
        http_deny=("web_fetch",),
    )
    return {"default config (no layers)": PolicyInputs(), "3 layers (profile, provider, agent)": layered}


def _per_call_us(fn: Callable[[], object], n: int, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter_ns() - t0) / n / 1000)
    return statistics.median(samples)


def time_policy(n: int, rounds: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for label, inputs in policy_configs().items():
        out[label] = _time_one_policy(inputs, n, rounds)
    return out


def _time_one_policy(inputs: PolicyInputs, n: int, rounds: int) -> dict[str, float]:
    kw: dict[str, Any] = {"agent_id": "main", "provider": "openai", "model": "gpt-x", "http": True}
    warm = ToolPolicy(inputs, TOOL_NAMES)
    warm.verdicts(TOOL_NAMES, **kw)

    def cold() -> object:
        return ToolPolicy(inputs, TOOL_NAMES).verdicts(TOOL_NAMES, **kw)

    def cached() -> object:
        return warm.verdicts(TOOL_NAMES, **kw)

    def request_path() -> object:  # what Gateway.tool_names_for does per request
        return set(warm.allowed(sorted(TOOL_NAMES), **kw))

    return {
        "cold_us": _per_call_us(cold, n, rounds),
        "cached_us": _per_call_us(cached, n * 10, rounds),
        "request_path_us": _per_call_us(request_path, n * 10, rounds),
    }


# -- run and report --------------------------------------------------------------------------------
def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine_facts(),
        "loadavg_before": os.getloadavg(),
        "config": {k: v for k, v in vars(args).items() if k != "json"},
        "loads": [],
    }
    gw = GatewayProcess()
    try:
        gw.start()
        gw.wait_healthy()
        for name, payload, expect in CASES:
            body = json.dumps(payload).encode()
            progress("warm-up %s: %d requests", name, args.warmup)
            asyncio.run(_httpx_load(gw.port, body, args.concurrency, args.warmup, time.monotonic() + 30, expect))
            for load in (load_httpx, load_raw):
                if load is load_raw and args.procs == 0:
                    continue
                progress("%s: %s, %d requests, %d concurrent", name, load.__name__, args.total, args.concurrency)
                result = load(gw, body, args, expect)
                out["loads"].append({"tool": name, "status": expect, **result})
        out["gateway_rss_mib"] = gw.rss_mib()
    finally:
        gw.cleanup()
    progress("policy evaluation in-process")
    out["policy"] = time_policy(args.policy_calls, 7)
    out["loadavg_after"] = os.getloadavg()
    return out


def render(r: dict[str, Any]) -> str:
    rows: list[tuple[str, ...]] = []
    for load in r["loads"]:
        what = f"`{load['tool']}` ({load['status']}), {r['config']['concurrency']} concurrent, {load['client']}"
        rps_verdict = verdict(load["rps"] >= TARGET_RPS and load["errors"] == 0)
        if load["rps"] < TARGET_RPS and load["client_cpu_ms_per_req"] > load["server_cpu_ms_per_req"]:
            rps_verdict = "client-bound (see raw)"
        rows.append(
            (
                f"{what}: throughput ({load['requests']} requests, {load['errors']} unexpected,"
                f" {load['wall_s']:.2f} s)",
                f"{load['rps']:,.0f} req/s",
                f"≥ {TARGET_RPS:,.0f} req/s",
                rps_verdict,
                OPENCLAW["rps"],
            )
        )
        rows.append(
            ("  latency p50 / p95", f"{load['p50_ms']:.2f} / {load['p95_ms']:.2f} ms", "—", "—", OPENCLAW["p50"])
        )
        rows.append(
            (
                "  server CPU per request; implied 1-core ceiling",
                f"{load['server_cpu_ms_per_req']:.3f} ms; {load['server_ceiling_rps']:,.0f} req/s",
                f"≤ {1000 / TARGET_RPS:.3f} ms (derived)",
                verdict(load["server_cpu_ms_per_req"] <= 1000 / TARGET_RPS),
                OPENCLAW["cpu"],
            )
        )
        rows.append(
            (
                "  client CPU per request; other processes' CPU meanwhile",
                f"{load['client_cpu_ms_per_req']:.3f} ms; {load['other_cpu_cores']:.2f} cores",
                "—",
                "—",
                "—",
            )
        )
    for label, t in r["policy"].items():
        rows.append(
            (
                f"`ToolPolicy.verdicts` for {len(TOOL_NAMES)} tools, {label}: cold (new policy) / cached;"
                " request path `set(allowed(...))`",
                f"{t['cold_us']:.1f} / {t['cached_us']:.2f} / {t['request_path_us']:.2f} µs",
                "—",
                "—",
                "policy + tool set built per request",
            )
        )
    rss = f" Gateway RSS after the loads: {r['gateway_rss_mib']:.1f} MiB."
    return "\n".join(
        markdown_table(("metric", "Homarus", "target", "result", "OpenClaw (recorded)"), rows) + machine_footer(r, rss)
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--total", type=int, default=6000, help="requests per load run (default 6000)")
    p.add_argument("--warmup", type=int, default=400, help="warm-up requests per tool, not counted (default 400)")
    p.add_argument("--concurrency", type=int, default=8, help="concurrent keep-alive connections (default 8)")
    p.add_argument("--procs", type=int, default=2, help="client processes of the raw client (0: skip it)")
    p.add_argument("--max-seconds", type=float, default=20.0, help="time cap per load run (default 20)")
    p.add_argument("--policy-calls", type=int, default=2000, help="cold policy evaluations per round (default 2000)")
    p.add_argument("--json", type=Path, help="also write all results as JSON to this file")
    args = p.parse_args(argv)
    if min(args.total, args.concurrency, args.policy_calls) < 1 or args.warmup < 0 or args.max_seconds <= 0:
        p.error("--total, --concurrency, --policy-calls must be >= 1, --warmup >= 0, --max-seconds > 0")
    if args.procs < 0 or args.procs > args.concurrency:
        p.error("--procs must be between 0 and --concurrency")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args, run_bench, render)


if __name__ == "__main__":
    sys.exit(main())
