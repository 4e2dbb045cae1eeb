"""Gateway memory against runs: does RSS level off, or grow with every run and every session?

Run with ``.venv/bin/python bench/rss_bench.py [--warmup 1000] [--runs 20000] [--sessions 2000]
[--clients 20] [--step 2000]``. One ``homarus gateway run`` process (fresh state dir, the built-in
echo model); ``clients`` WebSocket clients with targeted events each run ``agent`` turns one after
another, round-robin over ``sessions`` session keys (0: a new session for every run). RSS is read
after the warm-up and then every ``step`` runs; the table is RSS against runs (the plot), and the
growth after the warm-up is what the target bounds (issue #32: ≤ 30 MiB for 20,000 runs over 2,000
sessions, ≤ 50 MiB for 100,000 runs over 10,000 sessions). Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.agent_client import gateway_with_config
from bench.concurrency_bench import _client as connect_client
from bench.harness import machine_facts, markdown_table

CONFIG: dict[str, Any] = {"agents": {"defaults": {"heartbeat": {"every": "0m"}}}}


async def _client(url: str, keys: Any, count: int) -> None:
    ws = await connect_client(url, targeted=True)  # its own runs' events only
    try:
        for _ in range(count):
            rid = uuid.uuid4().hex
            params = {"message": "hi", "sessionKey": next(keys), "idempotencyKey": rid}
            await ws.send(orjson.dumps({"type": "req", "id": rid, "method": "agent", "params": params}).decode())
            while True:
                frame = orjson.loads(await ws.recv())
                if frame.get("type") == "res" and frame.get("id") == rid:
                    if not frame.get("ok"):
                        raise RuntimeError(f"agent failed: {frame!r}")
                    if (frame.get("payload") or {}).get("status") != "accepted":
                        break
    finally:
        await ws.close()


async def run_turns(url: str, keys: Any, total: int, clients: int) -> float:
    started = time.perf_counter()
    share = [total // clients + (1 if i < total % clients else 0) for i in range(clients)]
    await asyncio.gather(*(_client(url, keys, n) for n in share if n))
    return total / (time.perf_counter() - started)


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    keys: Iterator[str]
    if args.sessions:
        keys = itertools.cycle([f"mem-{i}" for i in range(args.sessions)])
    else:
        keys = (f"mem-new-{i}" for i in itertools.count())
    config = json.loads(json.dumps(CONFIG))
    if args.transcript_cache_mb is not None:
        config["session"] = {"transcriptCacheMb": args.transcript_cache_mb}
    gw = gateway_with_config(config)
    rows: list[dict[str, Any]] = []
    try:
        gw.start()
        gw.wait_healthy()
        rows.append({"runs": 0, "rss": gw.rss_mib(), "rate": None})
        rate = asyncio.run(run_turns(gw.url, keys, args.warmup, args.clients))
        rows.append({"runs": args.warmup, "rss": gw.rss_mib(), "rate": rate, "warm": True})
        done = 0
        while done < args.runs:
            n = min(args.step, args.runs - done)
            rate = asyncio.run(run_turns(gw.url, keys, n, args.clients))
            done += n
            rows.append({"runs": args.warmup + done, "rss": gw.rss_mib(), "rate": rate})
            print(f"# {args.warmup + done} runs: {rows[-1]['rss']:.1f} MiB", file=sys.stderr, flush=True)
    finally:
        gw.stop()
        gw.cleanup()
    return rows


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    warm = next(r["rss"] for r in rows if r.get("warm"))
    table = [
        [
            f"{r['runs']:,}",
            f"{r['rss']:.1f}",
            "" if r["runs"] < args.warmup else f"{r['rss'] - warm:+.1f}",
            "" if r["rate"] is None else f"{r['rate']:.0f}",
            "█" * max(1, round(r["rss"] / 4)),
        ]
        for r in rows
    ]
    where = f"over {args.sessions:,} sessions" if args.sessions else "each on a new session"
    head = f"runs ({where}, {args.clients} clients)"
    return markdown_table([head, "RSS MiB", "since warm-up", "runs/s", "RSS (█ = 4 MiB)"], table)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--runs", type=int, default=20_000)
    p.add_argument("--sessions", type=int, default=2000, help="session keys, round-robin (0: a new one per run)")
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--step", type=int, default=2000)
    p.add_argument("--transcript-cache-mb", type=int, help="session.transcriptCacheMb (default: the config's)")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    rows = measure(args)
    print("\n".join(report(rows, args)))
    m = machine_facts()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print()
    print(f"{when}; {m['cpus']} CPUs ({m['cpu_model']}), Python {m['python']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
