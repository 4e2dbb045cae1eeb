"""WhatsApp (personal number, linked device) benchmark: message → reply latency, a 1,000-message
burst, idle memory.

Run with ``.venv/bin/python bench/whatsapp_personal_bench.py [--latency-n N] [--burst-chats N
--burst-per-chat N]``. One ``homarus gateway run`` process (fresh state dir, the built-in scripted
model answering with the user's text) runs a personal account, linked before the start, whose
engine is the loopback plugin of ``tests/channels/whatsapp/web_engine/`` talking JSON lines to
``tests/fakes/whatsapp_web_server.py`` (WhatsApp Web's own protocol cannot be served here; the
engine stands where whatsmeow would, so what is measured is everything on the gateway's side):

* **latency**: one message at a time from an allowed number; the time from the message being
  written to the device's connection to the reply's ``send`` reaching the stand-in: the handler,
  the commit before the acknowledgement, access, routing, journal, the agent turn with the
  scripted model, formatting, the outbox. Read receipts off. Target: the ≤ 15 ms of issue #33.
* **burst**: ``chats * per-chat`` messages at once from ``chats`` numbers (one session each);
  lost = never answered, duplicated = twice.
* **idle RSS**: the gateway 3 s after start, without channels and with the linked number.
* **import**: what importing the personal account costs after the gateway's imports (the
  neonize engine is not part of it: ``bench/whatsapp_engine_import.py`` measures that).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.whatsapp_web_server import OWN_JID, FakeWhatsAppWebServer, run_fake_whatsapp_web

from bench.channel_parts import Platform, base_config, channel_args, render_platform, run_platform
from bench.harness import GatewayProcess, bench_main

LATENCY_USER = "15550008888"
ENGINE = Path(__file__).resolve().parents[1] / "tests" / "channels" / "whatsapp" / "web_engine"


def linked_session() -> str:
    """A session directory as a number linked earlier leaves it."""
    where = Path(tempfile.mkdtemp(prefix="homarus-bench-wa-"))
    (where / "linked.json").write_text(json.dumps({"jid": OWN_JID, "number": "+15550009999"}))
    (where / "session.loop").write_text(OWN_JID)
    return str(where)


def platform(fake: FakeWhatsAppWebServer) -> Platform:
    def config(users: Sequence[str] | None) -> dict[str, Any]:
        cfg = base_config()
        if users is not None:
            cfg["plugins"] = {
                "load": {"paths": [str(ENGINE)]},
                "entries": {"whatsapp-web-loopback": {"config": {"address": fake.address}}},
            }
            allowed = [f"+{u}" for u in (LATENCY_USER, *users)]
            personal = {"mode": "personal", "engine": "loopback", "authDir": linked_session()}
            cfg["channels"] = {
                "whatsapp": {**personal, "sendReadReceipts": False, "dmPolicy": "allowlist", "allowFrom": allowed}
            }
        return cfg

    def connection(gw: GatewayProcess) -> Any:
        before = fake.connections
        return lambda: fake.connections > before and fake.writer is not None

    def replies() -> list[tuple[float, str]]:
        with fake.lock:
            return [(at, text) for at, (_, text) in zip(fake.sent_at, fake.sent, strict=True)]

    return Platform(
        id="whatsapp",
        label="WhatsApp (personal)",
        config=config,
        token_envs=("WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"),
        connection=connection,
        offer=fake.message,
        replies=replies,
        count=lambda: len(fake.sent),
        path="message → send",
        chats="numbers",
        with_what="a linked personal number",
        module="homarus.channels.whatsapp.personal",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    users = [f"1555200{i:04d}" for i in range(args.burst_chats)]
    with run_fake_whatsapp_web() as fake:
        return run_platform(args, platform(fake), users, LATENCY_USER)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return channel_args(argv, __doc__)


if __name__ == "__main__":
    sys.exit(bench_main(None, parse_args, run, render_platform))
