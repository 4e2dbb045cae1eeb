"""Discord end to end: a real gateway, Discord's real wire formats (a fake Gateway and REST API on
loopback), a scripted model. DM pairing, allowed DMs, guild channels with mention gating and
roles, threads, long replies, rate limits, and a Gateway connection lost mid-conversation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from homarus.messages import ImageContent, UserMessage
from homarus.providers.scripted import Gate, Reply, ScriptedProvider
from tests.channels.operator import operator
from tests.conftest import RunningGateway, run_gateway
from tests.fakes.discord_server import FakeDiscord, run_fake_discord
from tests.waiting import wait_for

OWNER = "111111111111111111"
STRANGER = "222222222222222222"
DM_OWNER = "300000000000000001"
DM_STRANGER = "300000000000000002"
GUILD = "400000000000000001"
GENERAL = "500000000000000001"
RANDOM = "500000000000000002"
FORUM = "500000000000000003"
POST = "600000000000000001"


def config(fake: FakeDiscord, **discord: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "channels": {"discord": {"token": fake.token, "apiRoot": fake.api_root, **discord}},
        "messages": {"inbound": {"debounceMs": 0}},
        "commands": {"ownerAllowFrom": [f"discord:{OWNER}"]},
    }


@contextmanager
def discord_gateway(tmp_path: Path, **discord: Any) -> Iterator[tuple[RunningGateway, FakeDiscord, ScriptedProvider]]:
    with run_fake_discord() as fake:
        fake.add_dm(DM_OWNER)
        fake.add_dm(DM_STRANGER)
        fake.add_guild(GUILD, {GENERAL: 0, RANDOM: 0, FORUM: 15}, threads={POST: FORUM})
        with run_gateway(tmp_path, config=config(fake, **discord)) as gw:
            provider = ScriptedProvider(then="echo")
            gw.gateway.models.overrides["test"] = provider
            yield gw, fake, provider


async def started(gw: RunningGateway, fake: FakeDiscord) -> None:
    await wait_for(lambda: fake.identifies >= 1, what="the bot's IDENTIFY")


async def test_an_unknown_dm_gets_a_pairing_code_and_an_approved_one_an_answer(tmp_path: Path) -> None:
    with discord_gateway(tmp_path) as (gw, fake, provider):
        await started(gw, fake)
        fake.user_message(DM_STRANGER, STRANGER, "hello, who are you?", username="eve")
        await wait_for(lambda: fake.posted_to(DM_STRANGER), what="the pairing reply")
        reply = fake.posted_to(DM_STRANGER)[0]
        assert "Pairing code:" in reply and STRANGER in reply
        assert provider.requests == []
        code = reply.split("Pairing code: ")[1].split()[0]
        pairing = await operator(gw, ["operator.pairing"])
        approved = await pairing.request(
            "channels.pairing.approve", {"channel": "discord", "accountId": "default", "requestId": code}
        )
        assert approved["ok"], approved
        provider.push(Reply("Hi Eve."))
        fake.user_message(DM_STRANGER, STRANGER, "now?", username="eve")
        await wait_for(lambda: "Hi Eve." in fake.posted_to(DM_STRANGER), what="the answer")
        posted = fake.posted[-1]
        assert posted.body["allowed_mentions"] == {"parse": [], "replied_user": False}  # pings nobody
        assert all("who are you" not in str(m.content) for r in provider.requests for m in r.messages)


async def test_guild_channels_need_the_guild_allowed_and_the_bot_addressed(tmp_path: Path) -> None:
    guilds = {GUILD: {"users": [OWNER], "roles": ["700"], "channels": {GENERAL: {}, FORUM: {"requireMention": False}}}}
    with discord_gateway(tmp_path, guilds=guilds) as (gw, fake, provider):
        await started(gw, fake)
        fake.user_message(GENERAL, OWNER, "just chatting", guild_id=GUILD)  # not addressed: observed
        fake.user_message(RANDOM, OWNER, "hi", guild_id=GUILD, mention_bot=True)  # channel not listed
        fake.user_message(GENERAL, STRANGER, "me too", guild_id=GUILD, mention_bot=True)  # not allowed
        provider.push(Reply("Hello, moderator."))
        fake.user_message(GENERAL, STRANGER, "and with my role?", guild_id=GUILD, mention_bot=True, roles=("700",))
        await wait_for(lambda: fake.posted_to(GENERAL), what="the answer to the role holder")
        assert fake.posted_to(GENERAL) == ["Hello, moderator."]
        assert fake.posted_to(RANDOM) == []
        prompt = provider.requests[0].messages[-1]
        assert isinstance(prompt, UserMessage) and "with my role" in str(prompt.content)
        # a forum post is a thread of its forum: answered in the post, in its own session
        provider.push(Reply("In the post."))
        fake.user_message(POST, OWNER, "a question in a forum post", guild_id=GUILD)
        await wait_for(lambda: fake.posted_to(POST), what="the answer in the post")
        keys = {s["key"] for s in (await (await operator(gw)).request("sessions.list"))["payload"]["sessions"]}
        assert f"agent:main:discord:channel:{GENERAL}" in keys
        assert f"agent:main:discord:channel:{FORUM}:thread:{POST}" in keys


async def test_a_long_reply_is_split_under_2000_characters_without_breaking_a_code_fence(tmp_path: Path) -> None:
    with discord_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (gw, fake, provider):
        await started(gw, fake)
        code = "```python\n" + "\n".join(f"print({i})  # line {i}" for i in range(120)) + "\n```"
        long = "Here is the program:\n\n" + code + "\n\n" + "And some words after it. " * 60
        provider.push(Reply(long))
        fake.user_message(DM_OWNER, OWNER, "write me a program")
        await wait_for(lambda: len(fake.posted_to(DM_OWNER)) >= 3, what="the pieces")
        pieces = fake.posted_to(DM_OWNER)
        assert all(len(p) <= 2000 for p in pieces)
        assert all(p.count("```") % 2 == 0 for p in pieces)  # every piece renders on its own


async def test_a_rate_limited_send_waits_and_is_delivered_once(tmp_path: Path) -> None:
    with discord_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (gw, fake, provider):
        await started(gw, fake)
        fake.limit_next(1.0)
        provider.push(Reply("after the limit"))
        began = time.monotonic()
        fake.user_message(DM_OWNER, OWNER, "hi")
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the answer after the 429")
        assert time.monotonic() - began >= 1.0
        await asyncio.sleep(0.3)
        assert fake.posted_to(DM_OWNER) == ["after the limit"]


async def test_a_lost_connection_resumes_and_nothing_is_lost_or_answered_twice(tmp_path: Path) -> None:
    with discord_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (gw, fake, provider):
        await started(gw, fake)
        provider.push(Reply("one"))
        fake.user_message(DM_OWNER, OWNER, "first")
        await wait_for(lambda: fake.posted_to(DM_OWNER) == ["one"], what="the first answer")
        fake.drop()
        provider.push(Reply("two"), Reply("three"))
        fake.user_message(DM_OWNER, OWNER, "second")  # sent while the bot is away: replayed on RESUME
        await wait_for(lambda: fake.posted_to(DM_OWNER) == ["one", "two"], what="the replayed message's answer")
        fake.user_message(DM_OWNER, OWNER, "third")
        await wait_for(lambda: len(fake.posted_to(DM_OWNER)) == 3, what="the answer after the resume")
        await asyncio.sleep(0.3)
        assert fake.posted_to(DM_OWNER) == ["one", "two", "three"]
        assert fake.identifies == 1 and fake.resumes == 1
        asked = [str(r.messages[-1].content) for r in provider.requests]
        assert [sum(word in text for text in asked) for word in ("first", "second", "third")] == [1, 1, 1]
        client = await operator(gw)

        async def account() -> dict[str, Any]:
            status = (await client.request("channels.status", {}))["payload"]
            assert fake.token not in str(status)
            row: dict[str, Any] = status["channelAccounts"]["discord"][0]
            return row

        row = await account()
        assert row["details"]["gateway"] == {"connections": 2, "resumes": 1, "identifies": 1}
        assert row["connected"] is True, row


async def test_images_reach_the_model_oversized_files_get_a_polite_no_and_typing_shows(tmp_path: Path) -> None:
    with discord_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER], mediaMaxMb=0.001) as (gw, fake, provider):
        await started(gw, fake)
        png = b"\x89PNG\r\n\x1a\n" + b"0" * 200
        fake.attachments["cat.png"] = png
        base = fake.api_root.removesuffix("/api/v10")
        cat = {"id": "1", "filename": "cat.png", "size": len(png), "url": f"{base}/attachments/cat.png"}
        cat["content_type"] = "image/png"
        thinking = asyncio.Event()
        provider.push(Gate(thinking, Reply("a cat")))
        fake.user_message(DM_OWNER, OWNER, "what is this?", attachments=[cat])
        await wait_for(lambda: DM_OWNER in fake.typing, what="the typing indicator while the model thinks")
        gw.call_soon(thinking.set)
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the answer about the image")
        prompt = provider.requests[-1].messages[-1]
        assert isinstance(prompt, UserMessage) and isinstance(prompt.content, list)
        assert any(isinstance(part, ImageContent) for part in prompt.content)
        saved = list((gw.paths.state_dir / "workspace" / "media").rglob("*cat.png"))
        assert len(saved) == 1 and saved[0].read_bytes() == png and oct(saved[0].stat().st_mode)[-3:] == "600"
        big = {"id": "2", "filename": "big.pdf", "size": 5000, "url": f"{base}/attachments/big.pdf"}
        fake.user_message(DM_OWNER, OWNER, "read this", attachments=[big])
        await wait_for(lambda: len(fake.posted_to(DM_OWNER)) >= 3, what="the refusal and the answer")
        assert any(t.startswith("Sorry, that file is too large") for t in fake.posted_to(DM_OWNER))


async def test_a_rejected_token_is_an_error_in_the_status_and_never_shown(tmp_path: Path) -> None:
    wrong = "MTEx.WRONG.not-the-bot-token-at-all"
    with run_fake_discord() as fake, run_gateway(tmp_path, config=config(fake, token=wrong)) as gw:
        client = await operator(gw, ["operator.admin"])

        async def row() -> dict[str, Any]:
            status = (await client.request("channels.status", {}))["payload"]
            assert wrong not in str(status)
            found: dict[str, Any] = status["channelAccounts"]["discord"][0]
            return found

        deadline = time.monotonic() + 15
        while (await row())["healthState"] != "error" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        found = await row()
        assert found["lastError"] == "the bot token was rejected (401)" and found["tokenSource"] == "config"
        assert wrong not in str((await client.request("config.get"))["payload"])
        assert fake.identifies == 0  # never reached the Gateway


async def test_slash_commands_are_registered_and_run_as_owner_commands(tmp_path: Path) -> None:
    guilds = {GUILD: {"users": [OWNER, STRANGER]}}
    with discord_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER], guilds=guilds) as (gw, fake, provider):
        await started(gw, fake)
        await wait_for(lambda: fake.commands, what="the slash commands")
        assert [c["name"] for c in next(iter(fake.commands.values()))] == ["new", "status", "help"]
        interaction = fake.slash_command(DM_OWNER, OWNER, "status")
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the status")
        assert fake.posted_to(DM_OWNER)[0].startswith("Session: agent:main:main")
        answered = dict(fake.interaction_answers)[interaction]
        assert answered["type"] == 4 and answered["data"]["flags"] == 64 and answered["data"]["content"] == "`/status`"
        fake.slash_command(GENERAL, STRANGER, "status", guild_id=GUILD)
        await wait_for(lambda: fake.posted_to(GENERAL), what="the refusal")
        assert fake.posted_to(GENERAL) == ["That command is for my owner."]
        assert provider.requests == []  # commands never reach the model
