"""Slack benchmark: Socket Mode envelope → reply latency, a 1,000-message burst, idle memory.

Run with ``.venv/bin/python bench/slack_bench.py [--latency-n N] [--burst-chats N --burst-per-chat N]``.
One ``homarus gateway run`` process (fresh state dir, the built-in scripted model answering with
the user's text) holds a Socket Mode connection with the fake Slack of ``tests/fakes/slack_server.py``
on loopback (the real wire formats: Socket Mode envelopes and acks over a WebSocket, the Web API
over HTTP):

* **latency**: one DM at a time from an allowed user; the time from the ``events_api`` envelope
  being handed to the fake's socket to the reply's ``chat.postMessage`` reaching the fake.
  Everything in between is Homarus (the envelope parsed, the message committed and acknowledged,
  access, routing, journal, the agent turn with the scripted model, mrkdwn, the outbox) plus one
  WebSocket frame each way and one loopback HTTP exchange. Target: the same ≤ 15 ms of
  orchestration as Telegram (issue #33).
* **burst**: ``chats * per-chat`` messages sent at once in ``chats`` DMs (one session each);
  every text is unique and echoed: lost = never answered, duplicated = twice.
* **idle RSS**: the gateway 3 s after start, without channels and with a connected Slack app.
  Target: ≤ 10 MB more with Slack.
* **import**: what importing the Slack account (its Socket Mode and Web API clients) costs a fresh
  interpreter that has the gateway's own imports already.
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

from tests.fakes.slack_server import FakeSlack, run_fake_slack

from bench.channel_parts import burst_counts, channel_args, channel_gateway, channel_table, idle_rss, wait_until
from bench.harness import GatewayProcess, bench_main, machine_facts, progress, summarize

LATENCY_USER = "U0LATENCY1"
LATENCY_DM = "D0LATENCY1"
TOKEN_RE = re.compile(r"b-\d+-\d+")


def _users(n: int) -> list[str]:
    return [f"U0BENCH{i:04d}" for i in range(n)]


def _dm(user: str) -> str:
    return "D" + user[1:]


def _config(fake: FakeSlack | None, users: Sequence[str]) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "agents": {"defaults": {"heartbeat": {"every": "0m"}}},
        "session": {"dmScope": "per-channel-peer"},
        # followup: every message is its own turn, so each echoed reply names exactly its message
        "messages": {"inbound": {"debounceMs": 0}, "queue": {"mode": "followup"}},
    }
    if fake is not None:
        cfg["channels"] = {
            "slack": {
                "botToken": fake.bot_token,
                "appToken": fake.app_token,
                "apiRoot": fake.api_root,
                "dmPolicy": "allowlist",
                "allowFrom": [LATENCY_USER, *users],
            }
        }
    return cfg


def _gateway(config: dict[str, Any]) -> GatewayProcess:
    return channel_gateway(config, "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN")


def _wait(check: Any, timeout_s: float, what: str) -> None:
    wait_until(check, timeout_s, what, poll_s=0.002)


def measure_latency(fake: FakeSlack, n: int) -> list[float]:
    samples: list[float] = []
    for i in range(n + 5):  # the first few warm the path (imports, the session, the sqlite pages)
        before = len(fake.posted)
        offered = time.time()
        fake.user_message(LATENCY_DM, LATENCY_USER, f"latency {i}")
        _wait(lambda b=before: len(fake.posted) > b, 10, "the reply")
        if i >= 5:
            samples.append((fake.posted[before].at - offered) * 1000)
    return samples


def measure_burst(fake: FakeSlack, users: Sequence[str], per_user: int, timeout_s: float) -> dict[str, Any]:
    expected = [f"b-{user[-3:]}-{i}" for i in range(per_user) for user in users]
    before = len(fake.posted)
    started = time.time()
    for i in range(per_user):
        for user in users:
            fake.user_message(_dm(user), user, f"b-{user[-3:]}-{i}")

    def answered() -> Counter[str]:
        return Counter(t for p in fake.posted[before:] for t in TOKEN_RE.findall(p.text))

    deadline = time.monotonic() + timeout_s
    while len(answered()) < len(expected) and time.monotonic() < deadline:
        time.sleep(0.05)
    finished = max((p.at for p in fake.posted[before:]), default=started)
    time.sleep(1.0)  # a duplicate would show up now
    return burst_counts(expected, answered(), len(users), len(fake.posted) - before, started, finished)


def _idle_connected(fake: FakeSlack, users: Sequence[str], settle_s: float) -> float:
    connected = fake.connections
    return idle_rss(_gateway(_config(fake, users)), settle_s, lambda: fake.connections > connected)


def import_cost_ms(runs: int = 5) -> float:
    """The least time ``import homarus.channels.slack.account`` takes after the gateway's imports."""
    import subprocess

    code = (
        "import time, homarus.gateway.app, homarus.channels.manager;"
        "t = time.perf_counter(); import homarus.channels.slack.account;"
        "print((time.perf_counter() - t) * 1000)"
    )
    times = [float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(runs)]
    return round(min(times), 1)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    users = _users(args.burst_chats)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_facts(),
        "loadavg_before": list(os.getloadavg()),
    }
    with run_fake_slack() as fake:
        fake.add_channel(LATENCY_DM, *(_dm(user) for user in users))
        gw = _gateway(_config(fake, users))
        try:
            gw.start()
            gw.wait_healthy()
            _wait(lambda: fake.connections >= 1, 30, "the Socket Mode connection")
            progress("latency: %d messages one at a time", args.latency_n)
            latency = measure_latency(fake, args.latency_n)
            progress("burst: %d messages in %d DMs", args.burst_chats * args.burst_per_chat, args.burst_chats)
            burst = measure_burst(fake, users, args.burst_per_chat, args.burst_timeout)
            rss_after = gw.rss_mib()
        finally:
            gw.cleanup()
        progress("idle RSS with and without Slack")
        with_slack = [_idle_connected(fake, users, args.settle) for _ in range(args.rss_runs)]
    without = [idle_rss(_gateway(_config(None, users)), args.settle) for _ in range(args.rss_runs)]
    result.update(
        latency=summarize(latency),
        burst=burst,
        rss_after_burst_mib=round(rss_after, 1),
        idle_rss_mib={"without": round(min(without), 1), "with_slack": round(min(with_slack), 1)},
        import_ms=import_cost_ms(),
        loadavg_after=list(os.getloadavg()),
    )
    return result


def render(r: dict[str, Any]) -> str:
    table = channel_table(
        r,
        path="envelope → chat.postMessage",
        target_ms=15,
        chats="DMs",
        rss_key="with_slack",
        with_what="a Slack app connected",
    )
    return f"{table}\nimport homarus.channels.slack.account: {r['import_ms']} ms (after the gateway's imports)\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return channel_args(argv, __doc__)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render))
