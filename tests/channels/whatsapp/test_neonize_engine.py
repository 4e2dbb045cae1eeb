"""The neonize engine's translation (neonize comes with the dev install, through the
``whatsapp-personal`` extra), on neonize's real protobuf classes (the events whatsmeow hands
over), and its one change to neonize's dispatch: a message's callback returns to whatsmeow only
after the account's handler (the commit) has finished."""

from __future__ import annotations

import asyncio
import base64
import ctypes
import logging
import threading
from pathlib import Path

import pytest

from homarus.channels.adapter import SendFailed
from homarus.channels.whatsapp import linked

# neonize's own modules through the engine, which imports them without their import-time leak
from homarus.channels.whatsapp.neonize_engine import EVENT_TO_INT, NeonizeDevice, describe, nz, translate, wa


def jid(user: str, server: str = "s.whatsapp.net", device: int = 0) -> nz.JID:
    return nz.JID(User=user, Server=server, Device=device)


def event(message: wa.Message, *, chat: nz.JID, sender: nz.JID, group: bool = False, **info: object) -> nz.Message:
    source = nz.MessageSource(Chat=chat, Sender=sender, IsGroup=group, IsFromMe=bool(info.pop("from_me", False)))
    alt = info.pop("sender_alt", None)
    if alt is not None:
        source.SenderAlt.CopyFrom(alt)
    return nz.Message(
        Info=nz.MessageInfo(MessageSource=source, ID="3EB0ABC", Pushname="Ana", Timestamp=1764400000),
        Message=message,
    )


def test_a_plain_dm() -> None:
    got = describe(event(wa.Message(conversation="hi there"), chat=jid("15551230001"), sender=jid("15551230001")))
    assert (got.id, got.chat, got.sender, got.text, got.sender_name) == (
        "3EB0ABC",
        "15551230001@s.whatsapp.net",
        "15551230001@s.whatsapp.net",
        "hi there",
        "Ana",
    )
    assert got.timestamp_ms == 1764400000000 and not got.group and got.media is None
    inbound = linked.to_inbound(got, account_id="default", own=("15550009999@s.whatsapp.net",))
    assert not isinstance(inbound, str)
    assert (inbound.chat_kind, inbound.chat_id, inbound.sender_id) == ("direct", "+15551230001", "+15551230001")


def test_a_group_reply_with_a_mention_from_a_privacy_id() -> None:
    context = wa.ContextInfo(
        stanzaID="3EB0PREV",
        participant="98765@lid",
        quotedMessage=wa.Message(conversation="what I said before"),
        mentionedJID=["98765@lid"],
    )
    message = wa.Message(extendedTextMessage=wa.ExtendedTextMessage(text="@98765 right?", contextInfo=context))
    got = describe(
        event(
            message,
            chat=jid("120363000000000001", "g.us"),
            sender=jid("4455", "lid"),
            group=True,
            sender_alt=jid("15551230001", device=3),
        )
    )
    assert got.group and got.chat == "120363000000000001@g.us" and got.sender_phone == "15551230001:3@s.whatsapp.net"
    assert (got.quoted_id, got.quoted_sender, got.quoted_text) == ("3EB0PREV", "98765@lid", "what I said before")
    inbound = linked.to_inbound(got, account_id="default", own=("15550009999@s.whatsapp.net", "98765@lid"))
    assert not isinstance(inbound, str)
    assert inbound.chat_kind == "group" and inbound.sender_id == "+15551230001"
    assert inbound.was_mentioned and inbound.reply_to_bot and inbound.chat_id == "120363000000000001@g.us"


def test_media_references_carry_the_keys_but_no_thumbnail_and_survive_a_round_trip() -> None:
    image = wa.ImageMessage(
        URL="https://mmg.whatsapp.net/o1/v/t62/abc",
        directPath="/o1/v/t62/abc",
        mediaKey=b"k" * 32,
        fileLength=120_000,
        mimetype="image/jpeg",
        caption="look",
        JPEGThumbnail=b"t" * 5000,
    )
    got = describe(event(wa.Message(imageMessage=image), chat=jid("1555"), sender=jid("1555")))
    assert got.text == "look" and got.media is not None
    assert (got.media.kind, got.media.mime_type, got.media.size) == ("image", "image/jpeg", 120_000)
    stored = wa.Message.FromString(base64.b64decode(got.media.ref))
    assert stored.imageMessage.mediaKey == b"k" * 32 and not stored.imageMessage.JPEGThumbnail
    assert len(got.media.ref) < 400
    voice = wa.Message(audioMessage=wa.AudioMessage(PTT=True, mimetype="audio/ogg; codecs=opus", fileLength=9000))
    note = describe(event(voice, chat=jid("1555"), sender=jid("1555")))
    assert note.media is not None and note.media.kind == "voice"
    doc = wa.Message(documentMessage=wa.DocumentMessage(fileName="a.pdf", mimetype="application/pdf", caption="c"))
    paper = describe(event(doc, chat=jid("1555"), sender=jid("1555")))
    assert paper.media is not None and (paper.media.kind, paper.media.file_name, paper.text) == (
        "document",
        "a.pdf",
        "c",
    )


def test_wrapped_edited_own_and_status_messages() -> None:
    wrapped = wa.Message(ephemeralMessage=wa.FutureProofMessage(message=wa.Message(conversation="disappearing")))
    assert describe(event(wrapped, chat=jid("1555"), sender=jid("1555"))).text == "disappearing"
    edit = wa.Message(protocolMessage=wa.ProtocolMessage(editedMessage=wa.Message(conversation="fixed the typo")))
    edited = describe(event(edit, chat=jid("1555"), sender=jid("1555")))
    assert edited.edited and edited.text == "fixed the typo"
    mine = describe(event(wa.Message(conversation="x"), chat=jid("1555"), sender=jid("1555"), from_me=True))
    assert linked.to_inbound(mine, account_id="a", own=()) == "sent from this account"
    status = describe(event(wa.Message(conversation="x"), chat=jid("status", "broadcast"), sender=jid("1555")))
    assert linked.to_inbound(status, account_id="a", own=()) == "a status or channel update"
    empty = describe(event(wa.Message(), chat=jid("1555"), sender=jid("1555")))
    assert linked.to_inbound(empty, account_id="a", own=()) == "no text or media"


def test_connection_events() -> None:
    assert translate(nz.QR(Codes=["2@a", "2@b"])) == linked.QrCode("2@a")
    paired = translate(
        nz.PairStatus(ID=jid("15550009999", device=12), BusinessName="Shop", Status=nz.PairStatus.SUCCESS)
    )
    assert paired == linked.Paired("15550009999:12@s.whatsapp.net", "Shop")
    failed = translate(nz.PairStatus(Status=nz.PairStatus.ERROR, Error="bad signature"))
    assert isinstance(failed, linked.Paired) and failed.error == "bad signature"
    assert translate(nz.KeepAliveTimeout(ErrorCount=4)) == linked.KeepAliveLost(4)
    assert translate(nz.KeepAliveRestored()) == linked.KeepAliveRestored()
    assert translate(nz.LoggedOut(Reason=nz.ConnectFailureReason.Value("MAIN_DEVICE_GONE"))) == linked.LoggedOut(
        "main device gone"
    )
    gone = translate(nz.ConnectFailure(Reason=nz.ConnectFailureReason.Value("LOGGED_OUT")))
    assert isinstance(gone, linked.LoggedOut)
    outdated = translate(nz.ConnectFailure(Reason=nz.ConnectFailureReason.Value("CLIENT_OUTDATED")))
    assert isinstance(outdated, linked.Refused) and outdated.permanent
    banned = translate(nz.TemporaryBan(Expire=3600))
    assert isinstance(banned, linked.Refused) and not banned.permanent
    assert isinstance(translate(nz.StreamReplaced()), linked.Refused)
    assert isinstance(
        translate(nz.ConnectFailure(Reason=nz.ConnectFailureReason.Value("GENERIC"))), linked.Disconnected
    )
    assert translate(nz.Receipt()) is None


async def test_a_message_callback_returns_only_after_the_handler_finished(tmp_path: Path) -> None:
    committed = asyncio.Event()
    release = asyncio.Event()
    seen: list[linked.LinkedEvent] = []

    async def handler(ev: linked.LinkedEvent) -> None:
        seen.append(ev)
        await release.wait()  # the inbox commit, taking its time
        committed.set()

    device = NeonizeDevice(tmp_path, handler, logging.getLogger("test"))
    device._loop = asyncio.get_running_loop()
    raw = event(wa.Message(conversation="hello"), chat=jid("1555"), sender=jid("1555")).SerializePartialToString()
    buffer = ctypes.create_string_buffer(raw, len(raw))
    returned = threading.Event()

    def whatsmeow() -> None:
        device._execute(0, ctypes.addressof(buffer), len(raw), EVENT_TO_INT[nz.Message])
        returned.set()

    thread = threading.Thread(target=whatsmeow)
    thread.start()
    for _ in range(100):
        if seen:
            break
        await asyncio.sleep(0.01)
    assert isinstance(seen[0], linked.LinkedMessage) and seen[0].text == "hello"
    await asyncio.sleep(0.1)
    assert not returned.is_set()  # no receipt yet: the commit has not finished
    release.set()
    await committed.wait()
    await asyncio.to_thread(thread.join, 5)
    assert returned.is_set()


async def test_download_refuses_a_bad_reference_and_an_oversized_file(tmp_path: Path) -> None:
    async def handler(ev: linked.LinkedEvent) -> None:
        return None

    device = NeonizeDevice(tmp_path, handler, logging.getLogger("test"))
    with pytest.raises(SendFailed, match="not a WhatsApp media reference"):
        await device.download("%%%not base64", 1000)
    big = wa.Message(videoMessage=wa.VideoMessage(fileLength=50_000_000, mimetype="video/mp4"))
    ref = base64.b64encode(big.SerializePartialToString()).decode()
    with pytest.raises(SendFailed, match="over the 1000-byte cap"):
        await device.download(ref, 1000)
