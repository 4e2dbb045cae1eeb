"""Discord benchmark: MESSAGE_CREATE → reply latency, a 1,000-message burst, idle memory.

Run with ``.venv/bin/python bench/discord_bench.py [--latency-n N] [--burst-chats N --burst-per-chat N]``.
One ``homarus gateway run`` process (fresh state dir, the built-in scripted model answering with
the user's text) holds a Gateway session with the fake Discord of ``tests/fakes/discord_server.py``
on loopback (the real wire formats: the Gateway v10 over a WebSocket, the REST API over HTTP):

* **latency**: one DM at a time from an allowed user; the time from the ``MESSAGE_CREATE``
  dispatch being handed to the fake's socket to the reply's ``POST /channels/<id>/messages``
  reaching the fake. Everything in between is Homarus (the frame parsed, the message and the
  Gateway cursor committed, access, routing, journal, the agent turn with the scripted model, the
  outbox) plus one WebSocket frame and one loopback HTTP exchange. The fake's per-channel bucket
  is raised for the run (Discord's own, 5 messages per 5 s in a channel, would make the client
  wait, as it must, and measure Discord's limit instead of Homarus). Target: the same ≤ 15 ms of
  orchestration as Telegram (issue #33).
* **burst**: ``chats * per-chat`` messages dispatched at once in ``chats`` DM channels (one
  session each); every text is unique and echoed: lost = never answered, duplicated = twice.
* **idle RSS**: the gateway 3 s after start, without channels and with a connected Discord bot.
  Target: ≤ 10 MB more with Discord.
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

from tests.fakes.discord_server import FakeDiscord, run_fake_discord

from bench.channel_parts import burst_counts, channel_args, channel_gateway, channel_table, idle_rss, wait_until
from bench.harness import GatewayProcess, bench_main, machine_facts, progress, summarize

LATENCY_USER = "830000000000000000"
LATENCY_DM = "840000000000000000"
TOKEN_RE = re.compile(r"b-\d+-\d+")


def _users(n: int) -> list[str]:
    return [str(850000000000000000 + i) for i in range(n)]


def _dm(user: str) -> str:
    return str(int(user) + 10**15)


def _config(fake: FakeDiscord | None, users: Sequence[str]) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "agents": {"defaults": {"heartbeat": {"every": "0m"}}},
        "session": {"dmScope": "per-channel-peer"},
        # followup: every message is its own turn, so each echoed reply names exactly its message
        "messages": {"inbound": {"debounceMs": 0}, "queue": {"mode": "followup"}},
    }
    if fake is not None:
        cfg["channels"] = {
            "discord": {
                "token": fake.token,
                "apiRoot": fake.api_root,
                "dmPolicy": "allowlist",
                "allowFrom": [LATENCY_USER, *users],
            }
        }
    return cfg


def _gateway(config: dict[str, Any]) -> GatewayProcess:
    return channel_gateway(config, "DISCORD_BOT_TOKEN")


def _wait(check: Any, timeout_s: float, what: str) -> None:
    wait_until(check, timeout_s, what, poll_s=0.002)


def measure_latency(fake: FakeDiscord, n: int) -> list[float]:
    samples: list[float] = []
    for i in range(n + 5):  # the first few warm the path (imports, the session, the sqlite pages)
        before = len(fake.posted)
        offered = time.time()
        fake.user_message(LATENCY_DM, LATENCY_USER, f"latency {i}")
        _wait(lambda b=before: len(fake.posted) > b, 10, "the reply")
        if i >= 5:
            samples.append((fake.posted[before].at - offered) * 1000)
    return samples


def measure_burst(fake: FakeDiscord, users: Sequence[str], per_user: int, timeout_s: float) -> dict[str, Any]:
    expected = [f"b-{user[-3:]}-{i}" for i in range(per_user) for user in users]
    before = len(fake.posted)
    started = time.time()
    for i in range(per_user):
        for user in users:
            fake.user_message(_dm(user), user, f"b-{user[-3:]}-{i}")

    def answered() -> Counter[str]:
        return Counter(t for p in fake.posted[before:] for t in TOKEN_RE.findall(p.content))

    deadline = time.monotonic() + timeout_s
    while len(answered()) < len(expected) and time.monotonic() < deadline:
        time.sleep(0.05)
    finished = max((p.at for p in fake.posted[before:]), default=started)
    time.sleep(1.0)  # a duplicate would show up now
    return burst_counts(expected, answered(), len(users), len(fake.posted) - before, started, finished)


def _idle_connected(fake: FakeDiscord, users: Sequence[str], settle_s: float) -> float:
    identified = fake.identifies
    return idle_rss(_gateway(_config(fake, users)), settle_s, lambda: fake.identifies > identified)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    users = _users(args.burst_chats)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_facts(),
        "loadavg_before": list(os.getloadavg()),
    }
    with run_fake_discord() as fake:
        fake.bucket_limit = 1_000_000
        fake.add_dm(LATENCY_DM)
        for user in users:
            fake.add_dm(_dm(user))
        gw = _gateway(_config(fake, users))
        try:
            gw.start()
            gw.wait_healthy()
            _wait(lambda: fake.identifies >= 1, 30, "the Gateway session")
            progress("latency: %d messages one at a time", args.latency_n)
            latency = measure_latency(fake, args.latency_n)
            progress("burst: %d messages in %d DMs", args.burst_chats * args.burst_per_chat, args.burst_chats)
            burst = measure_burst(fake, users, args.burst_per_chat, args.burst_timeout)
            rss_after = gw.rss_mib()
        finally:
            gw.cleanup()
        progress("idle RSS with and without Discord")
        with_dc = [_idle_connected(fake, users, args.settle) for _ in range(args.rss_runs)]
    without = [idle_rss(_gateway(_config(None, users)), args.settle) for _ in range(args.rss_runs)]
    result.update(
        latency=summarize(latency),
        burst=burst,
        rss_after_burst_mib=round(rss_after, 1),
        idle_rss_mib={"without": round(min(without), 1), "with_discord": round(min(with_dc), 1)},
        loadavg_after=list(os.getloadavg()),
    )
    return result


def render(r: dict[str, Any]) -> str:
    return channel_table(
        r,
        path="MESSAGE_CREATE → POST message",
        target_ms=15,
        chats="DMs",
        rss_key="with_discord",
        with_what="a Discord bot connected",
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return channel_args(argv, __doc__)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render))
