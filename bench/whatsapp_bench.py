"""WhatsApp (Cloud API) benchmark: webhook → reply latency, a 1,000-message burst, idle memory.

Run with ``.venv/bin/python bench/whatsapp_bench.py [--latency-n N] [--burst-chats N --burst-per-chat N]``.
One ``homarus gateway run`` process (fresh state dir, the built-in scripted model answering with
the user's text) receives the signed webhooks of the fake Cloud API of
``tests/fakes/whatsapp_server.py`` on loopback and answers through its Graph API (Meta's wire
formats both ways):

* **latency**: one message at a time from an allowed number; the time from the notification being
  queued at the fake to the reply's ``POST /<number>/messages`` reaching it. Everything in between
  is Homarus (the signature checked, the message committed before the 200, access, routing,
  journal, the agent turn with the scripted model, formatting, the outbox) plus two loopback HTTP
  exchanges. Read receipts are off for the run (each would be one more request). Target: the same
  ≤ 15 ms of orchestration as Telegram (issue #33).
* **burst**: ``chats * per-chat`` messages sent at once from ``chats`` numbers (one session each),
  one webhook each, in order; every text is unique and echoed: lost = never answered, duplicated
  = twice.
* **idle RSS**: the gateway 3 s after start, without channels and with a WhatsApp number.
  Target: ≤ 10 MB more with WhatsApp.
* **import**: what importing the WhatsApp account costs a fresh interpreter that has the gateway's
  own imports already.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from tests.fakes.whatsapp_server import PHONE_NUMBER_ID, VERIFY_TOKEN, FakeWhatsApp, run_fake_whatsapp

from bench.channel_parts import Platform, base_config, channel_args, render_platform, run_platform
from bench.harness import GatewayProcess, bench_main

LATENCY_USER = "15550009999"


def platform(fake: FakeWhatsApp) -> Platform:
    def config(users: Sequence[str] | None) -> dict[str, Any]:
        cfg = base_config()
        if users is not None:
            whatsapp = {
                "accessToken": fake.token,
                "phoneNumberId": PHONE_NUMBER_ID,
                "appSecret": fake.app_secret,
                "verifyToken": VERIFY_TOKEN,
                "apiRoot": fake.api_root,
                "sendReadReceipts": False,
            }
            allowed = [f"+{u}" for u in (LATENCY_USER, *users)]
            cfg["channels"] = {"whatsapp": {**whatsapp, "dmPolicy": "allowlist", "allowFrom": allowed}}
        return cfg

    def connection(gw: GatewayProcess) -> Any:
        def pointed() -> bool:
            """The fake delivers to this gateway; the verification GET answered means the account runs."""
            fake.callback_url = f"http://127.0.0.1:{gw.port}/whatsapp/webhook"
            query = {"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1"}
            with httpx.Client(timeout=2) as client:
                return client.get(fake.callback_url, params=query).status_code == 200

        return pointed

    return Platform(
        id="whatsapp",
        label="WhatsApp",
        config=config,
        token_envs=("WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"),
        connection=connection,
        offer=fake.user_message,
        replies=lambda: [(s.at, s.text) for s in list(fake.sent)],
        count=lambda: len(fake.sent),
        path="webhook → POST messages",
        chats="numbers",
        with_what="a WhatsApp number",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    users = [f"1555100{i:04d}" for i in range(args.burst_chats)]
    with run_fake_whatsapp() as fake:
        return run_platform(args, platform(fake), users, LATENCY_USER)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return channel_args(argv, __doc__)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render_platform))
