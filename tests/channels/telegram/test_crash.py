"""Delivery that never loses or duplicates, proved with SIGKILL: a burst of 50 Telegram messages
from 10 chats, the gateway killed twice in the middle of it, and every message answered exactly
once in the end (a real gateway process, the fake Bot API server, a fake model)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from tests.fakes import Reply, run_fake_llm
from tests.fakes.llm_server import RecordedRequest
from tests.fakes.telegram_server import FakeTelegram, run_fake_telegram
from tests.gateway.crash_harness import config, crashable, user_texts
from tests.waiting import wait_for

CHATS = [1000 + i for i in range(10)]
PER_CHAT = 5


def telegram_config(llm_url: str, fake: FakeTelegram) -> dict[str, Any]:
    cfg = config(llm_url)
    cfg["channels"] = {
        "telegram": {"botToken": fake.token, "apiRoot": fake.api_root, "dmPolicy": "allowlist", "allowFrom": CHATS}
    }
    cfg["session"] = {"dmScope": "per-channel-peer"}  # a session per chat
    cfg["messages"] = {"queue": {"mode": "followup"}, "inbound": {"debounceMs": 0}}  # one turn per message
    return cfg


def answered(fake: FakeTelegram) -> Counter[str]:
    return Counter(m.text for m in list(fake.sent) if m.text.startswith("msg-"))


async def test_a_burst_of_50_messages_killed_twice_gets_exactly_one_answer_each(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_fake_telegram() as fake:

        def respond(request: RecordedRequest) -> Reply | None:
            texts = user_texts(request.json)
            return Reply(texts[-1].strip() if texts else "?", delay_s=0.15)

        llm.respond = respond
        with crashable(tmp_path, telegram_config(llm.base_url, fake)) as box:
            box.start()
            expected = []
            for i in range(PER_CHAT):
                for chat in CHATS:
                    text = f"msg-{chat}-{i}"
                    expected.append(text)
                    fake.user_message(chat, text)
            await wait_for(lambda: len(answered(fake)) >= 8, timeout=30, what="the first answers")
            box.kill9()  # mid-burst: runs waiting on the model, pieces in the outbox, updates unconfirmed
            first_kill = sum(answered(fake).values())
            box.start()
            try:
                await wait_for(lambda: sum(answered(fake).values()) >= first_kill + 10, timeout=30, what="more answers")
            except AssertionError:
                print(box.proc.stderr[-6000:], box.proc.stdout[-3000:], answered(fake), first_kill)
                raise
            box.kill9()
            box.start()
            await wait_for(lambda: len(answered(fake)) == len(expected), timeout=60, what="every answer")
            await asyncio.sleep(1.0)  # anything sent twice would show up now
            counts = answered(fake)
            assert sorted(counts) == sorted(expected)
            assert {t: n for t, n in counts.items() if n != 1} == {}  # exactly once each
            for chat in CHATS:  # per chat, the answers came in the order the messages were sent
                mine = [t for t in fake.texts_to(chat) if t.startswith("msg-")]
                assert mine == [f"msg-{chat}-{i}" for i in range(PER_CHAT)], (chat, mine)
            assert fake.pending_updates == 0  # every update was acknowledged
            journal = box.journal()
            channel_runs = [r for r in journal.values() if r["kind"] == "channel"]
            assert len(channel_runs) == len(expected) and {r["status"] for r in channel_runs} == {"ok"}
