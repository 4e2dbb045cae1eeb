"""Discord delivery that never loses or duplicates, proved with SIGKILL: a burst of 50 messages in
10 DM channels, the gateway killed twice in the middle of it; the Gateway session is resumed from
the cursor committed with the messages, and every message is answered exactly once in the end (a
real gateway process, the fake Discord Gateway and REST API, a fake model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.channels.crash_burst import burst_config, burst_killed_twice, echo_slowly
from tests.fakes import run_fake_llm
from tests.fakes.discord_server import FakeDiscord, run_fake_discord
from tests.gateway.crash_harness import crashable
from tests.waiting import wait_for

USERS = [str(810000000000000000 + i) for i in range(10)]
DMS = {str(820000000000000000 + i): user for i, user in enumerate(USERS)}


def discord_config(llm_url: str, fake: FakeDiscord) -> dict[str, Any]:
    return burst_config(
        llm_url,
        {"discord": {"token": fake.token, "apiRoot": fake.api_root, "dmPolicy": "allowlist", "allowFrom": USERS}},
    )


async def test_a_burst_of_50_messages_killed_twice_gets_exactly_one_answer_each(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_fake_discord() as fake:
        for dm in DMS:
            fake.add_dm(dm)
        echo_slowly(llm)
        with crashable(tmp_path, discord_config(llm.base_url, fake)) as box:
            box.start()
            await wait_for(lambda: fake.identifies == 1, what="the bot's session")
            await burst_killed_twice(
                box,
                list(DMS),
                lambda dm, text: fake.user_message(dm, DMS[dm], text),
                lambda: [(p.channel_id, p.content) for p in list(fake.posted)],
            )
            assert fake.identifies == 1 and fake.resumes == 2  # both restarts resumed the one session
