"""Slack delivery that never loses or duplicates, proved with SIGKILL: a burst of 50 messages in
10 DMs over Socket Mode, the gateway killed twice in the middle of it. Envelopes not acknowledged
when it died come again on the next connection (as Slack retries them); ones committed but not
acknowledged are dropped by the inbox; every message is answered exactly once in the end (a real
gateway process, the fake Socket Mode server and Web API, a fake model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.channels.crash_burst import burst_config, burst_killed_twice, echo_slowly
from tests.fakes import run_fake_llm
from tests.fakes.slack_server import FakeSlack, run_fake_slack
from tests.gateway.crash_harness import crashable
from tests.waiting import wait_for

USERS = [f"U0CRASH{i:03d}" for i in range(10)]
DMS = {f"D0CRASH{i:03d}": user for i, user in enumerate(USERS)}


def slack_config(llm_url: str, fake: FakeSlack) -> dict[str, Any]:
    slack = {"botToken": fake.bot_token, "appToken": fake.app_token, "apiRoot": fake.api_root}
    return burst_config(llm_url, {"slack": {**slack, "dmPolicy": "allowlist", "allowFrom": USERS}})


async def test_a_burst_of_50_messages_killed_twice_gets_exactly_one_answer_each(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_fake_slack() as fake:
        fake.add_channel(*DMS)
        echo_slowly(llm)
        with crashable(tmp_path, slack_config(llm.base_url, fake)) as box:
            box.start()
            await wait_for(lambda: fake.connections == 1, what="the Socket Mode connection")
            await burst_killed_twice(
                box,
                list(DMS),
                lambda dm, text: fake.user_message(dm, DMS[dm], text),
                lambda: [(p.channel, p.text) for p in list(fake.posted)],
            )
            assert fake.connections == 3 and not fake.unacked  # every envelope acknowledged in the end
