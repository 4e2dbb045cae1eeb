"""The first answer after a start: fresh gateways, each asked one ``agent`` turn "hi".

Run with ``.venv/bin/python bench/first_turn_bench.py [--starts 8]`` (another tree through
``PYTHONPATH`` for a before/after). Each start is ``homarus gateway run`` with a fresh state dir
and the peer bench's config (an ``openai-completions`` provider on the fake model of
``../shared/peers/openclaw/fake_llm.py``); measured: spawn → first ``GET /health`` 200, RSS 0.7 s
after, and the first turn over WebSocket ``agent``. Medians, the minimum of the turns beside.
Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
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
    starts, firsts, rss = [], [], []
    try:
        for _ in range(args.starts):
            target = Homarus(model)
            try:
                starts.append(target.start())
                time.sleep(0.7)
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
        f"(min {min(firsts) * 1000:.0f}), idle RSS {med(rss):.1f} MiB; {args.starts} starts; "
        f"{m['cpus']} CPUs ({m['cpu_model']}), Python {m['python']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
