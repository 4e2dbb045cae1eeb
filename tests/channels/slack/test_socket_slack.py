"""Slack end to end over Socket Mode: a real gateway, Slack's real wire formats (a fake Socket Mode
server and Web API on loopback), a scripted model. DM pairing, allowed DMs, channels with mention
gating, threads, long replies, files both ways, rate limits, refresh and lost connections."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from homarus.messages import ImageContent, UserMessage
from homarus.providers.scripted import Reply, ScriptedProvider
from tests.channels.operator import operator
from tests.conftest import RunningGateway, run_gateway
from tests.fakes.slack_server import FakeSlack, run_fake_slack
from tests.waiting import wait_for
from tests.wsclient import Client

OWNER = "U0OWNER001"
STRANGER = "U0STRANGE1"
DM_OWNER = "D0OWNER001"
DM_STRANGER = "D0STRANGE1"
GENERAL = "C0GENERAL1"
RANDOM = "C0RANDOM01"


def config(fake: FakeSlack, **slack: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "channels": {
            "slack": {"botToken": fake.bot_token, "appToken": fake.app_token, "apiRoot": fake.api_root, **slack}
        },
        "messages": {"inbound": {"debounceMs": 0}},
        "commands": {"ownerAllowFrom": [f"slack:{OWNER}"]},
    }


@contextmanager
def slack_gateway(tmp_path: Path, **slack: Any) -> Iterator[tuple[RunningGateway, FakeSlack, ScriptedProvider]]:
    with run_fake_slack() as fake:
        fake.add_channel(DM_OWNER, DM_STRANGER, GENERAL, RANDOM)
        with run_gateway(tmp_path, config=config(fake, **slack)) as gw:
            provider = ScriptedProvider(then="echo")
            gw.gateway.models.overrides["test"] = provider
            yield gw, fake, provider


async def started(fake: FakeSlack) -> None:
    await wait_for(lambda: fake.connections >= 1, what="the Socket Mode connection")


async def account_row(client: Client, secrets: tuple[str, ...]) -> dict[str, Any]:
    status = (await client.request("channels.status", {}))["payload"]
    for secret in secrets:
        assert secret not in str(status)
    row: dict[str, Any] = status["channelAccounts"]["slack"][0]
    return row


async def test_an_unknown_dm_gets_a_pairing_code_and_an_approved_one_an_answer(tmp_path: Path) -> None:
    with slack_gateway(tmp_path) as (gw, fake, provider):
        await started(fake)
        fake.user_message(DM_STRANGER, STRANGER, "hello, who are you?")
        await wait_for(lambda: fake.posted_to(DM_STRANGER), what="the pairing reply")
        reply = fake.posted_to(DM_STRANGER)[0]
        assert "Pairing code:" in reply and STRANGER in reply
        assert provider.requests == []
        code = reply.split("Pairing code: ")[1].split()[0].strip("*_`")
        pairing = await operator(gw, ["operator.pairing"])
        approved = await pairing.request(
            "channels.pairing.approve", {"channel": "slack", "accountId": "default", "requestId": code}
        )
        assert approved["ok"], approved
        provider.push(Reply("Hi **Eve** & <!channel>."))
        fake.user_message(DM_STRANGER, STRANGER, "now?")
        await wait_for(lambda: len(fake.posted_to(DM_STRANGER)) >= 2, what="the answer")
        # mrkdwn, and what the model wrote cannot ping the channel
        assert fake.posted_to(DM_STRANGER)[-1] == "Hi *Eve* &amp; &lt;!channel&gt;."
        assert all("who are you" not in str(m.content) for r in provider.requests for m in r.messages)
        assert all(a.get("envelope_id") for a in fake.acks) and not fake.unacked  # every envelope acknowledged


async def test_channels_need_the_channel_allowed_and_the_bot_mentioned_and_threads_are_sessions(
    tmp_path: Path,
) -> None:
    channels = {GENERAL: {"users": [OWNER]}}
    with slack_gateway(tmp_path, channels=channels) as (gw, fake, provider):
        await started(fake)
        fake.user_message(GENERAL, OWNER, "just chatting")  # not addressed: observed
        fake.user_message(RANDOM, OWNER, "hi", mention_bot=True)  # channel not listed
        fake.user_message(GENERAL, STRANGER, "me too", mention_bot=True)  # not allowed here
        provider.push(Reply("Hello, owner."))
        root = fake.user_message(GENERAL, OWNER, "what's up?", mention_bot=True)  # message + app_mention
        await wait_for(lambda: fake.posted_to(GENERAL), what="the answer to the mention")
        await asyncio.sleep(0.3)
        assert fake.posted_to(GENERAL) == ["Hello, owner."]  # once, though Slack sent two events
        assert fake.posted_to(RANDOM) == []
        prompt = provider.requests[0].messages[-1]
        assert isinstance(prompt, UserMessage) and "what's up?" in str(prompt.content)
        assert "<@" not in str(prompt.content)
        # a reply in the thread under the bot's answer: addressed without a mention, its own session
        provider.push(Reply("In the thread."))
        fake.user_message(GENERAL, OWNER, "and more", thread_ts=root, parent_user="U0BOT00001")
        await wait_for(lambda: fake.posted_to(GENERAL, root), what="the answer in the thread")
        assert fake.posted_to(GENERAL, root) == ["In the thread."]
        keys = {s["key"] for s in (await (await operator(gw)).request("sessions.list"))["payload"]["sessions"]}
        assert f"agent:main:slack:channel:{GENERAL.lower()}" in {k.lower() for k in keys}
        assert any(k.lower().endswith(f":thread:{root}") for k in keys), keys


async def test_a_long_reply_is_split_under_4000_characters_without_breaking_a_code_fence(tmp_path: Path) -> None:
    with slack_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (_gw, fake, provider):
        await started(fake)
        code = "```python\n" + "\n".join(f"print({i})  # line {i} of the program" for i in range(160)) + "\n```"
        long = "Here is the program:\n\n" + code + "\n\n" + "And some words after it. " * 120
        provider.push(Reply(long))
        fake.user_message(DM_OWNER, OWNER, "write me a program")
        await wait_for(lambda: len(fake.posted_to(DM_OWNER)) >= 3, what="the pieces")
        pieces = fake.posted_to(DM_OWNER)
        assert all(len(p) <= 4000 for p in pieces)
        assert all(p.count("```") % 2 == 0 for p in pieces)  # every piece renders on its own
        assert "print(159)" in "".join(pieces)


async def test_a_rate_limited_send_waits_retry_after_and_is_delivered_once(tmp_path: Path) -> None:
    with slack_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (_gw, fake, provider):
        await started(fake)
        fake.limit_next(1)
        provider.push(Reply("after the limit"))
        began = time.monotonic()
        fake.user_message(DM_OWNER, OWNER, "hi")
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the answer after the 429")
        assert time.monotonic() - began >= 1.0
        await asyncio.sleep(0.3)
        assert fake.posted_to(DM_OWNER) == ["after the limit"]


async def test_refresh_and_lost_connections_reconnect_and_nothing_is_lost_or_answered_twice(tmp_path: Path) -> None:
    with slack_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (gw, fake, provider):
        await started(fake)
        provider.push(Reply("one"))
        fake.user_message(DM_OWNER, OWNER, "first")
        await wait_for(lambda: fake.posted_to(DM_OWNER) == ["one"], what="the first answer")
        fake.disconnect("refresh_requested")  # Slack rotates connections: a new one at once
        await wait_for(lambda: fake.connections == 2, what="the refreshed connection")
        fake.drop()
        provider.push(Reply("two"), Reply("three"))
        fake.user_message(DM_OWNER, OWNER, "second")  # sent while the app is away: delivered on reconnect
        await wait_for(lambda: fake.posted_to(DM_OWNER) == ["one", "two"], what="the queued message's answer")
        fake.user_message(DM_OWNER, OWNER, "third")
        await wait_for(lambda: len(fake.posted_to(DM_OWNER)) == 3, what="the answer after the reconnect")
        await asyncio.sleep(0.3)
        assert fake.posted_to(DM_OWNER) == ["one", "two", "three"]
        asked = [str(r.messages[-1].content) for r in provider.requests]
        assert [sum(word in text for text in asked) for word in ("first", "second", "third")] == [1, 1, 1]
        row = await account_row(await operator(gw), (fake.bot_token, fake.app_token))
        assert row["details"]["socket"]["connections"] == 3 and row["details"]["socket"]["refreshes"] == 1
        assert row["connected"] is True and row["mode"] == "socket", row


async def test_a_retried_envelope_of_a_committed_message_is_acknowledged_and_not_answered_again(
    tmp_path: Path,
) -> None:
    with slack_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (_gw, fake, provider):
        await started(fake)
        provider.push(Reply("only once"))
        event = fake.event(fake.message_event(DM_OWNER, OWNER, "hello"))
        fake.send_envelope("events_api", event)
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the answer")
        again = fake.send_envelope("events_api", event, retry_attempt=1)  # Slack's retry: the same event again
        await wait_for(lambda: any(a.get("envelope_id") == again for a in fake.acks), what="the retry's ack")
        await asyncio.sleep(0.3)
        assert fake.posted_to(DM_OWNER) == ["only once"] and len(provider.requests) == 1


async def test_files_in_and_out_and_an_oversized_one_gets_a_polite_no(tmp_path: Path) -> None:
    with slack_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER], mediaMaxMb=0.001) as (gw, fake, provider):
        await started(fake)
        png = b"\x89PNG\r\n\x1a\n" + b"0" * 200
        fake.files["cat.png"] = png
        base = fake.api_root.removesuffix("/api")
        cat = {"id": "F1", "name": "cat.png", "mimetype": "image/png", "size": len(png)}
        cat["url_private_download"] = f"{base}/files/cat.png"
        provider.push(Reply("a cat"))
        fake.user_message(DM_OWNER, OWNER, "what is this?", files=[cat])
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the answer about the image")
        prompt = provider.requests[-1].messages[-1]
        assert isinstance(prompt, UserMessage) and isinstance(prompt.content, list)
        assert any(isinstance(part, ImageContent) for part in prompt.content)
        saved = list((gw.paths.state_dir / "workspace" / "media").rglob("*cat.png"))
        assert len(saved) == 1 and saved[0].read_bytes() == png
        big = {"id": "F2", "name": "big.pdf", "mimetype": "application/pdf", "size": 5000}
        big["url_private_download"] = f"{base}/files/big.pdf"
        fake.user_message(DM_OWNER, OWNER, "read this", files=[big])
        await wait_for(lambda: len(fake.posted_to(DM_OWNER)) >= 3, what="the refusal and the answer")
        assert any(t.startswith("Sorry, that file is too large") for t in fake.posted_to(DM_OWNER))
        # out: the message tool with a workspace file goes through Slack's external upload
        (gw.paths.state_dir / "workspace" / "report.txt").write_text("numbers\n")
        provider.push(Reply("", tool_calls=[("message", {"text": "the **report**", "file": "report.txt"})]))
        provider.push(Reply("sent it"))
        fake.user_message(DM_OWNER, OWNER, "send me the report")
        await wait_for(lambda: any(p.files for p in fake.posted), what="the upload")
        upload = next(p for p in fake.posted if p.files)
        assert upload.files == [("report.txt", b"numbers\n")] and upload.text == "the *report*"


async def test_slash_commands_run_as_owner_commands_with_an_ephemeral_ack(tmp_path: Path) -> None:
    with slack_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (_gw, fake, provider):
        await started(fake)
        fake.slash_command(DM_OWNER, OWNER, "/status")
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the status")
        assert fake.posted_to(DM_OWNER)[0].startswith("Session: agent:main:main")
        ack = next(a for a in fake.acks if a.get("payload"))
        assert ack["payload"] == {"response_type": "ephemeral", "text": "`/status`"}
        assert provider.requests == []  # commands never reach the model


async def test_a_rejected_token_is_an_error_in_the_status_and_never_shown(tmp_path: Path) -> None:
    wrong = "xoxb-wrong-not-the-bot-token-at-all"
    with run_fake_slack() as fake, run_gateway(tmp_path, config=config(fake, botToken=wrong)) as gw:
        client = await operator(gw, ["operator.admin"])
        deadline = time.monotonic() + 15
        while (await account_row(client, (wrong,)))["healthState"] != "error" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        found = await account_row(client, (wrong, fake.app_token))
        assert found["lastError"] == "the bot token was rejected (invalid_auth)"
        assert found["botTokenSource"] == "config" and found["appTokenSource"] == "config"
        assert wrong not in str((await client.request("config.get"))["payload"])
        assert fake.connections == 0  # never opened Socket Mode


async def test_a_rejected_app_token_stops_socket_mode_with_the_reason(tmp_path: Path) -> None:
    wrong = "xapp-1-A000-wrong-app-level-token"
    with run_fake_slack() as fake, run_gateway(tmp_path, config=config(fake, appToken=wrong)) as gw:
        client = await operator(gw, ["operator.admin"])
        deadline = time.monotonic() + 15
        while (await account_row(client, (wrong,)))["healthState"] != "error" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        found = await account_row(client, (wrong, fake.bot_token))
        assert found["lastError"] == "the app-level token was rejected (invalid_auth)"
        assert fake.calls.count("apps.connections.open") == 1  # refused once: no retry loop against Slack


async def test_malformed_frames_and_unknown_envelopes_are_skipped_and_the_connection_goes_on(tmp_path: Path) -> None:
    with slack_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (_gw, fake, provider):
        await started(fake)
        fake.send_raw("this is not JSON")
        fake.send_raw("[1, 2, 3]")
        junk = fake.send_envelope("events_api", {"type": "event_callback", "event": "not an object"})
        other = fake.send_envelope("interactive", {"type": "block_actions", "actions": []})
        unknown = fake.send_envelope("events_api", fake.event({"type": "reaction_added", "user": OWNER}))
        provider.push(Reply("still here"))
        fake.user_message(DM_OWNER, OWNER, "hello?")
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the answer after the junk")
        acked = {a.get("envelope_id") for a in fake.acks}
        assert {junk, other, unknown} <= acked and fake.connections == 1
