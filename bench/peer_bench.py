"""Side by side in one sitting: Homarus, the original OpenClaw gateway, nanobot-ai and hermes-agent.

Run with ``make bench-peer`` (or ``.venv/bin/python bench/peer_bench.py [--starts N] [--no-openclaw]
[--no-nanobot] [--no-hermes] [--json out.json] [--write bench/RESULTS.md]``). Installs the peers
when missing (OpenClaw through ``../shared/peers/openclaw/install.sh``; nanobot-ai 0.3.5 and
hermes-agent 0.19.0 from PyPI, each into its own venv under ``~/.cache``), starts each on loopback
against its own copy of the same fake model, runs the same workload against each
(bench/peer_workload.py), and prints the tables; ``--write`` also puts them into RESULTS.md between
the ``peer-bench`` markers, dated, with machine and load. A turn's gateway time is its end-to-end
time less the fake model's own answer to the same request (``model_rtt``: the recorded request for
"hi" POSTed to the fake model directly).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import peer_workload as w
from bench.harness import homarus_executable, machine_facts, markdown_table, percentile, progress
from bench.peer_targets import (
    GATEWAY_TOKEN,
    HERMES_KEY,
    HOOKS_TOKEN,
    FakeModel,
    Hermes,
    Homarus,
    Nanobot,
    OpenClaw,
    tree_rss_mib,
)

MARK_START, MARK_END = "<!-- peer-bench:start -->", "<!-- peer-bench:end -->"
TARGETS = {  # issue #32's (set on a 2-core AMD EPYC)
    "start_s": 0.25,
    "idle_rss_mib": 50.0,
    "loaded_rss_mib": 70.0,
    "help_s": 0.050,
    "request_bytes": 12_000,
    "first_turn_ms": 60.0,
    "warm_ws_ms": 5.0,
    "warm_http_ms": 5.0,
}


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def measure_help(runs: int = 7) -> float:
    exe = homarus_executable()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([exe, "--help"], stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return _median(times)


def measure_gateway(
    target: Homarus | OpenClaw, model: FakeModel, args: argparse.Namespace, starts: int
) -> dict[str, Any]:
    """Fresh starts (start time, idle RSS, first agent turn), then the loads on one more instance."""
    r: dict[str, Any] = {"starts": [], "idle_rss": [], "first_turn": []}
    for i in range(starts):
        progress("%s: start %d of %d", target.name, i + 1, starts)
        try:
            r["starts"].append(target.start())
            time.sleep(1.0)
            r["idle_rss"].append(tree_rss_mib(target.pid))
            r["first_turn"].append(w.run(w.agent_turns, target.port, 1, "bench-first")[0])
        finally:
            target.stop()
    progress("%s: loads", target.name)
    try:
        target.start()
        time.sleep(1.0)
        bodies_before = len(model.bodies())
        r["warm_turns"] = w.run(w.agent_turns, target.port, args.turns + 3, "bench-warm")[3:]
        bodies = model.bodies()[bodies_before:]
        r["request_bytes"] = len(bodies[0]) if bodies else None
        if bodies:
            r["model_rtt"] = w.run(w.model_alone, model.base_url, bodies[0], args.turns)
        r["rss_before_loads"] = tree_rss_mib(target.pid)
        r["handshake"] = w.run(w.handshakes, target.port, args.handshakes)
        r["health_rtt"] = w.run(w.sequential, target.port, args.ws_n)
        r["ws_throughput"] = w.run(w.ws_throughput, target.port, target.pid, args.n)
        r["tools_invoke"] = w.run(w.tools_invoke, target.port, target.pid, args.http_n)
        r["hooks_wake"] = w.run(w.hooks_wake, target.port, target.pid, args.n)
        base = f"http://127.0.0.1:{target.port}"
        r["wrk_tools_invoke"] = w.wrk_post(
            target.pid, f"{base}/tools/invoke", GATEWAY_TOKEN, {"tool": "sessions_list", "args": {}}
        )
        r["wrk_hooks_wake"] = w.wrk_post(
            target.pid, f"{base}/hooks/wake", HOOKS_TOKEN, {"text": "bench ping", "mode": "next-heartbeat"}
        )
        if isinstance(target, Homarus):
            r["openai_turns"] = w.run(w.openai_turns, target.port, args.turns, GATEWAY_TOKEN, "homarus")
        time.sleep(1.0)
        r["rss_after_loads"] = tree_rss_mib(target.pid)
    finally:
        target.stop()
    return r


def measure_api_peer(
    cls: type[Nanobot] | type[Hermes], model: FakeModel, args: argparse.Namespace, starts: int, api_key: str | None
) -> dict[str, Any]:
    """A peer measured through its OpenAI-compatible API only: fresh starts (start time, idle RSS,
    the first turn), then warm turns and the request for "hi" on the last one."""
    cls.install()
    r: dict[str, Any] = {"starts": [], "idle_rss": [], "first_turn": []}
    model_name = "fake-model" if cls is Nanobot else "hermes-agent"
    for i in range(starts):
        progress("%s: start %d of %d", cls.name, i + 1, starts)
        target = cls(model)
        try:
            r["starts"].append(target.start())
            time.sleep(1.0)
            r["idle_rss"].append(tree_rss_mib(target.pid))
            before = len(model.bodies())
            r["first_turn"].append(w.run(w.openai_turns, target.port, 1, api_key, model_name, 0)[0])
            bodies = model.bodies()[before:]
            r["request_bytes"] = len(bodies[0]) if bodies else None
            if i == starts - 1:
                r["openai_turns"] = w.run(w.openai_turns, target.port, args.turns, api_key, model_name)
        finally:
            target.cleanup()
    return r


# -- report ---------------------------------------------------------------------------------------------
def _ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def _ratio(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "—"
    return f"{a / b:.1f}x"


def _row(label: str, ours: float | None, theirs: float | None, fmt: Any, higher_is_better: bool = False) -> list[str]:
    """One comparison row; the ratio is oriented so that above 1x favours Homarus."""
    ratio = _ratio(ours, theirs) if higher_is_better else _ratio(theirs, ours)
    return [label, fmt(ours) if ours is not None else "—", fmt(theirs) if theirs is not None else "—", ratio]


def _get(r: dict[str, Any] | None, key: str, sub: str | None = None) -> Any:
    if r is None or not r.get(key):
        return None
    return r[key].get(sub) if sub else r[key]


def _rss(r: dict[str, Any] | None, key: str, whole_tree: bool = True) -> float | None:
    if r is None or not r.get(key):
        return None
    value = r[key]
    if isinstance(value, list):  # one (own, tree) pair per start
        return _median([pair[1 if whole_tree else 0] for pair in value])
    return float(value[1 if whole_tree else 0])


def peer_rows(h: dict[str, Any], o: dict[str, Any] | None) -> list[list[str]]:
    starts = _median(o["starts"]) if o else None
    first = _median(o["first_turn"]) if o else None
    return [
        _row("start → first `/health` 200 (median)", _median(h["starts"]), starts, _sec),
        _row("idle RSS (+1 s after ready; process tree)", _rss(h, "idle_rss"), _rss(o, "idle_rss"), _mib),
        _row("RSS after the loads below", _rss(h, "rss_after_loads"), _rss(o, "rss_after_loads"), _mib),
        _row("WS connect handshake p50", _p50(h["handshake"]), _p50(_get(o, "handshake")), _ms),
        _row("WS `health` RTT p50, sequential", _p50(h["health_rtt"]), _p50(_get(o, "health_rtt")), _ms),
        _row(
            "WS `health` req/s, 8 sockets x 1 in flight",
            _get(h, "ws_throughput", "rps"),
            _get(o, "ws_throughput", "rps"),
            _rps,
            higher_is_better=True,
        ),
        _row(
            "  server CPU per `health`",
            _get(h, "ws_throughput", "cpu_ms_per_req"),
            _get(o, "ws_throughput", "cpu_ms_per_req"),
            _cpu,
        ),
        _row(
            "`POST /tools/invoke` req/s @8 (sessions_list)",
            _get(h, "tools_invoke", "rps"),
            _get(o, "tools_invoke", "rps"),
            _rps,
            higher_is_better=True,
        ),
        _row(
            "  server CPU per call",
            _get(h, "tools_invoke", "cpu_ms_per_req"),
            _get(o, "tools_invoke", "cpu_ms_per_req"),
            _cpu,
        ),
        _row(
            "`POST /hooks/wake` req/s @8",
            _get(h, "hooks_wake", "rps"),
            _get(o, "hooks_wake", "rps"),
            _rps,
            higher_is_better=True,
        ),
        _row(
            "  server CPU per call",
            _get(h, "hooks_wake", "cpu_ms_per_req"),
            _get(o, "hooks_wake", "cpu_ms_per_req"),
            _cpu,
        ),
        _row(
            "`POST /tools/invoke` req/s, wrk 5 s @8",
            _get(h, "wrk_tools_invoke", "rps"),
            _get(o, "wrk_tools_invoke", "rps"),
            _rps,
            higher_is_better=True,
        ),
        _row(
            "`POST /hooks/wake` req/s, wrk 5 s @8",
            _get(h, "wrk_hooks_wake", "rps"),
            _get(o, "wrk_hooks_wake", "rps"),
            _rps,
            higher_is_better=True,
        ),
        _row("first `agent` turn after start (median)", _median(h["first_turn"]), first, _ms),
        _row("warm `agent` turn p50 (WS)", _p50(h["warm_turns"]), _p50(_get(o, "warm_turns")), _ms),
        _row('model request for "hi"', h["request_bytes"], _get(o, "request_bytes"), _bytes),
    ]


def _p50(xs: Sequence[float] | None) -> float | None:
    return percentile(xs, 50) if xs else None


def _sec(x: float) -> str:
    return f"{x:.3f} s"


def _mib(x: float) -> str:
    return f"{x:.1f} MiB"


def _rps(x: float) -> str:
    return f"{x:,.0f}"


def _cpu(x: float) -> str:
    return f"{x:.3f} ms"


def _bytes(x: float) -> str:
    return f"{x:,.0f} B"


def target_rows(h: dict[str, Any], help_s: float) -> list[list[str]]:
    model_ms = (_p50(h.get("model_rtt")) or 0) * 1000
    values = {
        "start_s": _median(h["starts"]),
        "idle_rss_mib": _rss(h, "idle_rss", False) or 0.0,
        "loaded_rss_mib": _rss(h, "rss_after_loads", False) or 0.0,
        "help_s": help_s,
        "request_bytes": float(h["request_bytes"] or 0),
        "first_turn_ms": _median(h["first_turn"]) * 1000 - model_ms,
        "warm_ws_ms": (_p50(h["warm_turns"]) or 0) * 1000 - model_ms,
        "warm_http_ms": (_p50(h.get("openai_turns")) or 0) * 1000 - model_ms,
    }
    ms: Any = lambda v: f"{v:.1f} ms"  # noqa: E731
    labels = {
        "start_s": ("start → `/health` 200", _sec),
        "idle_rss_mib": ("idle RSS", _mib),
        "loaded_rss_mib": ("RSS after the loads", _mib),
        "help_s": ("`homarus --help`", _sec),
        "request_bytes": ('model request for "hi"', _bytes),
        "first_turn_ms": ("first turn after start, gateway time", ms),
        "warm_ws_ms": ("warm turn, WS `agent`, gateway time", ms),
        "warm_http_ms": ("warm turn, `/v1/chat/completions`, gateway time", ms),
    }
    rows = []
    for key, (label, fmt) in labels.items():
        ok = values[key] <= TARGETS[key]
        rows.append([label, fmt(values[key]), f"≤ {fmt(TARGETS[key])}", "pass" if ok else "**miss**"])
    rows.append(["(the fake model's own answer, subtracted above)", ms(model_ms), "", ""])
    return rows


def all_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The figures every peer has, one column each (— where a peer was not run or lacks the path)."""
    names = [("homarus", "Homarus"), ("openclaw", "OpenClaw"), ("nanobot", "nanobot"), ("hermes", "hermes-agent")]
    present = [(key, label) for key, label in names if results.get(key)]

    def row(label: str, fmt: Any, value: Any) -> list[str]:
        cells = []
        for key, _ in present:
            v = value(results[key])
            cells.append("—" if v is None or v != v else fmt(v))  # v != v: NaN, nothing measured
        return [label, *cells]

    rows = [
        row("start → first `/health` 200 (median)", _sec, lambda r: _median(r["starts"])),
        row("idle RSS, +1 s after ready (process tree)", _mib, lambda r: _rss(r, "idle_rss")),
        row(
            "first turn after start (median)", _ms, lambda r: _median(r["first_turn"]) if r.get("first_turn") else None
        ),
        row("warm turn p50, `POST /v1/chat/completions`", _ms, lambda r: _p50(r.get("openai_turns"))),
        row("warm turn p50, WS `agent`", _ms, lambda r: _p50(r.get("warm_turns"))),
        row('model request for "hi"', _bytes, lambda r: r.get("request_bytes")),
    ]
    return ["metric", *(label for _, label in present)], rows


def render(results: dict[str, Any]) -> str:
    h, o = results["homarus"], results.get("openclaw")
    lines = [f"### Side by side, {results['date']}", ""]
    lines += [
        "All four, the same fake model and the same client code (first turn: WS `agent` for the two",
        "gateways, `POST /v1/chat/completions` for nanobot-ai 0.3.5 and hermes-agent 0.19.0):",
        "",
    ]
    head, rows = all_rows(results)
    lines += markdown_table(head, rows)
    lines += ["", "Homarus against its targets:", ""]
    lines += markdown_table(["metric", "Homarus", "target", "result"], target_rows(h, results["help_s"]))
    lines += ["", "Homarus and the original OpenClaw gateway, the gateway protocol and HTTP loads:", ""]
    lines += markdown_table(["metric", "Homarus", "OpenClaw", "OpenClaw ÷ Homarus"], peer_rows(h, o))
    m = results["machine"]
    lines += [
        "",
        f"{results['date']}; {m['cpus']} CPUs ({m['cpu_model']}), {m['ram_gib']} GiB RAM, Python {m['python']}; "
        f"load average before: {results['loadavg_before']}; after: {results['loadavg_after']}. "
        f"Homarus: {results['args']['starts']} fresh starts, OpenClaw: {results['args']['openclaw_starts']}, "
        f"nanobot: {results['args']['nanobot_starts']}, hermes-agent: {results['args']['hermes_starts']}; "
        f"{results['args']['turns']} warm turns each; "
        f"{results['args']['n']} WS `health` and `/hooks/wake` requests, {results['args']['http_n']} "
        "`/tools/invoke` calls. Ratios above 1x favour Homarus.",
    ]
    return "\n".join(lines)


def write_results(path: Path, text: str) -> None:
    block = f"{MARK_START}\n{text}\n{MARK_END}"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    pattern = re.compile(re.escape(MARK_START) + r".*?" + re.escape(MARK_END), re.DOTALL)
    new = pattern.sub(lambda _m: block, old) if pattern.search(old) else old.rstrip() + "\n\n" + block + "\n"
    path.write_text(new, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--starts", type=int, default=5, help="fresh Homarus starts (default 5)")
    p.add_argument("--openclaw-starts", type=int, default=1, help="fresh OpenClaw starts (default 1; ~20 s each)")
    p.add_argument("--nanobot-starts", type=int, default=3, help="fresh nanobot starts (default 3)")
    p.add_argument("--turns", type=int, default=20, help="warm turns measured per system (default 20)")
    p.add_argument("--handshakes", type=int, default=50)
    p.add_argument("--ws-n", type=int, default=500, help="sequential WS health requests (default 500)")
    p.add_argument("--n", type=int, default=2000, help="WS health and /hooks/wake requests per load (default 2000)")
    p.add_argument("--http-n", type=int, default=1000, help="/tools/invoke calls (default 1000)")
    p.add_argument("--no-openclaw", dest="openclaw", action="store_false")
    p.add_argument("--no-nanobot", dest="nanobot", action="store_false")
    p.add_argument("--hermes-starts", type=int, default=3, help="fresh hermes-agent starts (default 3)")
    p.add_argument("--no-hermes", dest="hermes", action="store_false")
    p.add_argument("--json", type=Path)
    p.add_argument("--write", type=Path, help="put the tables into this Markdown file (between the markers)")
    args = p.parse_args(argv)
    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_facts(),
        "loadavg_before": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "args": vars(args) | {"json": None, "write": None},
    }
    if args.openclaw:
        progress("installing the OpenClaw peer (no-op when present)")
        OpenClaw.install()
    models = {name: FakeModel() for name in ("homarus", "openclaw", "nanobot", "hermes")}
    try:
        for model in models.values():
            model.start()
        results["help_s"] = measure_help()
        homarus = Homarus(models["homarus"])
        try:
            results["homarus"] = measure_gateway(homarus, models["homarus"], args, args.starts)
        finally:
            homarus.cleanup()
        if args.openclaw:
            openclaw = OpenClaw(models["openclaw"])
            try:
                results["openclaw"] = measure_gateway(openclaw, models["openclaw"], args, args.openclaw_starts)
            finally:
                openclaw.cleanup()
        if args.nanobot:
            results["nanobot"] = measure_api_peer(Nanobot, models["nanobot"], args, args.nanobot_starts, None)
        if args.hermes:
            results["hermes"] = measure_api_peer(Hermes, models["hermes"], args, args.hermes_starts, HERMES_KEY)
    finally:
        for model in models.values():
            model.stop()
    results["loadavg_after"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text = render(results)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    if args.write:
        write_results(args.write, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
