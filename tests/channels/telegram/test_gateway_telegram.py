"""Telegram end to end: a real gateway, the real Bot API wire format (a fake server on loopback),
a scripted model. DMs with pairing, allowlists, groups and topics, formatting, limits, delivery
failures, commands, webhook mode, media, and no token anywhere it must not be."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from homarus.messages import ImageContent, UserMessage
from homarus.providers.scripted import Gate, Reply, ScriptedProvider
from tests.channels.operator import operator
from tests.conftest import RunningGateway, run_gateway
from tests.fakes.telegram_server import BOT_ID, BOT_USERNAME, FakeTelegram, run_fake_telegram
from tests.waiting import wait_for

OWNER = 111
STRANGER = 222


def config(fake: FakeTelegram, **telegram: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "channels": {"telegram": {"botToken": fake.token, "apiRoot": fake.api_root, **telegram}},
        "messages": {"inbound": {"debounceMs": 0}},
        "commands": {"ownerAllowFrom": [f"telegram:{OWNER}"]},
    }


@contextmanager
def telegram_gateway(
    tmp_path: Path, **telegram: Any
) -> Iterator[tuple[RunningGateway, FakeTelegram, ScriptedProvider]]:
    with run_fake_telegram() as fake, run_gateway(tmp_path, config=config(fake, **telegram)) as gw:
        provider = ScriptedProvider(then="echo")
        gw.gateway.models.overrides["test"] = provider
        yield gw, fake, provider


async def test_an_unknown_sender_gets_a_pairing_code_and_nothing_else_until_approved(tmp_path: Path) -> None:
    with telegram_gateway(tmp_path) as (gw, fake, provider):
        fake.user_message(STRANGER, "hello, who are you?", first_name="Eve")
        fake.user_message(STRANGER, "hello again")
        await wait_for(lambda: fake.texts_to(STRANGER), what="the pairing reply")
        await asyncio.sleep(0.5)
        replies = fake.texts_to(STRANGER)
        assert len(replies) == 1  # the second message does not make the bot talk again
        assert "Pairing code:" in replies[0] and str(STRANGER) in replies[0]
        code = replies[0].split("Pairing code: ")[1].split()[0]
        assert len(code) == 8 and not set(code) & set("0O1I")
        assert provider.requests == []  # no model call for a stranger

        pairing = await operator(gw, ["operator.pairing"])
        listed = (await pairing.request("channels.pairing.list", {}))["payload"]
        assert [r["requestId"] for r in listed["requests"]] == [code]
        assert listed["limits"] == {"pendingPerAccount": 3, "ttlMs": 3_600_000}
        wrong = await pairing.request(
            "channels.pairing.approve", {"channel": "telegram", "accountId": "default", "requestId": "ZZZZZZZZ"}
        )
        assert wrong["ok"] is False
        approved = await pairing.request(
            "channels.pairing.approve",
            {"channel": "telegram", "accountId": "default", "requestId": code, "notify": True},
        )
        assert approved["payload"] == {
            "requestId": code,
            "senderId": str(STRANGER),
            "notification": "sent",
            "commandOwnerBootstrap": "not-requested",
        }
        await wait_for(lambda: len(fake.texts_to(STRANGER)) == 2, what="the approval notice")
        provider.push(Reply("Nice to meet you, Eve."))
        fake.user_message(STRANGER, "now can we talk?", first_name="Eve")
        await wait_for(lambda: len(fake.texts_to(STRANGER)) == 3, what="the agent's answer")
        assert fake.texts_to(STRANGER)[-1] == "Nice to meet you, Eve."
        seen = provider.requests[-1].messages[-1]
        assert isinstance(seen, UserMessage) and "now can we talk?" in str(seen.content)
        # the stranger's earlier messages never reached a model, even now
        assert all("who are you" not in str(m.content) for r in provider.requests for m in r.messages)


async def test_owner_dm_runs_in_the_main_session_with_typing_formatting_and_chunks(tmp_path: Path) -> None:
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (gw, fake, provider):
        long = "\n\n".join(f"Paragraph {i}: " + "word " * 150 for i in range(10))  # ~7.7 kB: two messages
        thinking = asyncio.Event()
        provider.push(Gate(thinking, Reply("**Bold** and `code <x>`")), Reply(long))
        fake.user_message(OWNER, "first")
        # the model takes its time: the chat shows the bot typing meanwhile
        await wait_for(
            lambda: any(a["action"] == "typing" and str(a["chat_id"]) == str(OWNER) for a in fake.actions),
            what="the typing indicator",
        )
        gw.call_soon(thinking.set)
        await wait_for(lambda: fake.texts_to(OWNER), what="the first answer")
        sent = fake.sent[-1]
        assert sent.params["parse_mode"] == "HTML" and sent.text == "<b>Bold</b> and <code>code &lt;x&gt;</code>"
        fake.user_message(OWNER, "second")
        await wait_for(lambda: len(fake.texts_to(OWNER)) == 3, what="the long answer in two pieces")
        pieces = fake.texts_to(OWNER)[1:]
        assert all(len(p) <= 4000 for p in pieces) and pieces[0].startswith("Paragraph 0")
        assert "".join(pieces).replace("\n", "").replace(" ", "") == long.replace("\n", "").replace(" ", "")
        sessions = (await (await operator(gw)).request("sessions.list"))["payload"]["sessions"]
        main = next(s for s in sessions if s["key"] == "agent:main:main")
        assert main["channel"] == "telegram" and main["deliveryContext"]["to"] == str(OWNER)


async def test_unparseable_html_is_sent_again_as_plain_text(tmp_path: Path) -> None:
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (_gw, fake, provider):
        provider.push(Reply("*almost* fine"))
        fake.fail_next(
            "sendMessage",
            400,
            "Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 0",
        )
        fake.user_message(OWNER, "hi")
        await wait_for(lambda: fake.texts_to(OWNER), what="the plain-text answer")
        assert fake.sent[-1].text == "almost fine" and "parse_mode" not in fake.sent[-1].params


async def test_groups_need_to_be_allowed_and_the_bot_addressed_and_topics_keep_their_thread(tmp_path: Path) -> None:
    group = -1001234567890
    groups = {str(group): {"requireMention": True}}
    with telegram_gateway(tmp_path, allowFrom=[OWNER, STRANGER], groups=groups) as (gw, fake, provider):
        handle = f"@{BOT_USERNAME}"
        fake.user_message(-100999, f"{handle} hi", user_id=OWNER, chat_type="supergroup")  # not an allowed group
        fake.user_message(group, "just chatting", user_id=OWNER, chat_type="supergroup")  # not addressed
        mention = [{"type": "mention", "offset": 0, "length": len(handle)}]
        fake.user_message(
            group, f"{handle} what time is it?", user_id=STRANGER, chat_type="supergroup", entities=mention
        )
        await wait_for(lambda: fake.texts_to(group), what="the group answer")
        answer = fake.sent[-1]
        assert "reply_parameters" in answer.params  # the reply quotes the message that asked
        assert fake.texts_to(-100999) == []
        assert len(provider.requests) == 1
        prompt = provider.requests[0].messages[-1]
        assert isinstance(prompt, UserMessage) and "[Ann]:" in str(prompt.content)
        # a forum topic: its own session, and the answer goes to the topic; a reply to the bot counts
        bot_message = {
            "message_id": 5,
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "bot"},
            "chat": {"id": group, "type": "supergroup"},
            "date": 0,
            "text": "earlier answer",
        }
        fake.user_message(
            group,
            "follow-up in topic 42",
            user_id=OWNER,
            chat_type="supergroup",
            is_forum=True,
            thread_id=42,
            reply_to=bot_message,
        )
        await wait_for(lambda: any(m.thread_id == 42 for m in fake.sent), what="the topic answer")
        keys = {s["key"] for s in (await (await operator(gw)).request("sessions.list"))["payload"]["sessions"]}
        assert f"agent:main:telegram:group:{group}" in keys and f"agent:main:telegram:group:{group}:topic:42" in keys


async def test_owner_commands_are_for_owners_only(tmp_path: Path) -> None:
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER, STRANGER]) as (_gw, fake, provider):
        cmd = [{"type": "bot_command", "offset": 0, "length": 7}]
        fake.user_message(STRANGER, "/status", entities=cmd)
        await wait_for(lambda: fake.texts_to(STRANGER), what="the refusal")
        assert fake.texts_to(STRANGER) == ["That command is for my owner."]
        fake.user_message(OWNER, "/status", entities=cmd)
        await wait_for(lambda: fake.texts_to(OWNER), what="the status")
        assert fake.texts_to(OWNER)[0].startswith("Session: agent:main:main")
        assert provider.requests == []


async def test_the_owner_compacts_the_conversation_with_a_focus(tmp_path: Path) -> None:
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER, STRANGER]) as (_gw, fake, provider):
        cmd = [{"type": "bot_command", "offset": 0, "length": 8}]
        fake.user_message(OWNER, "/compact", entities=cmd)
        await wait_for(lambda: fake.texts_to(OWNER), what="the answer to /compact")
        assert fake.texts_to(OWNER) == ["Nothing to compact yet."]
        provider.push(Reply("x" * 800), Reply("x" * 800), Reply("## Goal\nTrips.\n## Progress\nTwo long asks."))
        fake.user_message(OWNER, "plan trip one " + "y" * 800)
        await wait_for(lambda: len(fake.texts_to(OWNER)) == 2, what="the first answer")
        fake.user_message(OWNER, "plan trip two " + "y" * 800)
        await wait_for(lambda: len(fake.texts_to(OWNER)) == 3, what="the second answer")
        fake.user_message(STRANGER, "/compact", entities=cmd)
        await wait_for(lambda: fake.texts_to(STRANGER), what="the refusal")
        assert fake.texts_to(STRANGER) == ["That command is for my owner."]
        fake.user_message(OWNER, "/compact keep the dates", entities=cmd)
        await wait_for(lambda: len(fake.texts_to(OWNER)) == 4, what="the compaction report")
        assert fake.texts_to(OWNER)[-1].startswith("Compacted: the context went from ~")
        summary_request = provider.requests[-1]
        assert summary_request.system_prompt.startswith("You write context summaries")
        assert "Additional focus for this summary: keep the dates" in summary_request.messages[0].text


async def test_flood_control_is_honoured_and_a_blocked_chat_ends_in_the_dead_letters(tmp_path: Path) -> None:
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER, STRANGER]) as (gw, fake, provider):
        fake.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", {"retry_after": 1})
        provider.push(Reply("after the flood"))
        started = time.monotonic()
        fake.user_message(OWNER, "hi")
        await wait_for(lambda: fake.texts_to(OWNER), what="the answer after the 429")
        assert time.monotonic() - started >= 1.0  # waited Telegram's retry_after
        assert len(fake.method_calls("sendMessage")) == 2
        fake.blocked.add(str(STRANGER))
        provider.push(Reply("you will never see this"))
        fake.user_message(STRANGER, "hello")
        client = await operator(gw)

        async def dead() -> list[Any]:
            status = (await client.request("channels.status"))["payload"]
            return list(status["delivery"]["deadLetters"])

        letters: list[Any] = []
        for _ in range(200):
            letters = await dead()
            if letters:
                break
            await asyncio.sleep(0.05)
        assert len(letters) == 1 and "blocked" in letters[0]["lastError"]
        fake.blocked.clear()
        admin = await operator(gw, ["operator.admin"])
        replayed = await admin.request("channels.outbox.replay", {"id": letters[0]["id"]})
        assert replayed["payload"]["status"] == "pending"
        await wait_for(lambda: fake.texts_to(STRANGER) == ["you will never see this"], what="the replayed message")


async def test_webhook_mode_checks_the_secret_and_commits_before_answering(tmp_path: Path) -> None:
    secret = "s3cret-webhook-token-0123456789"
    hook = {"webhookUrl": "https://bot.example.org/tg", "webhookSecret": secret, "webhookPath": "/tg-hook"}
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER], **hook) as (gw, fake, _provider):
        await wait_for(lambda: fake.webhook is not None, what="setWebhook")
        assert fake.webhook is not None and fake.webhook["secret_token"] == secret
        update = fake.user_message(OWNER, "via webhook", queue=False)
        async with httpx.AsyncClient() as http:
            forged = await http.post(
                f"{gw.http}/tg-hook", json=update, headers={"x-telegram-bot-api-secret-token": "nope"}
            )
            missing = await http.post(f"{gw.http}/tg-hook", json=update)
            bad = await http.post(
                f"{gw.http}/tg-hook", content=b"{not json", headers={"x-telegram-bot-api-secret-token": secret}
            )
            ok = await http.post(f"{gw.http}/tg-hook", json=update, headers={"x-telegram-bot-api-secret-token": secret})
            again = await http.post(
                f"{gw.http}/tg-hook", json=update, headers={"x-telegram-bot-api-secret-token": secret}
            )
            get = await http.get(f"{gw.http}/tg-hook")
        assert (forged.status_code, missing.status_code, bad.status_code) == (401, 401, 200)
        assert ok.status_code == 200 and ok.headers["x-homarus-delivery-accepted"] == "durable"
        assert again.status_code == 200 and get.status_code == 405
        await wait_for(lambda: fake.texts_to(OWNER), what="the answer to the webhook update")
        await asyncio.sleep(0.3)
        assert fake.texts_to(OWNER) == ["via webhook"]  # the redelivered update was not answered twice


async def test_photos_reach_the_model_and_oversized_files_get_a_polite_no(tmp_path: Path) -> None:
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER], mediaMaxMb=0.001) as (gw, fake, provider):
        png = b"\x89PNG\r\n\x1a\n" + b"0" * 200
        fake.user_message(OWNER, None, photo_file=("cat.jpg", png), caption="what is this?")
        await wait_for(lambda: fake.texts_to(OWNER), what="the answer about the photo")
        prompt = provider.requests[-1].messages[-1]
        assert isinstance(prompt, UserMessage) and isinstance(prompt.content, list)
        assert any(isinstance(part, ImageContent) for part in prompt.content)
        saved = list((gw.paths.state_dir / "workspace" / "media").rglob("*cat.jpg"))
        assert len(saved) == 1 and saved[0].read_bytes() == png and oct(saved[0].stat().st_mode)[-3:] == "600"
        fake.user_message(OWNER, None, document_file=("big.pdf", b"x" * 5000, "application/pdf"), caption="read this")
        await wait_for(lambda: len(fake.texts_to(OWNER)) >= 3, what="the refusal and the answer")
        texts = fake.texts_to(OWNER)
        assert any(t.startswith("Sorry, that file is too large") for t in texts)


async def test_the_bot_token_is_never_shown_or_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (gw, fake, _provider):
        fake.user_message(OWNER, "hi")
        await wait_for(lambda: fake.texts_to(OWNER), what="an answer")
        client = await operator(gw, ["operator.admin"])
        status = json.dumps((await client.request("channels.status"))["payload"])
        config = json.dumps((await client.request("config.get"))["payload"])
        assert fake.token not in status and fake.token not in config
        assert '"botTokenSource": "config"' in status
    secret_part = fake.token.split(":")[1]
    assert secret_part not in caplog.text
    assert "bot<redacted>" in caplog.text or "<redacted>" in caplog.text  # httpx's URL lines were masked


async def test_health_and_status_list_the_channel_and_its_accounts(tmp_path: Path) -> None:
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (gw, fake, _provider):
        await wait_for(lambda: fake.method_calls("getUpdates"), what="polling")
        client = await operator(gw)
        health = (await client.request("health", {"probe": True}))["payload"]
        assert health["channelOrder"] == ["telegram"] and health["channelLabels"] == {"telegram": "Telegram"}
        telegram = health["channels"]["telegram"]
        assert telegram["running"] is True and telegram["accountId"] == "default"
        assert telegram["accounts"]["default"]["mode"] == "polling"
        status = (await client.request("status"))["payload"]
        assert status["channelSummary"] == ["Telegram: running (default, polling)"]
        assert fake.token not in json.dumps(health) + json.dumps(status)


async def test_typing_shows_for_the_run_that_works_not_for_runs_waiting_their_turn(tmp_path: Path) -> None:
    other = 333
    with run_fake_telegram() as fake:
        cfg = config(fake, dmPolicy="allowlist", allowFrom=[OWNER, other])
        cfg["agents"]["defaults"]["maxConcurrent"] = 1  # one run at a time: the second chat waits
        cfg["session"] = {"dmScope": "per-channel-peer"}
        with run_gateway(tmp_path, config=cfg) as gw:
            release = asyncio.Event()
            gw.gateway.models.overrides["test"] = ScriptedProvider([Gate(release, Reply("done"))], then="echo")
            fake.user_message(OWNER, "slow one")
            await wait_for(lambda: any(str(a["chat_id"]) == str(OWNER) for a in fake.actions), what="typing")
            fake.user_message(other, "me too")
            await asyncio.sleep(1.0)  # the second chat's run is accepted and waits for the slot
            assert not any(str(a["chat_id"]) == str(other) for a in fake.actions)
            gw.call_soon(release.set)
            await wait_for(lambda: fake.texts_to(other) == ["me too"], what="the second answer")


async def test_send_finds_the_channel_by_a_plugin_alias(tmp_path: Path) -> None:
    """``tg`` is the Telegram plugin's alias (its ``ChannelSpec.aliases``), not a name the shared
    layer knows; an unknown channel is refused by name."""
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (_gw, fake, _provider):
        await wait_for(lambda: fake.method_calls("getUpdates"), what="polling")
        client = await operator(_gw, ["operator.write"])
        sent = await client.request("send", {"to": f"tg:{OWNER}", "message": "hello by alias", "idempotencyKey": "a1"})
        assert sent["ok"], sent
        assert fake.texts_to(OWNER) == ["hello by alias"]
        unknown = await client.request("send", {"to": "nope:1", "message": "x", "idempotencyKey": "a2"})
        assert unknown["ok"] is False and "unknown channel: nope" in unknown["error"]["message"]


async def test_message_action_send_as_the_originals_cli_sends_it(tmp_path: Path) -> None:
    """``openclaw message send --channel telegram -t <chat> -m …``: its exact params, once (a retry
    with the same idempotency key sends nothing more); other actions are refused by name."""
    with telegram_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[OWNER]) as (_gw, fake, _provider):
        await wait_for(lambda: fake.method_calls("getUpdates"), what="polling")
        client = await operator(_gw, ["operator.write"])
        cli_params: dict[str, Any] = {"pin": False, "gifPlayback": False, "forceDocument": False, "silent": False}
        cli_params |= {"json": False}
        cli_params |= {"dryRun": False, "verbose": False, "channel": "telegram", "target": str(OWNER)}
        cli_params |= {"message": "from a script", "action": "send", "to": f"telegram:{OWNER}"}
        params = {"channel": "telegram", "action": "send", "params": cli_params, "senderIsOwner": True}
        params |= {"agentId": "main", "conversationReadOrigin": "direct-operator", "idempotencyKey": "m-1"}
        sent = await client.request("message.action", params)
        assert sent["ok"], sent
        assert sent["payload"]["status"] == "sent" and sent["payload"]["action"] == "send"
        again = await client.request("message.action", params)
        assert again["payload"] == sent["payload"]
        assert fake.texts_to(OWNER) == ["from a script"]

        dry = await client.request(
            "message.action", params | {"params": cli_params | {"dryRun": True}, "idempotencyKey": "m-2"}
        )
        assert dry["payload"]["dryRun"] is True and fake.texts_to(OWNER) == ["from a script"]
        read = await client.request("message.action", params | {"action": "read", "idempotencyKey": "m-3"})
        assert read["error"]["message"] == "Channel telegram does not support action read."
        assert read["error"]["details"]["code"] == "NOT_SUPPORTED"
        pinned = await client.request(
            "message.action", params | {"params": cli_params | {"pin": True}, "idempotencyKey": "m-4"}
        )
        assert pinned["error"]["details"]["param"] == "pin" and fake.texts_to(OWNER) == ["from a script"]
        unknown = await client.request("message.action", params | {"channel": "nope", "idempotencyKey": "m-5"})
        assert "unknown channel: nope" in unknown["error"]["message"]
        extra = await client.request("message.action", params | {"bogus": 1})
        assert "unexpected property 'bogus'" in extra["error"]["message"]
        reader = await operator(_gw, ["operator.read"])
        refused = await reader.request("message.action", params | {"idempotencyKey": "m-6"})
        assert refused["error"]["details"]["missingScope"] == "operator.write"
