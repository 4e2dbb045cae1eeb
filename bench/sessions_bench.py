"""Session layer throughput: session index updates/s, transcript appends/s (real fsync), lane overhead.

The index rows compare the SQLite store (``homarus.sessions.store``) with the whole-file
``sessions.json`` algorithm it replaced (lock, re-read, change, temp file, fsync, rename, dir
fsync; reproduced here with the same helpers) at growing numbers of sessions.

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
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from homarus.fs import atomic_write
from homarus.locking import file_lock
from homarus.queue.lanes import LaneQueue
from homarus.sessions.store import SessionStore
from homarus.sessions.transcript import Transcript


def _entry(i: int) -> dict[str, Any]:
    return {"sessionId": f"id{i}", "updatedAt": int(time.time() * 1000), "label": "a session", "channel": "telegram"}


def _relabel(i: int) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    return lambda current: {**(current or _entry(i)), "label": f"l{i}"}


def _patches(root: Path, n: int, sessions: int) -> tuple[float, float, float]:
    """(updates/s, p50 ms, CPU ms per update) of the SQLite store."""
    store = SessionStore(root)
    store.add_missing({f"agent:main:s{i}": _entry(i) for i in range(sessions)})
    times, cpu = [], time.process_time()
    for i in range(n):
        key = f"agent:main:s{(i * 7919) % sessions}"
        t = time.perf_counter()
        store.update(key, _relabel(i))
        times.append(time.perf_counter() - t)
    cpu = time.process_time() - cpu
    store.close()
    return n / sum(times), statistics.median(times) * 1000, cpu / n * 1000


def _concurrent(root: Path, n: int, threads: int, sessions: int) -> tuple[float, float]:
    """(updates/s, updates per commit) with ``threads`` threads updating at once (group commit)."""
    store = SessionStore(root)
    store.add_missing({f"agent:main:s{i}": _entry(i) for i in range(sessions)})
    writer = store._writing()
    before = writer.commits
    per = n // threads

    def work(t: int) -> None:
        for i in range(per):
            store.update(f"agent:main:s{(t * per + i) % sessions}", _relabel(i))

    start = time.perf_counter()
    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    wall = time.perf_counter() - start
    commits = writer.commits - before
    store.close()
    return per * threads / wall, per * threads / max(1, commits)


def _json_patches(root: Path, n: int, sessions: int) -> tuple[float, float, float]:
    """The same with the whole-file algorithm of the sessions.json store this replaced."""
    path = root / "sessions.json"
    root.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps({f"agent:main:s{i}": _entry(i) for i in range(sessions)}))
    times, cpu = [], time.process_time()
    for i in range(n):
        key = f"agent:main:s{(i * 7919) % sessions}"
        t = time.perf_counter()
        with file_lock(path, timeout=10):
            entries = orjson.loads(path.read_bytes())
            before = orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)
            entries[key] = {**entries[key], "label": f"l{i}"}
            if orjson.dumps(entries, option=orjson.OPT_SORT_KEYS) != before:
                atomic_write(path, orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n")
        times.append(time.perf_counter() - t)
    cpu = time.process_time() - cpu
    return n / sum(times), statistics.median(times) * 1000, cpu / n * 1000


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
        rows: list[tuple[str, str, str, float | None]] = []
        for sessions in (10, 500, 10_000, 100_000):
            rate, p50, cpu = _patches(root / f"p{sessions}", args.n, sessions)
            rows.append((f"sessions.sqlite update ({sessions:,} sessions)", f"{rate:,.0f}/s", f"{p50:.2f} ms", cpu))
        rate, grouped = _concurrent(root / "c", args.n * 4, 8, 10_000)
        rows.append(("sessions.sqlite update, 8 threads at once (10,000 sessions)", f"{rate:,.0f}/s",
                     f"{grouped:.1f} updates/commit", None))  # fmt: skip
        for sessions in (10, 500, 10_000):
            n = args.n if sessions < 10_000 else max(10, args.n // 10)
            rate, p50, cpu = _json_patches(root / f"j{sessions}", n, sessions)
            rows.append(
                (f"sessions.json rewrite, before ({sessions:,} sessions)", f"{rate:,.0f}/s", f"{p50:.2f} ms", cpu)
            )
        rate, p50 = _appends(root, args.n)
        rows.append(("transcript append (one entry), fsync", f"{rate:,.0f}/s", f"{p50:.2f} ms", None))
        overhead = asyncio.run(_lanes(args.n * 10))
        lane = ("lane scheduling, double-enqueued no-op task", f"{1e6 / overhead:,.0f}/s", f"{overhead:.1f} µs", None)
        rows.append(lane)
        print(
            f"# {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, dir {root}"
        )
        print("| metric | rate | p50 | CPU per op |")
        print("| --- | --- | --- | --- |")
        for name, rate_s, p50_s, cpu_ms in rows:
            print(f"| {name} | {rate_s} | {p50_s} | {'' if cpu_ms is None else f'{cpu_ms:.2f} ms'} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
