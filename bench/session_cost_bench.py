"""What a new session costs the gateway: CPU per run when every run opens a session, against runs
on sessions that exist.

Run with ``.venv/bin/python bench/session_cost_bench.py [--runs 1000] [--rounds 3] [--clients 20]``.
One ``homarus gateway run`` process (fresh state dir, the built-in echo model); ``clients``
WebSocket clients with targeted events run ``agent`` turns; each round measures ``runs`` runs over
100 warm session keys, then ``runs`` runs each on a new key, alternating. The gateway's CPU time
(user + system, from ``/proc``) per run is the figure: the wall clock on two cores would also count
the clients. A new session's cost is the difference (issue #32: ≤ 2 ms). 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.agent_client import gateway_with_config
from bench.harness import machine_facts, markdown_table
from bench.rss_bench import CONFIG, run_turns


def _cpu_per_run(pid: int, url: str, keys: Iterator[str], runs: int, clients: int) -> tuple[float, float]:
    proc = psutil.Process(pid)
    before = proc.cpu_times()
    rate = asyncio.run(run_turns(url, keys, runs, clients))
    after = proc.cpu_times()
    cpu = (after.user - before.user) + (after.system - before.system)
    return cpu * 1000 / runs, rate


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clients", type=int, default=20)
    args = p.parse_args(argv)
    gw = gateway_with_config(CONFIG)
    warm_keys = itertools.cycle([f"warm-{i}" for i in range(100)])
    new_keys = (f"new-{i}" for i in itertools.count())
    rows = []
    try:
        gw.start()
        gw.wait_healthy()
        assert gw.proc is not None
        asyncio.run(run_turns(gw.url, warm_keys, 500, args.clients))  # imports, caches, the 100 sessions
        for r in range(args.rounds):
            warm, warm_rate = _cpu_per_run(gw.proc.pid, gw.url, warm_keys, args.runs, args.clients)
            new, new_rate = _cpu_per_run(gw.proc.pid, gw.url, new_keys, args.runs, args.clients)
            rows.append((warm, new, warm_rate, new_rate))
            print(f"# round {r + 1}: warm {warm:.2f} ms, new {new:.2f} ms", file=sys.stderr, flush=True)
    finally:
        gw.stop()
        gw.cleanup()
    table = [
        [str(i + 1), f"{w:.2f} ms", f"{n:.2f} ms", f"{n - w:+.2f} ms", f"{wr:.0f} / {nr:.0f}"]
        for i, (w, n, wr, nr) in enumerate(rows)
    ]
    median = statistics.median(n - w for w, n, _, _ in rows)
    head = ["round", "gateway CPU per run, 100 warm sessions", "each run a new session", "difference", "runs/s"]
    print("\n".join(markdown_table(head, table)))
    m = machine_facts()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"\nA new session costs {median:.2f} ms of gateway CPU (median of {args.rounds} rounds).")
    print(f"{when}; {m['cpus']} CPUs ({m['cpu_model']}), Python {m['python']}; {args.runs} runs a phase")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
