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
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.slack_server import FakeSlack, run_fake_slack

from bench.channel_parts import Platform, base_config, channel_args, render_platform, run_platform
from bench.harness import GatewayProcess, bench_main

LATENCY_USER = "U0LATENCY1"


def _dm(user: str) -> str:
    return "D" + user[1:]


def platform(fake: FakeSlack) -> Platform:
    def config(users: Sequence[str] | None) -> dict[str, Any]:
        cfg = base_config()
        if users is not None:
            slack = {"botToken": fake.bot_token, "appToken": fake.app_token, "apiRoot": fake.api_root}
            cfg["channels"] = {"slack": {**slack, "dmPolicy": "allowlist", "allowFrom": [LATENCY_USER, *users]}}
        return cfg

    def connection(_gw: GatewayProcess) -> Any:
        connected = fake.connections
        return lambda: fake.connections > connected

    return Platform(
        id="slack",
        label="Slack",
        config=config,
        token_envs=("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"),
        connection=connection,
        offer=lambda user, text: fake.user_message(_dm(user), user, text),
        replies=lambda: [(p.at, p.text) for p in list(fake.posted)],
        count=lambda: len(fake.posted),
        path="envelope → chat.postMessage",
        chats="DMs",
        with_what="a Slack app connected",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    users = [f"U0BENCH{i:04d}" for i in range(args.burst_chats)]
    with run_fake_slack() as fake:
        fake.add_channel(*(_dm(user) for user in [LATENCY_USER, *users]))
        return run_platform(args, platform(fake), users, LATENCY_USER)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return channel_args(argv, __doc__)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render_platform))
