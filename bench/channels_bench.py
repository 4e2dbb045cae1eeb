"""Chat channel benchmark: Telegram update → reply latency, a 1,000-message burst, idle memory.

Run with ``.venv/bin/python bench/channels_bench.py [--latency-n N] [--burst-chats N --burst-per-chat N]``.
One ``homarus gateway run`` process (fresh state dir, the built-in scripted model answering with
the user's text) polls the fake Telegram Bot API of ``tests/fakes/telegram_server.py`` on loopback
(the real wire format: long-polled ``getUpdates``, ``sendMessage``, ``sendChatAction``):

* **latency**: one message at a time from an allowed DM; the time from the update being offered
  to the long poll to the reply's ``sendMessage`` reaching the fake server. Everything in between
  is Homarus (commit to the inbox, access, routing, journal, the agent turn with the scripted
  model, the outbox) plus two loopback HTTP exchanges. Target: p50 ≤ 10 ms (issue #32; on a 2-core AMD EPYC).
* **burst**: ``chats * per-chat`` messages offered at once from ``chats`` allowed DMs (one
  session each); every message text is unique and the scripted model echoes it, so each reply
  names the messages it answered: lost = never answered, duplicated = answered twice.
* **idle RSS**: the gateway 3 s after start, without channels and with a polling Telegram bot.
  Target: ≤ 10 MB more with Telegram.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.telegram_server import FakeTelegram, run_fake_telegram

from bench.harness import GatewayProcess, bench_main, machine_facts, machine_footer, markdown_table, progress, summarize

LATENCY_CHAT = 10_000
TOKEN_RE = re.compile(r"b-\d+-\d+")


def _config(fake: FakeTelegram | None, chats: Sequence[int]) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "agents": {"defaults": {"heartbeat": {"every": "0m"}}},
        "session": {"dmScope": "per-channel-peer"},
        # followup: every message is its own turn, so each echoed reply names exactly its message
        "messages": {"inbound": {"debounceMs": 0}, "queue": {"mode": "followup"}},
    }
    if fake is not None:
        allowed = [LATENCY_CHAT, *chats]
        cfg["channels"] = {
            "telegram": {
                "botToken": fake.token,
                "apiRoot": fake.api_root,
                "dmPolicy": "allowlist",
                "allowFrom": allowed,
            }
        }
    return cfg


def _gateway(config: dict[str, Any]) -> GatewayProcess:
    gw = GatewayProcess(log_level="warning")
    path = gw.workdir / "homarus.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    gw.env_overrides["HOMARUS_CONFIG"] = str(path)
    gw.env_overrides["TELEGRAM_BOT_TOKEN"] = None
    return gw


def _wait(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)  # the fake server shares this process: a tight loop here would slow it


def _sent_at(fake: FakeTelegram, index: int) -> float:
    """When the fake server received the ``index``-th sendMessage (its own wall clock)."""
    calls = fake.method_calls("sendMessage")
    return calls[index].at


def measure_latency(fake: FakeTelegram, n: int) -> list[float]:
    samples: list[float] = []
    for i in range(n + 5):  # the first few warm the path (imports, the session, the sqlite pages)
        before = len(fake.method_calls("sendMessage"))
        offered = time.time()
        fake.user_message(LATENCY_CHAT, f"latency {i}")
        _wait(lambda b=before: len(fake.method_calls("sendMessage")) > b, 10, "the reply")
        if i >= 5:
            samples.append((_sent_at(fake, before) - offered) * 1000)
    return samples


def measure_burst(fake: FakeTelegram, chats: Sequence[int], per_chat: int, timeout_s: float) -> dict[str, Any]:
    expected = [f"b-{chat}-{i}" for i in range(per_chat) for chat in chats]
    before = len(fake.method_calls("sendMessage"))
    started = time.time()
    for i in range(per_chat):
        for chat in chats:
            fake.user_message(chat, f"b-{chat}-{i}")

    def answered() -> Counter[str]:
        calls = fake.method_calls("sendMessage")[before:]
        return Counter(t for c in calls for t in TOKEN_RE.findall(str(c.params.get("text", ""))))

    deadline = time.monotonic() + timeout_s
    while len(answered()) < len(expected) and time.monotonic() < deadline:
        time.sleep(0.05)
    finished = max((c.at for c in fake.method_calls("sendMessage")[before:]), default=started)
    time.sleep(1.0)  # a duplicate would show up now
    counts = answered()
    turns = len(fake.method_calls("sendMessage")) - before
    return {
        "messages": len(expected),
        "chats": len(chats),
        "lost": sum(1 for t in expected if t not in counts),
        "duplicated": sum(n - 1 for n in counts.values() if n > 1),
        "replies": turns,
        "seconds": round(finished - started, 3),
        "msgs_per_s": round(len(expected) / max(finished - started, 1e-6), 1),
    }


def idle_rss(config: dict[str, Any], settle_s: float) -> float:
    gw = _gateway(config)
    try:
        gw.start()
        gw.wait_healthy()
        time.sleep(settle_s)
        return gw.rss_mib()
    finally:
        gw.cleanup()


def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    chats = [20_000 + i for i in range(args.burst_chats)]
    result: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_facts(),
        "loadavg_before": list(os.getloadavg()),
    }
    with run_fake_telegram() as fake:
        gw = _gateway(_config(fake, chats))
        try:
            gw.start()
            gw.wait_healthy()
            _wait(lambda: fake.method_calls("getUpdates"), 30, "the first poll")
            progress("latency: %d messages one at a time", args.latency_n)
            latency = measure_latency(fake, args.latency_n)
            progress("burst: %d messages from %d chats", args.burst_chats * args.burst_per_chat, args.burst_chats)
            burst = measure_burst(fake, chats, args.burst_per_chat, args.burst_timeout)
            rss_after = gw.rss_mib()
        finally:
            gw.cleanup()
        progress("idle RSS with and without Telegram")
        with_tg = [idle_rss(_config(fake, chats), args.settle) for _ in range(args.rss_runs)]
    without = [idle_rss(_config(None, chats), args.settle) for _ in range(args.rss_runs)]
    result.update(
        latency=summarize(latency),
        burst=burst,
        rss_after_burst_mib=round(rss_after, 1),
        idle_rss_mib={"without": round(min(without), 1), "with_telegram": round(min(with_tg), 1)},
        loadavg_after=list(os.getloadavg()),
    )
    return result


def render(r: dict[str, Any]) -> str:
    lat, burst, rss = r["latency"], r["burst"], r["idle_rss_mib"]
    extra = rss["with_telegram"] - rss["without"]
    rows = [
        ["update → sendMessage p50", f"{lat['p50']:.1f} ms", "≤ 10 ms", "pass" if lat["p50"] <= 10 else "**miss**"],
        ["update → sendMessage p95 / p99", f"{lat['p95']:.1f} / {lat['p99']:.1f} ms", "", ""],
        [
            f"burst: {burst['messages']:,} messages, {burst['chats']} chats",
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
            "idle RSS with Telegram polling",
            f"{rss['with_telegram']:.1f} MiB (+{extra:.1f})",
            "≤ +10 MB",
            "pass" if extra * 1.048576 <= 10 else "**miss**",
        ],
        ["RSS after the burst", f"{r['rss_after_burst_mib']:.1f} MiB", "", ""],
    ]
    lines = markdown_table(["measure", "Homarus", "target", ""], rows)
    lines += machine_footer(r, f" {lat['n']:.0f} latency samples.")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--latency-n", type=int, default=200)
    ap.add_argument("--burst-chats", type=int, default=100)
    ap.add_argument("--burst-per-chat", type=int, default=10)
    ap.add_argument("--burst-timeout", type=float, default=180.0)
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after start before idle RSS is read")
    ap.add_argument("--rss-runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    return ap.parse_args(argv)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render))
