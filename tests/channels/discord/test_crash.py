"""Discord delivery that never loses or duplicates, proved with SIGKILL: a burst of 50 messages in
10 DM channels, the gateway killed twice in the middle of it; the Gateway session is resumed from
the cursor committed with the messages, and every message is answered exactly once in the end (a
real gateway process, the fake Discord Gateway and REST API, a fake model)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from tests.fakes import Reply, run_fake_llm
from tests.fakes.discord_server import FakeDiscord, run_fake_discord
from tests.fakes.llm_server import RecordedRequest
from tests.gateway.crash_harness import config, crashable, user_texts
from tests.waiting import wait_for

USERS = [str(810000000000000000 + i) for i in range(10)]
DMS = {user: str(820000000000000000 + i) for i, user in enumerate(USERS)}
PER_USER = 5


def discord_config(llm_url: str, fake: FakeDiscord) -> dict[str, Any]:
    cfg = config(llm_url)
    cfg["channels"] = {
        "discord": {"token": fake.token, "apiRoot": fake.api_root, "dmPolicy": "allowlist", "allowFrom": USERS}
    }
    cfg["session"] = {"dmScope": "per-channel-peer"}  # a session per user
    cfg["messages"] = {"queue": {"mode": "followup"}, "inbound": {"debounceMs": 0}}  # one turn per message
    return cfg


def answered(fake: FakeDiscord) -> Counter[str]:
    return Counter(p.content for p in list(fake.posted) if p.content.startswith("msg-"))


async def test_a_burst_of_50_messages_killed_twice_gets_exactly_one_answer_each(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_fake_discord() as fake:
        for dm in DMS.values():
            fake.add_dm(dm)

        def respond(request: RecordedRequest) -> Reply | None:
            texts = user_texts(request.json)
            return Reply(texts[-1].strip() if texts else "?", delay_s=0.15)

        llm.respond = respond
        with crashable(tmp_path, discord_config(llm.base_url, fake)) as box:
            box.start()
            await wait_for(lambda: fake.identifies == 1, what="the bot's session")
            expected = []
            for i in range(PER_USER):
                for user in USERS:
                    text = f"msg-{user[-2:]}-{i}"
                    expected.append(text)
                    fake.user_message(DMS[user], user, text)
            await wait_for(lambda: len(answered(fake)) >= 8, timeout=30, what="the first answers")
            box.kill9()  # mid-burst: runs waiting on the model, pieces in the outbox, dispatches unread
            first_kill = sum(answered(fake).values())
            box.start()
            await wait_for(lambda: sum(answered(fake).values()) >= first_kill + 10, timeout=30, what="more answers")
            box.kill9()
            box.start()
            await wait_for(lambda: len(answered(fake)) == len(expected), timeout=60, what="every answer")
            await asyncio.sleep(1.0)  # anything sent twice would show up now
            counts = answered(fake)
            assert sorted(counts) == sorted(expected)
            assert {t: n for t, n in counts.items() if n != 1} == {}  # exactly once each
            for user in USERS:  # per conversation, the answers came in the order the messages were sent
                mine = [t for t in fake.posted_to(DMS[user]) if t.startswith("msg-")]
                assert mine == [f"msg-{user[-2:]}-{i}" for i in range(PER_USER)], (user, mine)
            assert fake.identifies == 1 and fake.resumes == 2  # both restarts resumed the one session
