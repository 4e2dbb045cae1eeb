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
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.discord_server import FakeDiscord, run_fake_discord

from bench.channel_parts import Platform, base_config, channel_args, render_platform, run_platform
from bench.harness import GatewayProcess, bench_main

LATENCY_USER = "830000000000000000"


def _dm(user: str) -> str:
    return str(int(user) + 10**15)


def platform(fake: FakeDiscord) -> Platform:
    def config(users: Sequence[str] | None) -> dict[str, Any]:
        cfg = base_config()
        if users is not None:
            allowed = [LATENCY_USER, *users]
            discord = {"token": fake.token, "apiRoot": fake.api_root, "dmPolicy": "allowlist", "allowFrom": allowed}
            cfg["channels"] = {"discord": discord}
        return cfg

    def connection(_gw: GatewayProcess) -> Any:
        identified = fake.identifies
        return lambda: fake.identifies > identified

    return Platform(
        id="discord",
        label="Discord",
        config=config,
        token_envs=("DISCORD_BOT_TOKEN",),
        connection=connection,
        offer=lambda user, text: fake.user_message(_dm(user), user, text),
        replies=lambda: [(p.at, p.content) for p in list(fake.posted)],
        count=lambda: len(fake.posted),
        path="MESSAGE_CREATE → POST message",
        chats="DMs",
        with_what="a Discord bot connected",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    users = [str(850000000000000000 + i) for i in range(args.burst_chats)]
    with run_fake_discord() as fake:
        fake.bucket_limit = 1_000_000
        for user in [LATENCY_USER, *users]:
            fake.add_dm(_dm(user))
        return run_platform(args, platform(fake), users, LATENCY_USER)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return channel_args(argv, __doc__)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render_platform))
