"""What the chat channel benchmarks share: a gateway process with a channel configured, waiting on
a fake platform, idle RSS, the burst's counts, the arguments and the result table.

Each channel's benchmark (``channels_bench.py`` for Telegram, ``discord_bench.py``, ``slack_bench.py``) keeps only its
platform's part: how a message is offered to the fake and how a reply is seen there.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.harness import GatewayProcess, machine_footer, markdown_table

__all__ = ["burst_counts", "channel_args", "channel_gateway", "channel_table", "idle_rss", "wait_until"]


def channel_gateway(config: dict[str, Any], *token_envs: str) -> GatewayProcess:
    """A gateway process on ``config`` (written to its own file); ``token_envs`` unset for it."""
    gw = GatewayProcess(log_level="warning")
    path = gw.workdir / "homarus.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    gw.env_overrides["HOMARUS_CONFIG"] = str(path)
    for name in token_envs:
        gw.env_overrides[name] = None
    return gw


def wait_until(check: Callable[[], Any], timeout_s: float, what: str, poll_s: float = 0.005) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(poll_s)  # the fake server shares this process: a tight loop here would slow it


def idle_rss(gw: GatewayProcess, settle_s: float, connected: Callable[[], Any] | None = None) -> float:
    """The gateway's RSS ``settle_s`` after it is healthy (and ``connected()``, when given)."""
    try:
        gw.start()
        gw.wait_healthy()
        if connected is not None:
            wait_until(connected, 30, "the platform connection")
        time.sleep(settle_s)
        return gw.rss_mib()
    finally:
        gw.cleanup()


def burst_counts(
    expected: Sequence[str], counts: Counter[str], chats: int, replies: int, started: float, finished: float
) -> dict[str, Any]:
    """A burst's result: lost = never answered, duplicated = answered more than once."""
    return {
        "messages": len(expected),
        "chats": chats,
        "lost": sum(1 for t in expected if t not in counts),
        "duplicated": sum(n - 1 for n in counts.values() if n > 1),
        "replies": replies,
        "seconds": round(finished - started, 3),
        "msgs_per_s": round(len(expected) / max(finished - started, 1e-6), 1),
    }


def channel_args(argv: Sequence[str] | None, doc: str | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    ap.add_argument("--latency-n", type=int, default=200)
    ap.add_argument("--burst-chats", type=int, default=100)
    ap.add_argument("--burst-per-chat", type=int, default=10)
    ap.add_argument("--burst-timeout", type=float, default=180.0)
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after start before idle RSS is read")
    ap.add_argument("--rss-runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    return ap.parse_args(argv)


def channel_table(r: dict[str, Any], *, path: str, target_ms: float, chats: str, rss_key: str, with_what: str) -> str:
    """The result table: latency (``path``, against ``target_ms``), the burst, idle RSS."""
    lat, burst, rss = r["latency"], r["burst"], r["idle_rss_mib"]
    extra = rss[rss_key] - rss["without"]
    rows = [
        [
            f"{path} p50",
            f"{lat['p50']:.1f} ms",
            f"≤ {target_ms:g} ms",
            "pass" if lat["p50"] <= target_ms else "**miss**",
        ],
        [f"{path} p95 / p99", f"{lat['p95']:.1f} / {lat['p99']:.1f} ms", "", ""],
        [
            f"burst: {burst['messages']:,} messages, {burst['chats']} {chats}",
            f"{burst['msgs_per_s']:,.0f} msgs/s ({burst['seconds']} s, {burst['replies']} replies)",
            "",
            "",
        ],
        [
            "burst: lost / duplicated",
            f"{burst['lost']} / {burst['duplicated']}",
            "0 / 0",
            "pass" if burst["lost"] == 0 and burst["duplicated"] == 0 else "**miss**",
        ],
        ["idle RSS without channels", f"{rss['without']:.1f} MiB", "", ""],
        [
            f"idle RSS with {with_what}",
            f"{rss[rss_key]:.1f} MiB (+{extra:.1f})",
            "≤ +10 MB",
            "pass" if extra * 1.048576 <= 10 else "**miss**",
        ],
        ["RSS after the burst", f"{r['rss_after_burst_mib']:.1f} MiB", "", ""],
    ]
    lines = markdown_table(["measure", "Homarus", "target", ""], rows)
    lines += machine_footer(r, f" {lat['n']:.0f} latency samples.")
    return "\n".join(lines)
