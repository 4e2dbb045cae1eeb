"""A personal WhatsApp number linked as a device, end to end through a real gateway: linking by QR
code (``web.login.start`` / ``web.login.wait`` and ``homarus channels login``), DM pairing, an
allowed DM, groups with and without a mention, media, the watchdog that reconnects a link gone
deaf or silent, an unlink from the phone, logout. WhatsApp's side is the engine stand-in of
``tests/fakes/whatsapp_web.py`` (see there why it is not a wire-level fake)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from homarus.channels.model import Attachment
from homarus.channels.whatsapp import linked
from homarus.channels.whatsapp.personal import PersonalAccount
from homarus.messages import ImageContent, UserMessage
from homarus.providers.scripted import Gate, Reply, ScriptedProvider
from tests.channels.operator import operator
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.fakes.whatsapp_web import OWN_JID, OWN_LID, FakeWhatsAppWeb, dm, group_message
from tests.waiting import wait_for
from tests.wsclient import Client

OWNER = "15551230001"
STRANGER = "15551230002"
GROUP = "120363000000000001"


@pytest.fixture(autouse=True)
def quick_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PersonalAccount, "CHECK_S", 0.05)
    monkeypatch.setattr(PersonalAccount, "SILENCE_S", 0.6)


def config(**whatsapp: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "channels": {"whatsapp": {"mode": "personal", "engine": "fake", **whatsapp}},
        "messages": {"inbound": {"debounceMs": 0}},
        "commands": {"ownerAllowFrom": [f"whatsapp:+{OWNER}"]},
    }


@contextmanager
def personal_gateway(tmp_path: Path, **wa: Any) -> Iterator[tuple[RunningGateway, FakeWhatsAppWeb, ScriptedProvider]]:
    fake = FakeWhatsAppWeb()
    linked.register_engine("fake", fake.factory)
    with run_gateway(tmp_path, config=config(**wa)) as gw:
        provider = ScriptedProvider(then="echo")
        gw.gateway.models.overrides["test"] = provider
        yield gw, fake, provider


async def account_row(client: Client) -> dict[str, Any]:
    status = (await client.request("channels.status", {}))["payload"]
    row: dict[str, Any] = status["channelAccounts"]["whatsapp"][0]
    return row


async def link(gw: RunningGateway, fake: FakeWhatsAppWeb) -> Client:
    client = await operator(gw, ["operator.admin"])
    started = await client.request("web.login.start", {"channel": "whatsapp"})
    assert started["ok"] and started["payload"]["qrDataUrl"].startswith("data:image/png;base64,"), started
    fake.scan()
    waited = await client.request("web.login.wait", {"currentQrDataUrl": started["payload"]["qrDataUrl"]})
    assert waited["payload"]["connected"] is True, waited
    return client


def personal(gw: RunningGateway) -> PersonalAccount:
    account = gw.gateway.channels.manager.account("whatsapp", "default")
    assert isinstance(account, PersonalAccount)
    return account


def session_dir(gw: RunningGateway) -> Path:
    return personal(gw).session_dir


async def test_linking_by_qr_code_in_the_control_ui_flow(tmp_path: Path) -> None:
    with personal_gateway(tmp_path) as (gw, fake, _provider):
        client = await operator(gw, ["operator.admin"])
        row = await wait_for(lambda: gw.gateway.channels.manager.account("whatsapp", "default"), what="the account")
        assert row is not None
        before = await account_row(client)
        assert before["healthState"] == "unlinked" and "channels login whatsapp" in before["lastError"]
        assert before["connected"] is False and before["details"]["linked"] is False and fake.devices == []

        started = (await client.request("web.login.start", {"channel": "whatsapp", "timeoutMs": 5000}))["payload"]
        assert started["connected"] is False and "Linked devices" in started["message"]
        png = base64.b64decode(started["qrDataUrl"].split(",", 1)[1])
        assert png.startswith(b"\x89PNG") and started["qr"] == "2@fake-code-1,key,identity,adv"
        assert (await account_row(client))["details"]["waitingForScan"] is True

        # a wait that sees no new code and no scan ends at its timeout, still waiting
        same = await client.request("web.login.wait", {"timeoutMs": 200, "currentQrDataUrl": started["qrDataUrl"]})
        assert same["payload"] == {"connected": False, "linking": True, "message": "still waiting for the scan"}
        gw.call_soon(fake.show_code)  # WhatsApp rotates the code
        fresh = (await client.request("web.login.wait", {"currentQrDataUrl": started["qrDataUrl"]}))["payload"]
        assert fresh["qrDataUrl"] != started["qrDataUrl"] and fresh["qr"].startswith("2@fake-code-2")

        fake.scan()
        done = (await client.request("web.login.wait", {"currentQrDataUrl": fresh["qrDataUrl"]}))["payload"]
        assert done["connected"] is True and "+15550009999" in done["message"]
        after = await account_row(client)
        assert after["connected"] is True and after["identity"]["username"] == "+15550009999"
        assert after["details"]["linked"] is True and "waitingForScan" not in after["details"]
        record = session_dir(gw) / "linked.json"
        assert (record.stat().st_mode & 0o777, session_dir(gw).stat().st_mode & 0o777) == (0o600, 0o700)
        assert json.loads(record.read_text())["lid"] == OWN_LID
        again = (await client.request("web.login.start", {"channel": "whatsapp"}))["payload"]
        assert again["connected"] is True and "already linked" in again["message"]
        # bad input: a foreign data URL, an unknown account, a channel that does not link by code
        bad = await client.request("web.login.wait", {"currentQrDataUrl": "https://example.org/qr.png"})
        assert bad["ok"] is False and bad["error"]["code"] == "INVALID_REQUEST"
        unknown = await client.request("web.login.start", {"accountId": "nobody"})
        assert unknown["ok"] is False and "no account" in unknown["error"]["message"]
        reader = await operator(gw, ["operator.read"])
        refused = await reader.request("web.login.start", {})
        assert refused["ok"] is False and "operator.admin" in refused["error"]["message"]


async def test_pairing_an_allowed_dm_and_groups_with_and_without_a_mention(tmp_path: Path) -> None:
    with personal_gateway(tmp_path, groups={"*": {"requireMention": True}}, groupAllowFrom=[f"+{OWNER}"]) as (
        gw,
        fake,
        provider,
    ):
        client = await link(gw, fake)
        fake.message(dm(STRANGER, "hello, who are you?", "M1", name="Eve"))
        await wait_for(lambda: fake.texts_to(f"{STRANGER}@s.whatsapp.net"), what="the pairing reply")
        reply = fake.texts_to(f"{STRANGER}@s.whatsapp.net")[0]
        assert "Pairing code:" in reply and provider.requests == []
        code = reply.split("Pairing code: ")[1].split()[0].strip("*_`")
        approved = await client.request(
            "channels.pairing.approve", {"channel": "whatsapp", "accountId": "default", "requestId": code}
        )
        assert approved["ok"], approved

        thinking = asyncio.Event()
        provider.push(Gate(thinking, Reply("Hi **Eve**")))
        fake.message(dm(STRANGER, "now?", "M2", name="Eve"))
        stranger = f"{STRANGER}@s.whatsapp.net"
        await wait_for(lambda: (stranger, stranger, "M2") in fake.reads, what="read while the model works")
        assert stranger in fake.typing
        gw.call_soon(thinking.set)
        await wait_for(lambda: "Hi *Eve*" in fake.texts_to(stranger), what="the answer")

        fake.message(group_message(GROUP, OWNER, "chatting among ourselves", "G1"))
        provider.push(Reply("here I am"))
        fake.message(group_message(GROUP, OWNER, "@15550009999 are you there?", "G2", mentions=(OWN_JID,)))
        await wait_for(lambda: fake.texts_to(f"{GROUP}@g.us"), what="the answer in the group")
        assert fake.texts_to(f"{GROUP}@g.us") == ["here I am"]
        assert all("among ourselves" not in str(m.content) for r in provider.requests for m in r.messages)
        provider.push(Reply("by privacy id too"))
        fake.message(group_message(GROUP, OWNER, "@98765 again", "G3", mentions=(OWN_LID,)))
        await wait_for(lambda: len(fake.texts_to(f"{GROUP}@g.us")) == 2, what="the answer to a LID mention")


async def test_an_image_in_and_a_document_out(tmp_path: Path) -> None:
    with personal_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+{OWNER}"]) as (gw, fake, provider):
        await link(gw, fake)
        png = b"\x89PNG\r\n\x1a\n" + b"0" * 200
        fake.files["ref-1"] = png
        provider.push(Reply("a cat"))
        media = Attachment("image", "ref-1", "image/png", None, len(png))
        fake.message(dm(OWNER, "what?", "I1", media=media))
        await wait_for(lambda: fake.texts_to(f"{OWNER}@s.whatsapp.net"), what="the answer about the image")
        prompt = provider.requests[-1].messages[-1]
        assert isinstance(prompt, UserMessage) and isinstance(prompt.content, list)
        assert any(isinstance(part, ImageContent) for part in prompt.content)
        (gw.paths.state_dir / "workspace" / "report.pdf").write_bytes(b"%PDF-1.4 fake")
        provider.push(Reply("", tool_calls=[("message", {"text": "the report", "file": "report.pdf"})]))
        provider.push(Reply("sent it"))
        fake.message(dm(OWNER, "send me the report", "I2"))
        await wait_for(lambda: any(s.kind == "document" for s in fake.sent), what="the document")
        doc = next(s for s in fake.sent if s.kind == "document")
        assert (doc.name, doc.size, doc.text) == ("report.pdf", 13, "the report")


async def test_a_deaf_link_is_noticed_and_reconnected_and_nothing_is_lost_or_repeated(tmp_path: Path) -> None:
    with personal_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+{OWNER}"]) as (gw, fake, provider):
        client = await link(gw, fake)
        owner = f"{OWNER}@s.whatsapp.net"
        provider.push(Reply("one"))
        fake.message(dm(OWNER, "first", "D1"))
        await wait_for(lambda: fake.texts_to(owner) == ["one"], what="the first answer")

        fake.go_silent()  # the socket looks open, nothing arrives: whatsmeow would not notice
        provider.push(Reply("two"), Reply("three"))
        fake.message(dm(OWNER, "second", "D2"))  # held by WhatsApp
        await wait_for(lambda: len(fake.devices) == 2, timeout=10, what="a new connection")
        await wait_for(lambda: fake.texts_to(owner) == ["one", "two"], what="the held message's answer")
        row = await account_row(client)
        assert row["connected"] is True and row["details"]["reconnects"] == 1

        fake.keepalive_lost()  # WhatsApp stops answering keepalives: degraded, then a new connection
        await wait_for(lambda: personal(gw).state == "degraded")
        await wait_for(lambda: len(fake.devices) == 3, timeout=10, what="a connection after the silence")
        fake.message(dm(OWNER, "third", "D3"))
        fake.message(dm(OWNER, "third", "D3"))  # delivered twice by WhatsApp: answered once
        await wait_for(lambda: len(fake.texts_to(owner)) == 3, what="the third answer")
        await asyncio.sleep(0.3)
        assert fake.texts_to(owner) == ["one", "two", "three"]


async def test_a_reply_during_an_outage_is_sent_after_the_reconnect(tmp_path: Path) -> None:
    with personal_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+{OWNER}"]) as (gw, fake, provider):
        client = await link(gw, fake)
        fake.refuse_sends = True
        provider.push(Reply("late but there"))
        fake.message(dm(OWNER, "hello", "O1"))
        await wait_for(lambda: provider.requests, what="the run")
        await asyncio.sleep(0.3)
        fake.refuse_sends = False
        await wait_for(
            lambda: fake.texts_to(f"{OWNER}@s.whatsapp.net") == ["late but there"], timeout=20, what="the retry"
        )
        assert (await account_row(client))["connected"] is True


async def test_unlinked_from_the_phone_and_logout(tmp_path: Path) -> None:
    with personal_gateway(tmp_path) as (gw, fake, _provider):
        client = await link(gw, fake)
        fake.unlink()
        await wait_for(lambda: not (session_dir(gw) / "linked.json").exists(), what="the link forgotten")
        await wait_for(lambda: personal(gw).state == "unlinked", what="unlinked")
        row = await account_row(client)
        assert row["healthState"] == "unlinked" and "link it again" in row["lastError"]
        await link(gw, fake)  # linking again works
        where = session_dir(gw)
        out = await client.request("channels.logout", {"channel": "whatsapp"})
        assert out["payload"]["loggedOut"] == ["default"] and fake.logouts == 1
        assert not where.exists()
        # linking after a logout starts the account again
        again = await client.request("web.login.start", {"channel": "whatsapp", "timeoutMs": 5000})
        assert again["payload"]["qrDataUrl"].startswith("data:image/png;base64,")


async def test_an_engine_that_is_not_installed_is_named_with_the_fix(tmp_path: Path) -> None:
    with personal_gateway(tmp_path, engine="absent") as (gw, _fake, _provider):
        client = await operator(gw)
        row = await wait_for(
            lambda: gw.gateway.channels.manager.errors.get(("whatsapp", "default")), what="the start error"
        )
        assert "no WhatsApp engine 'absent'" in row
        status = await account_row(client)
        assert status["healthState"] == "error" and "neonize" in status["lastError"]
        admin = await operator(gw, ["operator.admin"])
        began = time.monotonic()
        answer = (await admin.request("web.login.start", {"channel": "whatsapp"}))["payload"]
        assert answer["connected"] is False and answer["linking"] is False
        assert "no WhatsApp engine 'absent'" in answer["message"] and time.monotonic() - began < 5


async def test_channels_login_draws_the_code_in_the_terminal_and_waits_for_the_scan(tmp_path: Path) -> None:
    with personal_gateway(tmp_path) as (gw, fake, _provider):
        env = {**os.environ, "HOMARUS_STATE_DIR": str(gw.paths.state_dir)}
        env.pop("HOMARUS_CONFIG", None)
        cmd = [sys.executable, "-m", "homarus", "channels", "login", "whatsapp", "--url", gw.url, "--token", TEST_TOKEN]
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(tmp_path)
        )
        assert proc.stdout is not None
        seen = b""
        async with asyncio.timeout(30):
            while b"Linked devices" not in seen:
                seen += await proc.stdout.readline()
        assert "█" in seen.decode() or "▀" in seen.decode()
        fake.scan()
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, err.decode()
        assert "Linked: +15550009999" in out.decode()


async def test_logout_removes_only_the_session_from_an_auth_dir_the_user_chose(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    for other in ("creds.json", "session-15551230001.json"):  # what the original's Baileys keeps
        (mine / other).write_text("{}")
    with personal_gateway(tmp_path, authDir=str(mine)) as (gw, fake, _provider):
        client = await link(gw, fake)
        assert session_dir(gw) == mine and (mine / "linked.json").exists() and (mine / "session.fake").exists()
        await client.request("channels.logout", {"channel": "whatsapp"})
        assert sorted(p.name for p in mine.iterdir()) == ["creds.json", "notes.txt", "session-15551230001.json"]


async def test_a_long_reply_is_split_under_4096_without_breaking_a_code_block(tmp_path: Path) -> None:
    with personal_gateway(tmp_path, dmPolicy="allowlist", allowFrom=[f"+{OWNER}"]) as (gw, fake, provider):
        await link(gw, fake)
        code = "```python\n" + "\n".join(f"print({i})  # line {i} of the program" for i in range(160)) + "\n```"
        provider.push(Reply("The program:\n\n" + code + "\n\n" + "And some words after it. " * 120))
        fake.message(dm(OWNER, "write me a program", "L1"))
        owner = f"{OWNER}@s.whatsapp.net"
        await wait_for(lambda: len(fake.texts_to(owner)) >= 3, what="the pieces")
        pieces = fake.texts_to(owner)
        assert all(len(p) <= 4096 for p in pieces) and all(p.count("```") % 2 == 0 for p in pieces)
        assert "print(159)" in "".join(pieces) and pieces[-1].rstrip().endswith("after it.")
