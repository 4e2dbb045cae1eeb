"""Delivery that never loses or duplicates, proved with SIGKILL: a burst of 50 Telegram messages
from 10 chats, the gateway killed twice in the middle of it, and every message answered exactly
once in the end (a real gateway process, the fake Bot API server, a fake model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.channels.crash_burst import burst_config, burst_killed_twice, echo_slowly
from tests.fakes import run_fake_llm
from tests.fakes.telegram_server import FakeTelegram, run_fake_telegram
from tests.gateway.crash_harness import crashable

CHATS = [1000 + i for i in range(10)]


def telegram_config(llm_url: str, fake: FakeTelegram) -> dict[str, Any]:
    return burst_config(
        llm_url,
        {"telegram": {"botToken": fake.token, "apiRoot": fake.api_root, "dmPolicy": "allowlist", "allowFrom": CHATS}},
    )


async def test_a_burst_of_50_messages_killed_twice_gets_exactly_one_answer_each(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_fake_telegram() as fake:
        echo_slowly(llm)
        with crashable(tmp_path, telegram_config(llm.base_url, fake)) as box:
            box.start()
            await burst_killed_twice(
                box,
                [str(chat) for chat in CHATS],
                lambda chat, text: fake.user_message(int(chat), text),
                lambda: [(m.chat_id, m.text) for m in list(fake.sent)],
            )
            assert fake.pending_updates == 0  # every update was acknowledged
            channel_runs = [r for r in box.journal().values() if r["kind"] == "channel"]
            assert len(channel_runs) == 50 and {r["status"] for r in channel_runs} == {"ok"}
