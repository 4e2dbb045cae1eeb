"""What the personal WhatsApp engine costs to load: time and memory of importing the neonize
engine (whatsmeow's native library, the protobuf runtime, neonize's Python side) and segno (the
QR codes), each in a fresh interpreter, against the bare interpreter with Homarus's channel
layer imported.

Run with ``.venv/bin/python bench/whatsapp_engine_import.py [--runs N]``: the median of ``runs``
fresh interpreters per row. A personal account imports the engine in a worker thread when it
starts (the loop never waits for it); a gateway with no personal account never imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import bench_main, machine_facts, machine_footer, markdown_table, progress

_PROBE = """
import json, resource, sys, time
import homarus.channels.manager
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024
before = rss()
t = time.perf_counter()
for name in sys.argv[1:]:
    __import__(name)
took = time.perf_counter() - t
print(json.dumps({"ms": took * 1000, "rss_before": before, "rss_after": rss()}))
"""

ROWS = (
    ("segno (QR codes)", ("segno",)),
    ("the neonize engine (whatsmeow, protobuf, neonize)", ("homarus.channels.whatsapp.neonize_engine",)),
    ("the personal account (engine boundary, no engine)", ("homarus.channels.whatsapp.personal",)),
)


def measure(modules: Sequence[str], runs: int) -> tuple[float, float]:
    times, deltas = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _PROBE, *modules], capture_output=True, text=True, check=True, timeout=120
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        times.append(got["ms"])
        deltas.append(got["rss_after"] - got["rss_before"])
    return statistics.median(times), statistics.median(deltas)


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_facts(),
        "loadavg_before": list(os.getloadavg()),
        "runs": args.runs,
        "rows": [],
    }
    for label, modules in ROWS:
        progress("importing %s", label)
        ms, mib = measure(modules, args.runs)
        result["rows"].append({"import": label, "ms": round(ms, 1), "rss_mib": round(mib, 2)})
    result["loadavg_after"] = list(os.getloadavg())
    return result


def render(r: dict[str, Any]) -> str:
    rows = [[x["import"], f"{x['ms']:.0f} ms", f"+{x['rss_mib']:.1f} MiB"] for x in r["rows"]]
    lines = [f"WhatsApp personal engine, import cost (median of {r['runs']} fresh interpreters)", ""]
    lines += markdown_table(["import", "time", "RSS"], rows)
    lines += machine_footer(r)
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render))
