"""The Gateway session on its own, against the fake Gateway: identify and dispatch order, fatal
closes, a zombie connection, an invalid session, and a resume after a lost connection."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from homarus.channels.discord.gateway import Gateway, GatewayStopped, ResumeState
from tests.fakes.discord_server import FAKE_TOKEN, FakeDiscord, run_fake_discord
from tests.waiting import wait_for

log = logging.getLogger("test.discord")


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, int | None]] = []

    async def __call__(self, name: str, data: dict[str, Any], seq: int | None) -> None:
        self.events.append((name, seq))

    def names(self) -> list[str]:
        return [n for n, _ in self.events]


async def run(gateway: Gateway) -> asyncio.Task[None]:
    return asyncio.create_task(gateway.run())


async def stop(gateway: Gateway, task: asyncio.Task[None]) -> None:
    gateway.stop()
    task.cancel()
    with pytest.raises((asyncio.CancelledError, GatewayStopped)):
        await task


def gateway(fake: FakeDiscord, recorder: Recorder, **kw: Any) -> Gateway:
    return Gateway(kw.pop("token", FAKE_TOKEN), fake.gateway_url, recorder, log=log, **kw)


async def test_identify_then_every_dispatch_in_order_with_its_sequence_number() -> None:
    with run_fake_discord() as fake:
        fake.add_guild("400", {"50": 0})
        recorder = Recorder()
        gw = gateway(fake, recorder)
        task = await run(gw)
        await wait_for(lambda: "GUILD_CREATE" in recorder.names(), what="the guild")
        fake.user_message("50", "7", "hi", guild_id="400")
        await wait_for(lambda: "MESSAGE_CREATE" in recorder.names(), what="the message")
        assert recorder.events == [("READY", 1), ("GUILD_CREATE", 2), ("MESSAGE_CREATE", 3)]
        assert gw.state.session_id == "session-1" and gw.state.seq == 3 and fake.identifies == 1
        await stop(gw, task)


@pytest.mark.parametrize(
    ("kw", "expected"),
    [({"token": "wrong"}, "4004"), ({"intents": 1 << 9}, "Message Content intent")],
)
async def test_a_refused_token_or_intents_stop_the_session_with_the_reason(kw: dict[str, Any], expected: str) -> None:
    with run_fake_discord() as fake:
        gw = gateway(fake, Recorder(), **kw)
        with pytest.raises(GatewayStopped, match=expected):
            await asyncio.wait_for(gw.run(), 10)
        assert gw.connections == 1  # no retry can fix it


async def test_a_zombie_connection_is_closed_and_resumed() -> None:
    with run_fake_discord() as fake:
        fake.heartbeat_interval_ms = 150
        fake.ack_heartbeats = False
        recorder = Recorder()
        gw = gateway(fake, recorder)
        task = await run(gw)
        await wait_for(lambda: "RESUMED" in recorder.names(), what="the resume after the missing ACK")
        fake.ack_heartbeats = True
        assert fake.identifies == 1 and fake.resumes >= 1
        await stop(gw, task)


async def test_an_invalid_session_identifies_anew_and_a_lost_connection_resumes() -> None:
    with run_fake_discord() as fake:
        fake.add_dm("50")
        recorder = Recorder()
        gw = gateway(fake, recorder)
        gw.invalid_session_wait = (0.0, 0.05)
        task = await run(gw)
        await wait_for(lambda: "READY" in recorder.names(), what="the session")
        fake.drop()
        fake.user_message("50", "7", "while away")
        await wait_for(lambda: "RESUMED" in recorder.names(), what="the resume")
        await wait_for(lambda: recorder.names().count("MESSAGE_CREATE") == 1, what="the replayed message")
        assert fake.resumes == 1 and fake.identifies == 1
        fake.forget_sessions()
        fake.drop()
        await wait_for(lambda: recorder.names().count("READY") == 2, what="a new session")
        assert fake.identifies == 2 and gw.state.session_id == "session-2"
        await stop(gw, task)


def test_the_resume_state_round_trips_and_a_damaged_one_starts_fresh() -> None:
    state = ResumeState("s1", "wss://resume", 42)
    assert ResumeState.from_json(state.to_json()) == state
    assert ResumeState.from_json("not json") == ResumeState()
    assert ResumeState.from_json('{"seq": "x"}') == ResumeState()
    assert ResumeState.from_json(None) == ResumeState()
