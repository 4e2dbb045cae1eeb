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

from bench.channel_parts import burst_counts, channel_args, channel_gateway, channel_table, idle_rss, wait_until
from bench.harness import GatewayProcess, bench_main, machine_facts, progress, summarize

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
    return channel_gateway(config, "TELEGRAM_BOT_TOKEN")


def _wait(check: Any, timeout_s: float, what: str) -> None:
    wait_until(check, timeout_s, what)


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
    replies = len(fake.method_calls("sendMessage")) - before
    return burst_counts(expected, answered(), len(chats), replies, started, finished)


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
        with_tg = [idle_rss(_gateway(_config(fake, chats)), args.settle) for _ in range(args.rss_runs)]
    without = [idle_rss(_gateway(_config(None, chats)), args.settle) for _ in range(args.rss_runs)]
    result.update(
        latency=summarize(latency),
        burst=burst,
        rss_after_burst_mib=round(rss_after, 1),
        idle_rss_mib={"without": round(min(without), 1), "with_telegram": round(min(with_tg), 1)},
        loadavg_after=list(os.getloadavg()),
    )
    return result


def render(r: dict[str, Any]) -> str:
    return channel_table(
        r,
        path="update → sendMessage",
        target_ms=10,
        chats="chats",
        rss_key="with_telegram",
        with_what="Telegram polling",
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return channel_args(argv, __doc__)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render))
