"""What the chat channel benchmarks share: a gateway process with a channel configured, waiting on
a fake platform, the latency and burst runs, idle RSS, the import cost, the arguments and the
result table.

Each channel's benchmark (``discord_bench.py``, ``slack_bench.py``, ``whatsapp_bench.py``; the
older ``channels_bench.py`` for Telegram) keeps only its platform's part, a :class:`Platform`: its
config, how a person's message is offered to the fake and how the replies are seen there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.harness import GatewayProcess, machine_facts, machine_footer, markdown_table, progress, summarize

__all__ = [
    "Platform",
    "base_config",
    "burst_counts",
    "channel_args",
    "channel_gateway",
    "channel_table",
    "idle_rss",
    "render_platform",
    "run_platform",
    "wait_until",
]

_BURST_TEXT = re.compile(r"b-\d+-\d+")


@dataclass(frozen=True)
class Platform:
    """One channel's part of its benchmark (the fake platform is running)."""

    #: the channel's id (``slack``) and how the table names it
    id: str
    label: str
    #: the gateway config for ``users`` (None: no channel at all)
    config: Callable[[Sequence[str] | None], dict[str, Any]]
    #: the variables unset for the gateway (the channel's secrets)
    token_envs: tuple[str, ...]
    #: called before a gateway starts: the check that it has reached the fake (after its start)
    connection: Callable[[GatewayProcess], Callable[[], Any]]
    #: a person's message to the bot: (user, text)
    offer: Callable[[str, str], object]
    #: every reply so far: (arrival, wall clock; text)
    replies: Callable[[], list[tuple[float, str]]]
    #: how many replies so far (polled every 2 ms: cheaper than building ``replies()``)
    count: Callable[[], int]
    #: the table's words: the path measured, what the burst's conversations are, what is connected
    path: str
    chats: str
    with_what: str
    #: the account's module, whose import cost is measured (default: ``homarus.channels.<id>.account``)
    module: str = ""


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


def base_config() -> dict[str, Any]:
    """A gateway config for a channel benchmark, the channel not yet in it."""
    return {
        "agents": {"defaults": {"heartbeat": {"every": "0m"}}},
        "session": {"dmScope": "per-channel-peer"},
        # followup: every message is its own turn, so each echoed reply names exactly its message
        "messages": {"inbound": {"debounceMs": 0}, "queue": {"mode": "followup"}},
    }


def _wait(check: Callable[[], Any], timeout_s: float, what: str) -> None:
    wait_until(check, timeout_s, what, poll_s=0.002)


def _latency(p: Platform, user: str, n: int) -> list[float]:
    samples: list[float] = []
    for i in range(n + 5):  # the first few warm the path (imports, the session, the sqlite pages)
        before = p.count()
        offered = time.time()
        p.offer(user, f"latency {i}")

        def replied(seen: int = before) -> bool:
            return p.count() > seen

        _wait(replied, 10, "the reply")
        if i >= 5:
            samples.append((p.replies()[before][0] - offered) * 1000)
    return samples


def _burst(p: Platform, users: Sequence[str], per_user: int, timeout_s: float) -> dict[str, Any]:
    expected = [f"b-{user[-3:]}-{i}" for i in range(per_user) for user in users]
    before = len(p.replies())
    started = time.time()
    for i in range(per_user):
        for user in users:
            p.offer(user, f"b-{user[-3:]}-{i}")

    def answered() -> Counter[str]:
        return Counter(t for _, text in p.replies()[before:] for t in _BURST_TEXT.findall(text))

    deadline = time.monotonic() + timeout_s
    while len(answered()) < len(expected) and time.monotonic() < deadline:
        time.sleep(0.05)
    finished = max((at for at, _ in p.replies()[before:]), default=started)
    time.sleep(1.0)  # a duplicate would show up now
    return burst_counts(expected, answered(), len(users), len(p.replies()) - before, started, finished)


def _connected_rss(p: Platform, users: Sequence[str], settle_s: float) -> float:
    gw = channel_gateway(p.config(users), *p.token_envs)
    return idle_rss(gw, settle_s, p.connection(gw))


def import_cost_ms(module: str, runs: int = 5) -> float:
    """The least time ``import <module>`` takes a fresh interpreter that has the gateway's imports."""
    code = (
        "import time, homarus.gateway.app, homarus.channels.manager;"
        f"t = time.perf_counter(); import {module};"
        "print((time.perf_counter() - t) * 1000)"
    )
    times = [float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(runs)]
    return round(min(times), 1)


def run_platform(args: argparse.Namespace, p: Platform, users: Sequence[str], latency_user: str) -> dict[str, Any]:
    """Latency, the burst and RSS after it on one gateway; idle RSS with and without the channel;
    the import cost of the channel's account module."""
    result: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_facts(),
        "loadavg_before": list(os.getloadavg()),
    }
    gw = channel_gateway(p.config(users), *p.token_envs)
    try:
        connected = p.connection(gw)
        gw.start()
        gw.wait_healthy()
        _wait(connected, 30, f"the {p.label} account")
        progress("latency: %d messages one at a time", args.latency_n)
        latency = _latency(p, latency_user, args.latency_n)
        progress("burst: %d messages from %d %s", args.burst_chats * args.burst_per_chat, len(users), p.chats)
        burst = _burst(p, users, args.burst_per_chat, args.burst_timeout)
        rss_after = gw.rss_mib()
    finally:
        gw.cleanup()
    progress("idle RSS with and without %s", p.label)
    with_it = [_connected_rss(p, users, args.settle) for _ in range(args.rss_runs)]
    without = [idle_rss(channel_gateway(p.config(None)), args.settle) for _ in range(args.rss_runs)]
    result.update(
        latency=summarize(latency),
        burst=burst,
        rss_after_burst_mib=round(rss_after, 1),
        idle_rss_mib={"without": round(min(without), 1), f"with_{p.id}": round(min(with_it), 1)},
        import_module=p.module or f"homarus.channels.{p.id}.account",
        import_ms=import_cost_ms(p.module or f"homarus.channels.{p.id}.account"),
        labels={"id": p.id, "path": p.path, "chats": p.chats, "with_what": p.with_what},
        loadavg_after=list(os.getloadavg()),
    )
    return result


def render_platform(r: dict[str, Any]) -> str:
    labels = r["labels"]
    table = channel_table(
        r,
        path=labels["path"],
        target_ms=15,
        chats=labels["chats"],
        rss_key=f"with_{labels['id']}",
        with_what=labels["with_what"],
    )
    return f"{table}\nimport {r['import_module']}: {r['import_ms']} ms (after the gateway's imports)\n"
