"""WhatsApp end to end on the Business Cloud API: a real gateway's callback URL, Meta's real wire
formats both ways (a fake Graph API, and webhooks signed and retried as Meta does), a scripted
model. The verify-token handshake, DM pairing, an allowed DM, a long reply split, media both
ways, the rate limit, the 24-hour window, forged webhooks, and a gateway away mid-conversation."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from homarus.messages import ImageContent, UserMessage
from homarus.providers.scripted import Gate, Reply, ScriptedProvider
from tests.channels.operator import operator
from tests.conftest import RunningGateway, run_gateway
from tests.fakes.whatsapp_server import PHONE_NUMBER_ID, VERIFY_TOKEN, FakeWhatsApp, run_fake_whatsapp
from tests.waiting import wait_for

OWNER = "15551230001"
STRANGER = "15551230002"


def config(fake: FakeWhatsApp, **whatsapp: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "channels": {
            "whatsapp": {
                "accessToken": fake.token,
                "phoneNumberId": PHONE_NUMBER_ID,
                "appSecret": fake.app_secret,
                "verifyToken": VERIFY_TOKEN,
                "apiRoot": fake.api_root,
                **whatsapp,
            }
        },
        "messages": {"inbound": {"debounceMs": 0}},
        "commands": {"ownerAllowFrom": [f"whatsapp:+{OWNER}"]},
    }


@contextmanager
def whatsapp_gateway(tmp_path: Path, **wa: Any) -> Iterator[tuple[RunningGateway, FakeWhatsApp, ScriptedProvider]]:
    with run_fake_whatsapp() as fake, run_gateway(tmp_path, config=config(fake, **wa)) as gw:
        provider = ScriptedProvider(then="echo")
        gw.gateway.models.overrides["test"] = provider
        yield gw, fake, provider


async def listening(gw: RunningGateway, fake: FakeWhatsApp) -> str:
    """The callback URL, handed to the fake once the account serves it."""
    path = "/whatsapp/webhook"
    await wait_for(lambda: gw.gateway.channels.manager.webhook_account(path) is not None, what="the account")
    url = gw.url.replace("ws://", "http://") + path
    fake.callback_url = url
    return url


async def test_the_callback_url_handshake_needs_the_verify_token(tmp_path: Path) -> None:
    with whatsapp_gateway(tmp_path) as (gw, fake, _provider):
        url = await listening(gw, fake)
        async with httpx.AsyncClient() as client:
            ok = await client.get(
                url, params={"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158201444"}
            )
            assert (ok.status_code, ok.text) == (200, "1158201444")
            wrong = await client.get(
                url, params={"hub.mode": "subscribe", "hub.verify_token": "guess", "hub.challenge": "1"}
            )
            assert wrong.status_code == 403 and VERIFY_TOKEN not in wrong.text
            assert (await client.get(url, params={"hub.challenge": "1"})).status_code == 403


async def test_an_unknown_number_gets_a_pairing_code_and_an_approved_one_an_answer(tmp_path: Path) -> None:
    with whatsapp_gateway(tmp_path) as (gw, fake, provider):
        await listening(gw, fake)
        fake.user_message(STRANGER, "hello, who are you?", name="Eve")
        await wait_for(lambda: fake.texts_to(STRANGER), what="the pairing reply")
        reply = fake.texts_to(STRANGER)[0]
        assert "Pairing code:" in reply and f"+{STRANGER}" in reply
        assert provider.requests == []
        code = reply.split("Pairing code: ")[1].split()[0].strip("*_`")
        pairing = await operator(gw, ["operator.pairing"])
        approved = await pairing.request(
            "channels.pairing.approve", {"channel": "whatsapp", "accountId": "default", "requestId": code}
        )
        assert approved["ok"], approved
        provider.push(Reply("Hi **Eve**, see [the docs](https://example.org)."))
        fake.user_message(STRANGER, "now?", name="Eve")
        await wait_for(lambda: len(fake.texts_to(STRANGER)) >= 2, what="the answer")
        assert fake.texts_to(STRANGER)[-1] == "Hi *Eve*, see the docs (https://example.org)."
        assert fake.sent[-1].body["text"]["preview_url"] is False
        assert all("who are you" not in str(m.content) for r in provider.requests for m in r.messages)
        assert fake.undelivered == 0 and set(fake.webhook_statuses) == {200}


async def test_a_long_reply_is_split_under_4096_and_the_rate_limit_is_waited_out(tmp_path: Path) -> None:
    with whatsapp_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+1 (555) 123-{OWNER[-4:]}"]) as (
        gw,
        fake,
        provider,
    ):
        await listening(gw, fake)
        code = "```python\n" + "\n".join(f"print({i})  # line {i} of the program" for i in range(160)) + "\n```"
        provider.push(Reply("The program:\n\n" + code + "\n\n" + "And some words after it. " * 120))
        fake.user_message(OWNER, "write me a program")
        await wait_for(lambda: len(fake.texts_to(OWNER)) >= 3, what="the pieces")
        pieces = fake.texts_to(OWNER)
        assert all(len(p) <= 4096 for p in pieces) and all(p.count("```") % 2 == 0 for p in pieces)
        fake.limit_next()
        provider.push(Reply("after the limit"))
        began = time.monotonic()
        fake.user_message(OWNER, "hi again")
        await wait_for(lambda: "after the limit" in fake.texts_to(OWNER), timeout=20, what="the answer after 130429")
        assert time.monotonic() - began >= 5.0 and fake.texts_to(OWNER).count("after the limit") == 1


async def test_media_both_ways_read_receipts_and_typing(tmp_path: Path) -> None:
    with whatsapp_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+{OWNER}"]) as (gw, fake, provider):
        await listening(gw, fake)
        png = b"\x89PNG\r\n\x1a\n" + b"0" * 200
        media_id = fake.add_media(png, "image/png")
        thinking = asyncio.Event()
        provider.push(Gate(thinking, Reply("a cat")))
        asked = fake.user_message(
            OWNER, type="image", image={"id": media_id, "mime_type": "image/png", "caption": "what?"}
        )
        await wait_for(lambda: (asked, True) in fake.reads, what="read, with typing, while the model works")
        gw.call_soon(thinking.set)
        await wait_for(lambda: fake.texts_to(OWNER), what="the answer about the image")
        prompt = provider.requests[-1].messages[-1]
        assert isinstance(prompt, UserMessage) and isinstance(prompt.content, list)
        assert any(isinstance(part, ImageContent) for part in prompt.content) and "what?" in str(prompt.content)
        saved = list((gw.paths.state_dir / "workspace" / "media").rglob("*.png"))
        assert len(saved) == 1 and saved[0].read_bytes() == png
        (gw.paths.state_dir / "workspace" / "report.pdf").write_bytes(b"%PDF-1.4 fake")
        provider.push(Reply("", tool_calls=[("message", {"text": "the _report_", "file": "report.pdf"})]))
        provider.push(Reply("sent it"))
        fake.user_message(OWNER, "send me the report")
        await wait_for(lambda: any(s.media for s in fake.sent), what="the document")
        doc = next(s for s in fake.sent if s.media)
        assert doc.type == "document" and doc.media == ("report.pdf", b"%PDF-1.4 fake")
        assert doc.body["document"]["caption"] == "the _report_" and doc.body["document"]["filename"] == "report.pdf"


async def test_the_closed_24_hour_window_is_explained_in_the_dead_letter(tmp_path: Path) -> None:
    with whatsapp_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+{OWNER}"]) as (gw, fake, provider):
        await listening(gw, fake)
        fake.window_closed.add(OWNER)
        provider.push(Reply("too late"))
        fake.user_message(OWNER, "hi")
        client = await operator(gw, ["operator.admin"])

        async def dead() -> list[dict[str, Any]]:
            listed = (await client.request("channels.outbox.list", {}))["payload"]
            found: list[dict[str, Any]] = listed["deadLetters"]
            return found

        deadline = time.monotonic() + 15
        while not await dead() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        letters = await dead()
        assert letters and "24 hours" in letters[0]["lastError"] and "template" in letters[0]["lastError"]
        assert fake.texts_to(OWNER) == []


async def test_forged_webhooks_are_refused_and_reach_nobody(tmp_path: Path) -> None:
    with whatsapp_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+{OWNER}"]) as (gw, fake, provider):
        url = await listening(gw, fake)
        body = json.dumps(
            fake.notification([{"from": OWNER, "id": "wamid.X", "type": "text", "text": {"body": "evil"}}], [])
        ).encode()
        async with httpx.AsyncClient() as client:
            for headers in ({}, {"x-hub-signature-256": "sha256=" + "0" * 64}, {"x-hub-signature-256": "garbage"}):
                answer = await client.post(url, content=body, headers={"content-type": "application/json", **headers})
                assert answer.status_code == 401 and fake.app_secret not in answer.text
        fake.deliver(b"{not json")  # signed but broken: 400, and Meta would stop retrying it
        fake.deliver({"object": "page", "entry": []})  # another product's notification: skipped
        await wait_for(lambda: 400 in fake.webhook_statuses, what="the broken one refused")
        fake.callback_url = None  # the broken one would be retried forever by this fake; drop it
        await asyncio.sleep(0.3)
        assert provider.requests == [] and fake.sent == []


async def test_a_gateway_away_gets_every_message_when_it_is_back_once_each(tmp_path: Path) -> None:
    with whatsapp_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+{OWNER}"]) as (gw, fake, provider):
        url = await listening(gw, fake)
        provider.push(Reply("one"))
        fake.user_message(OWNER, "first")
        await wait_for(lambda: fake.texts_to(OWNER) == ["one"], what="the first answer")
        fake.callback_url = url.replace("/whatsapp/webhook", "/not-there")  # the gateway unreachable: 404s
        provider.push(Reply("two"), Reply("three"))
        fake.user_message(OWNER, "second")
        await wait_for(lambda: 404 in fake.webhook_statuses, what="a failed delivery")
        fake.callback_url = url  # back: the held notification comes first, in order
        await wait_for(lambda: fake.texts_to(OWNER) == ["one", "two"], what="the held message's answer")
        fake.user_message(OWNER, "third")
        await wait_for(lambda: len(fake.texts_to(OWNER)) == 3, what="both answers")
        await asyncio.sleep(0.3)
        assert fake.texts_to(OWNER) == ["one", "two", "three"]
        row = (await (await operator(gw)).request("channels.status", {}))["payload"]["channelAccounts"]["whatsapp"][0]
        assert row["connected"] is True and row["mode"] == "cloud" and row["accessTokenSource"] == "config"
        assert fake.token not in json.dumps(row) and fake.app_secret not in json.dumps(row)
