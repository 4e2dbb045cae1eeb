"""The first answer after a start: fresh gateways, each asked one ``agent`` turn "hi".

Run with ``.venv/bin/python bench/first_turn_bench.py [--starts 8]`` (another tree through
``PYTHONPATH`` for a before/after). Each start is ``homarus gateway run`` with a fresh state dir
and the peer bench's config (an ``openai-completions`` provider on the fake model of
``../shared/peers/openclaw/fake_llm.py``); measured: spawn → first ``GET /health`` 200; what a client
sees meanwhile the gateway warms up (a WebSocket connected at ready asks ``health`` back to back for
0.5 s: the slowest answer; then the gateway's own ``eventLoop.delayMaxMs``, its loop's longest
delay since it started); RSS 0.7 s after ready; and the first turn over WebSocket ``agent``.
Medians, the minimum of the turns beside. Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import peer_workload as w
from bench.harness import machine_facts
from bench.peer_targets import FakeModel, Homarus, tree_rss_mib


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--starts", type=int, default=8)
    p.add_argument("--label", default="Homarus")
    args = p.parse_args(argv)
    model = FakeModel()
    model.start()
    starts, firsts, rss, slowest, loop_max = [], [], [], [], []
    try:
        for _ in range(args.starts):
            target = Homarus(model)
            try:
                starts.append(target.start())
                rtt_max, delay_max = w.run(_during_warm_up, target.port)
                slowest.append(rtt_max)
                loop_max.append(delay_max)
                time.sleep(0.2)  # 0.7 s after ready, as the peer bench reads it
                rss.append(tree_rss_mib(target.pid)[0])
                firsts.append(w.run(w.agent_turns, target.port, 1, "first")[0])
            finally:
                target.cleanup()
    finally:
        model.stop()
    med = statistics.median
    m = machine_facts()
    print(
        f"{args.label}: start {med(starts) * 1000:.0f} ms, first turn {med(firsts) * 1000:.0f} ms "
        f"(min {min(firsts) * 1000:.0f}), idle RSS {med(rss):.1f} MiB; during the warm-up: slowest `health` "
        f"{med(slowest) * 1000:.1f} ms (max {max(slowest) * 1000:.1f}), loop delay max {med(loop_max):.1f} ms "
        f"(max {max(loop_max):.1f}); {args.starts} starts; "
        f"{m['cpus']} CPUs ({m['cpu_model']}), Python {m['python']}"
    )
    return 0


async def _during_warm_up(port: int) -> tuple[float, float]:
    """The slowest of back-to-back ``health`` calls over the first 0.5 s after ready, and the loop's
    longest delay the gateway measured since its start (``eventLoop.delayMaxMs``)."""
    ws = await w.open_ws(port)
    try:
        slowest, until = 0.0, time.perf_counter() + 0.5
        while time.perf_counter() < until:
            asked = time.perf_counter()
            await w.call(ws, "health")
            slowest = max(slowest, time.perf_counter() - asked)
        await asyncio.sleep(0.05)  # the loop watcher's next sample
        health = await w.call(ws, "health")
        return slowest, float(health["payload"]["eventLoop"]["delayMaxMs"])
    finally:
        await ws.close()


if __name__ == "__main__":
    raise SystemExit(main())
