"""Many conversations at once on one gateway (issue #23): N WebSocket clients each start one
`agent` run at the same moment, on ``--sessions`` sessions, with the built-in echo model.

Run with ``.venv/bin/python bench/concurrency_bench.py [--clients 100,200,500] [--sessions 100]``.
Each client keeps the ``websockets`` default keepalive (a ping every 20 s, 20 s to answer), so a
gateway whose event loop stalls loses sockets with ``1011 keepalive ping timeout``, as a real
client would. A separate prober sends ``health`` every 100 ms during the load: its round trips
are the loop lag as a client sees it; the gateway's own ``eventLoop`` (timer delay p99/max over
the last minute) is read from ``health`` after the round. Reported per N: answered, sockets dropped, wall time, runs/s,
run latency p50/p95/p99, health RTT p99, gateway CPU per run and RSS. Everything on 127.0.0.1; the
clients share the machine's cores with the gateway (the figures are for this machine's load).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # after the sys.path line above
    TOKEN,
    connect_frame,
    machine_facts,
    markdown_table,
    percentile,
    progress,
    running_gateway,
)

RUN_TIMEOUT_S = 120.0
#: how dropped sockets were closed: "<code received>/<code sent>" -> count
CLOSES: collections.Counter[str] = collections.Counter()


async def _client(url: str, targeted: bool = False) -> ClientConnection:
    # default keepalive; max_queue=None: frames the bench does not read (presence, ticks) never pause the
    # reading of the socket, which would hide the pongs and close it with 1011 (a client artifact)
    ws = await connect(url, compression=None, max_size=None, max_queue=None, open_timeout=60, close_timeout=2)
    challenge = orjson.loads(await ws.recv())
    assert challenge.get("event") == "connect.challenge", challenge
    frame = orjson.loads(connect_frame(TOKEN))
    if targeted:
        frame["params"]["caps"] = [*frame["params"].get("caps", []), "targeted-events"]
    await ws.send(orjson.dumps(frame).decode())
    while True:
        frame = orjson.loads(await ws.recv())
        if frame.get("type") == "res" and frame.get("id") == "1":
            if not frame.get("ok"):
                raise RuntimeError(f"connect refused: {frame!r}")
            return ws


async def _run(ws: ClientConnection, session: str, start: asyncio.Event) -> tuple[str, float]:
    """('ok'|'dropped'|'failed'|'timeout', seconds from the common start to the final answer)."""
    rid = f"r{uuid.uuid4().hex[:12]}"
    params = {"message": "hi", "sessionKey": session, "idempotencyKey": f"bench-{uuid.uuid4().hex}"}
    text = orjson.dumps({"type": "req", "id": rid, "method": "agent", "params": params}).decode()
    await start.wait()
    t0 = time.perf_counter()
    try:
        await ws.send(text)
        async with asyncio.timeout(RUN_TIMEOUT_S):
            while True:
                frame = orjson.loads(await ws.recv())
                if frame.get("type") != "res" or frame.get("id") != rid:
                    continue
                if not frame.get("ok"):
                    return "failed", time.perf_counter() - t0
                if (frame.get("payload") or {}).get("status") == "accepted":
                    continue
                return "ok", time.perf_counter() - t0
    except ConnectionClosed as exc:
        CLOSES[f"{exc.rcvd.code if exc.rcvd else None}/{exc.sent.code if exc.sent else None}"] += 1
        return "dropped", time.perf_counter() - t0
    except TimeoutError:
        return "timeout", time.perf_counter() - t0


async def _drain(ws: ClientConnection) -> None:
    with contextlib.suppress(ConnectionClosed, asyncio.CancelledError):
        while True:
            await ws.recv()


async def _prober(url: str, stop: asyncio.Event, rtts: list[float]) -> None:
    """``health`` every 100 ms from a separate process, until ``stop``: the round trips are the
    gateway's responsiveness as a client sees it (from this process, they would also count the
    load client's own busy event loop)."""
    cmd = [sys.executable, str(HERE / "concurrency_bench.py"), "--probe", url]
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE)
    await stop.wait()
    proc.send_signal(signal.SIGTERM)
    out, _ = await proc.communicate()
    rtts.extend(float(x) for x in orjson.loads(out or b"[]"))


async def _probe_main(url: str) -> None:
    """The prober process: a targeted client (it asks for health and nothing else: as a broadcast
    client it would be one more watcher of every run's events); prints its round trips on SIGTERM."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    rtts: list[float] = []
    ws = await _client(url, targeted=True)
    try:
        n = 0
        while not stop.is_set():
            n += 1
            rid = f"h{n}"
            t0 = time.perf_counter()
            await ws.send(orjson.dumps({"type": "req", "id": rid, "method": "health", "params": {}}).decode())
            while True:
                frame = orjson.loads(await ws.recv())
                if frame.get("id") == rid:
                    break
            rtts.append(time.perf_counter() - t0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.1)
    except ConnectionClosed:
        rtts.append(float("inf"))
    finally:
        await ws.close()
    sys.stdout.write(orjson.dumps([r if r != float("inf") else 1e9 for r in rtts]).decode())


async def _round(url: str, clients: int, sessions: int, gw: Any, targeted: bool, watchers: int) -> dict[str, Any]:
    sockets: list[ClientConnection] = []
    for i in range(0, clients, 25):  # in batches under the per-address limit of unauthenticated sockets (32)
        sockets += await asyncio.gather(*(_client(url, targeted) for _ in range(min(25, clients - i))))
    # operator sockets that watch everything (no targeted-events: every run's events), read and dropped
    watching = [await _client(url) for _ in range(watchers)]
    drains = [asyncio.create_task(_drain(ws)) for ws in watching]
    # one run first: a gateway serving many conversations is warm (its first run imports the agent
    # loop, ~0.3 s of CPU once per process), and that is not the cost of a turn
    go = asyncio.Event()
    go.set()
    await _run(sockets[0], "agent:main:warm-up", go)
    runs = [functools.partial(_run, ws, f"agent:main:load-{i % sessions}") for i, ws in enumerate(sockets)]
    results, wall, cpu, rtts = await _burst(gw, runs)
    for task in drains:
        task.cancel()
    mode = ("targeted" if targeted else "broadcast") + (f" +{watchers} watchers" if watchers else "")
    summary = await _summary(gw, mode, clients, results, wall, cpu, rtts)
    for ws in [*sockets, *watching]:
        await ws.close()
    return summary


@contextlib.contextmanager
def _sampled(gw: Any, out: str | None) -> Iterator[None]:
    """py-spy on the gateway for the round (``--py-spy``): where its CPU goes, as collapsed stacks."""
    if out is None:
        yield
        return
    spy_bin = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy_bin).exists():
        progress("py-spy is not installed (pip install py-spy): round not sampled")
        yield
        return
    cmd = [spy_bin, "record", "--pid", str(gw.proc.pid), "--format", "raw", "--rate", "200", "--gil", "-o", out]
    spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)
        progress("py-spy samples in %s", out)


HERE = Path(__file__).resolve().parent
HTTP_CONFIG = {"gateway": {"http": {"endpoints": {"chatCompletions": {"enabled": True}}}}}


async def _http_one(client: httpx.AsyncClient, session: str, start: asyncio.Event) -> tuple[str, float]:
    body = {"model": "homarus", "messages": [{"role": "user", "content": "hi"}]}
    await start.wait()
    t0 = time.perf_counter()
    try:
        resp = await client.post("/v1/chat/completions", json=body, headers={"x-homarus-session-key": session})
    except httpx.TimeoutException:
        return "timeout", time.perf_counter() - t0
    except httpx.HTTPError:
        return "dropped", time.perf_counter() - t0
    ok = resp.status_code == 200 and resp.json().get("choices")
    return ("ok" if ok else "failed"), time.perf_counter() - t0


async def _http_round(gw: Any, clients: int, sessions: int) -> dict[str, Any]:
    """The same load through ``POST /v1/chat/completions``: N requests at once, one connection each."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"authorization": f"Bearer {TOKEN}"}
    base = f"http://127.0.0.1:{gw.port}"
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=RUN_TIMEOUT_S) as client:
        go = asyncio.Event()
        go.set()
        await _http_one(client, "warm-up", go)  # see _round: the first run's imports are not a turn's cost
        runs = [functools.partial(_http_one, client, f"load-{i % sessions}") for i in range(clients)]
        results, wall, cpu, rtts = await _burst(gw, runs)
    return await _summary(gw, "http /v1/chat/completions", clients, results, wall, cpu, rtts)


Starter = Callable[[asyncio.Event], Coroutine[Any, Any, tuple[str, float]]]


async def _burst(gw: Any, runs: Sequence[Starter]) -> tuple[list[tuple[str, float]], float, float, list[float]]:
    """Start every run at the same moment (each waits for the common start), with the prober
    running; (results, wall seconds, gateway CPU seconds, health round trips)."""
    stop, rtts = asyncio.Event(), list[float]()
    prober = asyncio.create_task(_prober(gw.url, stop, rtts))
    await asyncio.sleep(0.5)
    start = asyncio.Event()
    cpu0 = gw.cpu_seconds()
    tasks = [asyncio.create_task(run(start)) for run in runs]
    await asyncio.sleep(0.2)
    t0 = time.perf_counter()
    start.set()
    results = await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    cpu = gw.cpu_seconds() - cpu0
    stop.set()
    await prober
    return results, wall, cpu, rtts


async def _summary(
    gw: Any, mode: str, clients: int, results: list[tuple[str, float]], wall: float, cpu: float, rtts: list[float]
) -> dict[str, Any]:
    probe = await _client(gw.url, targeted=True)  # the gateway's own view of its loop over the last minute
    await probe.send(orjson.dumps({"type": "req", "id": "lag", "method": "health", "params": {}}).decode())
    while (frame := orjson.loads(await probe.recv())).get("id") != "lag":
        pass
    loop = (frame.get("payload") or {}).get("eventLoop") or {}
    await probe.close()
    ok = [s for status, s in results if status == "ok"]
    counts = {k: sum(1 for status, _ in results if status == k) for k in ("ok", "dropped", "failed", "timeout")}
    return {
        "clients": clients,
        "mode": mode,
        **counts,
        "wall_s": wall,
        "runs_per_s": len(ok) / wall if wall else 0.0,
        "p50_s": percentile(ok, 50) if ok else float("nan"),
        "p95_s": percentile(ok, 95) if ok else float("nan"),
        "p99_s": percentile(ok, 99) if ok else float("nan"),
        "health_p99_ms": percentile(rtts, 99) * 1000 if rtts else float("nan"),
        "lag_p99_ms": float(loop.get("delayP99Ms", float("nan"))),
        "lag_max_ms": float(loop.get("delayMaxMs", float("nan"))),
        "cpu_ms_per_run": cpu / max(1, len(ok)) * 1000,
        "rss_mib": gw.rss_mib(),
    }


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        asyncio.run(_probe_main(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="100,200,500", help="comma-separated client counts")
    parser.add_argument("--sessions", type=int, default=100)
    modes = "broadcast (today's clients), targeted (caps targeted-events), targeted+5 (and 5 watchers), http"
    parser.add_argument("--modes", default="broadcast,targeted,targeted+5", help=modes)
    parser.add_argument("--py-spy", metavar="PREFIX", help="sample the gateway with py-spy (if installed) per round")
    args = parser.parse_args()
    facts = machine_facts()
    rows = []
    for mode in args.modes.split(","):
        for n in (int(x) for x in args.clients.split(",")):
            # a fresh gateway per round: one round's backlog is not the next's
            with running_gateway(None, HTTP_CONFIG if mode == "http" else None) as gw:
                progress("%s, %d clients …", mode, n)
                targeted, watchers = mode.startswith("targeted"), 5 if mode.endswith("+5") else 0
                with _sampled(gw, f"{args.py_spy}-{mode}-{n}.txt" if args.py_spy else None):
                    if mode == "http":
                        r = asyncio.run(_http_round(gw, n, args.sessions))
                    else:
                        r = asyncio.run(_round(gw.url, n, args.sessions, gw, targeted, watchers))
                progress("  %s", r)
                rows.append(r)
    header = ["mode", "clients", "answered", "dropped", "failed/timeout", "wall s", "runs/s", "p50 s", "p95 s", "p99 s",
              "health RTT p99 ms", "loop lag p99/max ms", "CPU ms/run", "RSS MiB"]  # fmt: skip
    table = [
        [r["mode"], str(r["clients"]), str(r["ok"]), str(r["dropped"]), f"{r['failed']}/{r['timeout']}",
         f"{r['wall_s']:.1f}", f"{r['runs_per_s']:.1f}", f"{r['p50_s']:.2f}", f"{r['p95_s']:.2f}", f"{r['p99_s']:.2f}",
         f"{r['health_p99_ms']:.0f}", f"{r['lag_p99_ms']:.0f}/{r['lag_max_ms']:.0f}", f"{r['cpu_ms_per_run']:.1f}",
         f"{r['rss_mib']:.0f}"]
        for r in rows
    ]  # fmt: skip
    print("\n".join(markdown_table(header, table)))
    print(f"\nmachine: {facts}")
    if CLOSES:
        print(f"dropped sockets by close code (received/sent): {dict(CLOSES)}")


if __name__ == "__main__":
    main()
