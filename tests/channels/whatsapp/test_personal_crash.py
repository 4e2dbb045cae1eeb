"""A personal WhatsApp number never loses or repeats a message, proved with SIGKILL: a burst of 50
messages from 10 people to a linked device, the gateway killed twice in the middle of it. The
device acknowledges a message only after its commit, so WhatsApp (the loopback stand-in of
``tests/fakes/whatsapp_web_server.py``) delivers what a dead gateway had not committed again on
the next connection, the inbox drops what it had, and every message is answered exactly once. The
engine is a third-party plugin (``web_engine/``) registered as any other engine would be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.channels.crash_burst import burst_config, burst_killed_twice, echo_slowly
from tests.fakes import run_fake_llm
from tests.fakes.whatsapp_web_server import OWN_JID, FakeWhatsAppWebServer, run_fake_whatsapp_web
from tests.gateway.crash_harness import crashable
from tests.waiting import wait_for

PEOPLE = [f"1555888{i:04d}" for i in range(10)]
ENGINE = Path(__file__).resolve().parent / "web_engine"


def personal_config(llm_url: str, fake: FakeWhatsAppWebServer, auth_dir: Path) -> dict[str, Any]:
    return burst_config(
        llm_url,
        {
            "whatsapp": {
                "mode": "personal",
                "engine": "loopback",
                "authDir": str(auth_dir),
                "dmPolicy": "allowlist",
                "allowFrom": [f"+{p}" for p in PEOPLE],
                "sendReadReceipts": False,
            }
        },
        plugins={
            "load": {"paths": [str(ENGINE)]},
            "entries": {"whatsapp-web-loopback": {"config": {"address": fake.address}}},
        },
    )


def linked_before(auth_dir: Path) -> None:
    """The number was linked in an earlier run (its session and the link's record are there)."""
    auth_dir.mkdir(mode=0o700)
    (auth_dir / "linked.json").write_text(json.dumps({"jid": OWN_JID, "number": "+15550009999"}))
    (auth_dir / "session.loop").write_text(OWN_JID)


async def test_a_burst_of_50_messages_killed_twice_gets_exactly_one_answer_each(tmp_path: Path) -> None:
    auth_dir = tmp_path / "whatsapp-session"
    linked_before(auth_dir)
    with run_fake_llm() as llm, run_fake_whatsapp_web() as fake:
        echo_slowly(llm)
        with crashable(tmp_path, personal_config(llm.base_url, fake, auth_dir)) as box:
            box.start()
            await wait_for(lambda: fake.writer is not None, what="the linked device connected")
            await burst_killed_twice(
                box,
                PEOPLE,
                fake.message,
                lambda: [(chat.split("@")[0], text) for chat, text in list(fake.sent)],
            )
            assert fake.held == [] and fake.connections >= 3  # all acknowledged, over three connections
