"""WhatsApp delivery that never loses or duplicates, proved with SIGKILL: a burst of 50 messages
from 10 people as Cloud API webhooks, the gateway killed twice in the middle of it. A webhook the
dead gateway did not answer 200 is delivered again (as Meta retries), one committed but not
answered is dropped by the inbox, and every message is answered exactly once in the end (a real
gateway process, the fake Graph API and webhook sender, a fake model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.channels.crash_burst import burst_config, burst_killed_twice, echo_slowly
from tests.fakes import run_fake_llm
from tests.fakes.whatsapp_server import PHONE_NUMBER_ID, VERIFY_TOKEN, FakeWhatsApp, run_fake_whatsapp
from tests.gateway.crash_harness import Crashable, crashable

PEOPLE = [f"1555777{i:04d}" for i in range(10)]


def whatsapp_config(llm_url: str, fake: FakeWhatsApp) -> dict[str, Any]:
    return burst_config(
        llm_url,
        {
            "whatsapp": {
                "accessToken": fake.token,
                "phoneNumberId": PHONE_NUMBER_ID,
                "appSecret": fake.app_secret,
                "verifyToken": VERIFY_TOKEN,
                "apiRoot": fake.api_root,
                "dmPolicy": "allowlist",
                "allowFrom": [f"+{p}" for p in PEOPLE],
                "sendReadReceipts": False,
            }
        },
    )


async def test_a_burst_of_50_messages_killed_twice_gets_exactly_one_answer_each(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_fake_whatsapp() as fake:
        echo_slowly(llm)
        with crashable(tmp_path, whatsapp_config(llm.base_url, fake)) as box:

            def point(at: Crashable = box) -> None:
                fake.callback_url = at.http + "/whatsapp/webhook"

            box.start()
            point()
            await burst_killed_twice(
                box,
                PEOPLE,
                lambda person, text: fake.user_message(person, text),
                lambda: [(s.to, s.text) for s in list(fake.sent)],
                restarted=point,
            )
            assert fake.undelivered == 0  # every notification answered 200 in the end
