"""The PostgreSQL backend (storage.backend: postgres) beside the embedded one: a warm agent turn,
``chat.send`` throughput with 1, 2 and 3 gateways on one database, and the failover time from
``kill -9`` of a gateway to its run resumed and answered by a survivor.

Run with ``.venv/bin/python bench/cluster_bench.py [--turns N] [--clients N] [--messages N]
[--failovers N] [--json out.json]``. A throw-away PostgreSQL is started for it (Debian's server
binaries, ``initdb`` in a temporary directory, loopback only: ``tests/pg_cluster.py``), each
scenario on a fresh database. Gateways are real ``homarus gateway run`` processes on loopback with
the built-in scripted model echoing (the failover uses the fake OpenAI-compatible model of
``tests/fakes`` so a run can be held mid-turn). Note that every gateway, PostgreSQL and the client
share the machine's cores: with 2 cores, 3 gateways measure contention as much as scaling.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import psycopg
from tests.fakes import Reply, run_fake_llm
from tests.pg_cluster import PgCluster, pg_cluster

from bench.agent_client import agent_params, agent_turn, chat_turn
from bench.harness import (
    TOKEN,
    GatewayProcess,
    bench_main,
    machine_facts,
    markdown_table,
    open_session,
    progress,
    summarize,
)

ECHO: dict[str, Any] = {
    "models": {"providers": {"plain": {"api": "scripted", "script": []}}},
    "agents": {"defaults": {"model": {"primary": "plain/echo"}, "heartbeat": {"every": "0m"}}},
}
HOOK_TOKEN = "bench-hook-token-0123456789abcdef"


def _postgres(url: str, ttl_s: float = 15.0) -> dict[str, Any]:
    return {"storage": {"backend": "postgres", "postgres": {"url": url, "memberTtlSeconds": ttl_s}}}


@contextlib.contextmanager
def _gateways(configs: Sequence[dict[str, Any]]) -> Iterator[list[GatewayProcess]]:
    started: list[GatewayProcess] = []
    try:
        for config in configs:
            gw = GatewayProcess(config=config)
            started.append(gw)
            gw.start()
            gw.wait_healthy()
        yield started
    finally:
        for gw in started:
            gw.cleanup()


def _database(pg: PgCluster) -> str:
    return pg.create_database(f"bench_{uuid.uuid4().hex[:10]}")


# -- 1. warm agent turn -----------------------------------------------------------------------
async def _turns(gw: GatewayProcess, turns: int) -> dict[str, float]:
    ws = await open_session(gw.url, TOKEN)
    try:
        for _ in range(5):  # warm: the first turns load the agent stack
            await agent_turn(ws, agent_params("warm up", "bench-warm"))
        samples = []
        for i in range(turns):
            timing = await agent_turn(ws, agent_params(f"turn {i}", "bench-warm"))
            samples.append(timing.final_s * 1000)
        return summarize(samples)
    finally:
        await ws.close()


def warm_turn(pg: PgCluster, turns: int) -> dict[str, Any]:
    out = {}
    for name, extra in (("embedded", {}), ("postgres", _postgres(_database(pg)))):
        progress("warm agent turn, %s: %d turns", name, turns)
        with _gateways([{**ECHO, **extra}]) as (gw,):
            out[name] = asyncio.run(_turns(gw, turns))
    return out


# -- 2. chat.send throughput ------------------------------------------------------------------
async def _throughput(gateways: list[GatewayProcess], clients: int, messages: int) -> dict[str, float]:
    sockets = [await open_session(gateways[i % len(gateways)].url, TOKEN) for i in range(clients)]
    latencies: list[float] = []

    async def client(index: int) -> None:
        for n in range(messages):
            elapsed, _text, _frames = await chat_turn(sockets[index], f"agent:main:bench-{index}", f"message {n}")
            latencies.append(elapsed * 1000)

    try:
        await asyncio.gather(*(client(i) for i in range(min(2, clients))))  # warm up two sessions
        latencies.clear()
        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        wall = time.perf_counter() - started
    finally:
        for ws in sockets:
            await ws.close()
    return {"messages": float(len(latencies)), "per_s": len(latencies) / wall, **summarize(latencies)}


def throughput(pg: PgCluster, clients: int, messages: int) -> dict[str, Any]:
    out = {}
    progress("chat.send throughput, embedded, 1 gateway")
    with _gateways([ECHO]) as gws:
        out["embedded x1"] = asyncio.run(_throughput(gws, clients, messages))
    for count in (1, 2, 3):
        progress("chat.send throughput, postgres, %d gateway(s)", count)
        url = _database(pg)
        with _gateways([{**ECHO, **_postgres(url)}] * count) as gws:
            out[f"postgres x{count}"] = asyncio.run(_throughput(gws, clients, messages))
    return out


# -- 3. failover ----------------------------------------------------------------------------
def _hook_config(llm_url: str, pg_url: str, ttl_s: float) -> dict[str, Any]:
    provider = {"api": "openai-completions", "baseUrl": llm_url, "apiKey": "sk-bench", "models": [{"id": "fake-model"}]}
    return {
        "models": {"providers": {"fake": provider}},
        "agents": {"defaults": {"model": {"primary": "fake/fake-model"}, "heartbeat": {"every": "0m"}}},
        "hooks": {"enabled": True, "token": HOOK_TOKEN},
        **_postgres(pg_url, ttl_s),
    }


def _run_status(pg_url: str, run_id: str) -> str | None:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    return None if row is None else str(row[0])


def failover_once(pg: PgCluster, ttl_s: float) -> float:
    """Seconds from ``kill -9`` of the gateway running a webhook to that run answered by the other."""
    url = _database(pg)
    with run_fake_llm() as llm:
        held = {"on": True}
        llm.respond = lambda request: Reply("resumed", delay_s=120.0 if held["on"] else 0.0)
        with _gateways([_hook_config(llm.base_url, url, ttl_s)] * 2) as (a, _b):
            headers = {"authorization": f"Bearer {HOOK_TOKEN}"}
            body = {"message": "a long job", "deliver": False}
            res = httpx.post(f"http://127.0.0.1:{a.port}/hooks/agent", json=body, headers=headers, timeout=10)
            run_id = res.json()["runId"]
            deadline = time.monotonic() + 30
            while not llm.requests:  # the run is waiting on the model, on a
                if time.monotonic() > deadline:
                    raise RuntimeError("the webhook's run never reached the model")
                time.sleep(0.01)
            assert a.proc is not None
            a.proc.kill()
            killed = time.perf_counter()
            a.proc.wait(10)
            held["on"] = False
            deadline = time.monotonic() + ttl_s * 4 + 30
            while _run_status(url, run_id) != "ok":
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the run was not taken over: {_run_status(url, run_id)}")
                time.sleep(0.05)
            return time.perf_counter() - killed


def failover(pg: PgCluster, rounds: int) -> dict[str, Any]:
    out = {}
    for ttl in (15.0, 3.0):
        progress("failover, memberTtlSeconds %s: %d round(s)", ttl, rounds)
        samples = [failover_once(pg, ttl) for _ in range(rounds)]
        out[f"ttl {ttl:g} s"] = {"ttl_s": ttl, "samples_s": samples, "median_s": sorted(samples)[len(samples) // 2]}
    return out


# -- the run and the report -----------------------------------------------------------------
def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    load_before = os.getloadavg()
    with pg_cluster() as pg:
        results: dict[str, Any] = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": machine_facts(),
            "loadavg_before": load_before,
            "warm_turn_ms": warm_turn(pg, args.turns),
            "throughput": throughput(pg, args.clients, args.messages),
            "failover": failover(pg, args.failovers),
        }
    results["loadavg_after"] = os.getloadavg()
    return results


def render(r: dict[str, Any]) -> str:
    lines = ["### Warm agent turn (one session, sequential; ms)", ""]
    rows = [[name, f"{s['p50']:.1f}", f"{s['p95']:.1f}", f"{s['p99']:.1f}"] for name, s in r["warm_turn_ms"].items()]
    lines += markdown_table(["backend", "p50", "p95", "p99"], rows)
    lines += ["", "### chat.send throughput (clients spread over the gateways, one session each)", ""]
    rows = [
        [name, f"{s['per_s']:.1f}", f"{s['p50']:.1f}", f"{s['p95']:.1f}", f"{int(s['messages'])}"]
        for name, s in r["throughput"].items()
    ]
    lines += markdown_table(["backend x gateways", "messages/s", "latency p50 ms", "p95 ms", "messages"], rows)
    lines += ["", "### Failover: kill -9 of the gateway running a webhook → that run answered by the other", ""]
    rows = [
        [name, ", ".join(f"{x:.1f}" for x in f["samples_s"]), f"{f['median_s']:.1f}"]
        for name, f in r["failover"].items()
    ]
    lines += markdown_table(["memberTtlSeconds", "samples (s)", "median (s)"], rows)
    m = r["machine"]
    lb = ", ".join(f"{x:.2f}" for x in r["loadavg_before"])
    la = ", ".join(f"{x:.2f}" for x in r["loadavg_after"])
    lines += [
        "",
        f"{r['date']}; {m['cpus']} CPUs ({m['cpu_model']}), {m['ram_gib']} GiB RAM, Python {m['python']};"
        f" load average before: {lb}; after: {la}. Gateways, PostgreSQL and the client share these cores.",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--turns", type=int, default=100, help="warm agent turns per backend")
    p.add_argument("--clients", type=int, default=24, help="chat.send clients (one session each)")
    p.add_argument("--messages", type=int, default=10, help="messages per client")
    p.add_argument("--failovers", type=int, default=2, help="kill -9 rounds per member ttl")
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render))
