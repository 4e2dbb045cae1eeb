"""Slack over the HTTP Events API: a real gateway's webhook path, requests signed as Slack signs
them. The URL handshake, an event answered, Slack's retries dropped, slash commands; forged,
stale and unsigned requests refused with 401 before anything is read; bad bodies refused."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import RunningGateway, run_gateway
from tests.fakes.slack_server import FakeSlack, run_fake_slack, signed_headers
from tests.waiting import wait_for

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # a fake signing secret
OWNER = "U0OWNER001"
DM_OWNER = "D0OWNER001"


def config(fake: FakeSlack, **slack: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "channels": {
            "slack": {
                "mode": "http",
                "botToken": fake.bot_token,
                "signingSecret": SECRET,
                "apiRoot": fake.api_root,
                "dmPolicy": "allowlist",
                "allowFrom": [OWNER],
                **slack,
            }
        },
        "messages": {"inbound": {"debounceMs": 0}},
        "commands": {"ownerAllowFrom": [f"slack:{OWNER}"]},
    }


async def listening(gw: RunningGateway) -> str:
    """The webhook URL, once the account serves it (it starts after the gateway does)."""
    await wait_for(lambda: gw.gateway.channels.manager.webhook_account("/slack/events") is not None, what="the account")
    return gw.url.replace("ws://", "http://") + "/slack/events"


async def post(url: str, body: bytes, headers: dict[str, str], ctype: str = "application/json") -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.post(url, content=body, headers={"content-type": ctype, **headers})


async def test_events_are_verified_committed_then_answered_and_retries_are_dropped(tmp_path: Path) -> None:
    with run_fake_slack() as fake, run_gateway(tmp_path, config=config(fake)) as gw:
        fake.add_channel(DM_OWNER)
        provider = ScriptedProvider(then="echo")
        gw.gateway.models.overrides["test"] = provider
        url = await listening(gw)
        # Slack's handshake when the Request URL is saved
        challenge = json.dumps(
            {
                "token": "x",
                "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
                "type": "url_verification",
            }
        )
        answer = await post(url, challenge.encode(), signed_headers(SECRET, challenge.encode()))
        assert answer.status_code == 200
        assert answer.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
        provider.push(Reply("hello over HTTP"))
        body = json.dumps(fake.event(fake.message_event(DM_OWNER, OWNER, "hi"))).encode()
        began = time.monotonic()
        first = await post(url, body, signed_headers(SECRET, body))
        assert first.status_code == 200 and time.monotonic() - began < 3.0  # within Slack's 3 s
        assert first.headers["x-homarus-delivery-accepted"] == "durable"
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the answer")
        retry = await post(
            url,
            body,
            signed_headers(SECRET, body, extra={"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}),
        )
        assert retry.status_code == 200
        await asyncio.sleep(0.3)
        assert fake.posted_to(DM_OWNER) == ["hello over HTTP"] and len(provider.requests) == 1


async def test_forged_stale_and_unsigned_requests_are_refused_before_anything_is_read(tmp_path: Path) -> None:
    with run_fake_slack() as fake, run_gateway(tmp_path, config=config(fake)) as gw:
        fake.add_channel(DM_OWNER)
        provider = ScriptedProvider(then="echo")
        gw.gateway.models.overrides["test"] = provider
        url = await listening(gw)
        body = json.dumps(fake.event(fake.message_event(DM_OWNER, OWNER, "forged"))).encode()
        forged = signed_headers("not-the-signing-secret", body)
        stale = signed_headers(SECRET, body, timestamp=int(time.time()) - 301)
        tampered = signed_headers(SECRET, body)
        for headers, sent in (
            (forged, body),
            (stale, body),
            ({}, body),
            (tampered, body.replace(b"forged", b"evil!!")),
        ):
            answer = await post(url, sent, headers)
            assert answer.status_code == 401, headers
            assert answer.json() == {"ok": False, "error": "invalid_signature"}
            assert SECRET not in answer.text
        # signed but not JSON: 400, and nothing stored
        junk = b"{not json"
        assert (await post(url, junk, signed_headers(SECRET, junk))).status_code == 400
        # an unknown event type: acknowledged and skipped
        other = json.dumps(fake.event({"type": "reaction_added", "user": OWNER})).encode()
        assert (await post(url, other, signed_headers(SECRET, other))).status_code == 200
        assert (await httpx.AsyncClient().get(url)).status_code == 405
        await asyncio.sleep(0.3)
        assert provider.requests == [] and fake.posted == []


async def test_slash_commands_over_http_answer_ephemerally_then_in_the_conversation(tmp_path: Path) -> None:
    with run_fake_slack() as fake, run_gateway(tmp_path, config=config(fake)) as gw:
        fake.add_channel(DM_OWNER)
        gw.gateway.models.overrides["test"] = ScriptedProvider(then="echo")
        url = await listening(gw)
        form = {"command": "/status", "text": "", "user_id": OWNER, "channel_id": DM_OWNER}
        form |= {"team_id": "T0TEAM0001", "trigger_id": "13345224609.738474920.8088930838d88f008e0"}
        body = urlencode(form).encode()
        answer = await post(url, body, signed_headers(SECRET, body), "application/x-www-form-urlencoded")
        assert answer.status_code == 200 and answer.json() == {"response_type": "ephemeral", "text": "`/status`"}
        await wait_for(lambda: fake.posted_to(DM_OWNER), what="the status")
        assert fake.posted_to(DM_OWNER)[0].startswith("Session: agent:main:main")
