"""Session layer throughput: sessions.json patches/s and transcript appends/s with real fsync, and lane overhead.

Usage: .venv/bin/python bench/sessions_bench.py [--n N] [--dir PATH]
Prints a Markdown table. Uses a temp dir on the project's disk (real fsync) unless --dir is given.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from homarus.queue.lanes import LaneQueue
from homarus.sessions.store import SessionStore
from homarus.sessions.transcript import Transcript


def _patches(root: Path, n: int, sessions: int) -> tuple[float, float]:
    store = SessionStore(root / "sessions.json")

    def seed(entries: dict[str, dict[str, Any]]) -> None:
        for i in range(sessions):
            entries[f"agent:main:s{i}"] = {"sessionId": f"id{i}", "updatedAt": int(time.time() * 1000)}

    store.update(seed)
    times = []
    for i in range(n):

        def patch(entries: dict[str, dict[str, Any]], i: int = i) -> None:
            entries[f"agent:main:s{i % sessions}"]["label"] = f"l{i}"

        t = time.perf_counter()
        store.update(patch)
        times.append(time.perf_counter() - t)
    return n / sum(times), statistics.median(times) * 1000


def _appends(root: Path, n: int) -> tuple[float, float]:
    t = Transcript(root / "t.jsonl")
    t.create("bench")
    times = []
    for i in range(n):
        start = time.perf_counter()
        t.append({"type": "message", "message": {"role": "user", "content": f"message {i}"}})
        times.append(time.perf_counter() - start)
    return n / sum(times), statistics.median(times) * 1000


async def _lanes(n: int) -> float:
    lanes = LaneQueue()

    async def noop() -> None:
        return None

    start = time.perf_counter()
    for i in range(n):
        await lanes.run(f"session:s{i % 10}", lambda: lanes.run("main", noop))
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--dir", default=None, help="where to write (default: a temp dir under bench/out)")
    args = ap.parse_args()
    base = Path(args.dir) if args.dir else Path(__file__).parent / "out"
    base.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=base))
    try:
        rows = []
        for sessions in (10, 100, 500):
            rate, p50 = _patches(root / f"p{sessions}", args.n, sessions)
            rows.append((f"sessions.json patch ({sessions} sessions), fsync", f"{rate:,.0f}/s", f"{p50:.2f} ms"))
        rate, p50 = _appends(root, args.n)
        rows.append(("transcript append (one entry), fsync", f"{rate:,.0f}/s", f"{p50:.2f} ms"))
        overhead = asyncio.run(_lanes(args.n * 10))
        rows.append(("lane scheduling, double-enqueued no-op task", f"{1e6 / overhead:,.0f}/s", f"{overhead:.1f} µs"))
        print(f"# {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} CPUs, dir {root}")
        print("| metric | rate | p50 |")
        print("| --- | --- | --- |")
        for name, rate_s, p50_s in rows:
            print(f"| {name} | {rate_s} | {p50_s} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
