"""The ``neonize`` engine: WhatsApp Web through whatsmeow (Go), as the ``whatsapp-personal`` extra.

``neonize`` drives whatsmeow's client from Python; its session (the device's keys) lives in one
SQLite file in the account's session directory. This module only translates: neonize's protobuf
events become :mod:`linked` events, and the account's sends become neonize calls.

One change to how neonize delivers events: a message's handler is run to its end (the inbox
commit) before the callback returns to whatsmeow, which sends the delivery receipt after its
handlers return, so a crash before the commit leaves the message for WhatsApp to deliver again.
Other events are dispatched as neonize does.

Files are always handed to neonize as bytes (given a string, it would fetch URLs itself), and a
media message's download reference is the media part of the message alone (URL, path, keys and
hashes; thumbnails dropped), base64-encoded: it outlives a restart.
"""

from __future__ import annotations

import asyncio
import base64
import ctypes
import io
import logging
import os
from pathlib import Path
from typing import Any, Final

from homarus.channels.adapter import SendFailed
from homarus.channels.model import Attachment, AttachmentKind
from homarus.channels.whatsapp import linked

_popen = os.popen


def _read_and_close(cmd: str, mode: str = "r", buffering: int = -1) -> io.StringIO:
    with _popen(cmd, mode, buffering) as pipe:
        return io.StringIO(pipe.read())


# neonize's import reads `uname -a` through os.popen and never closes the pipe nor waits for the
# process (a leaked file and a zombie until the next subprocess reaps it): for the import only,
# os.popen reads the output and closes. The import runs once, when a personal account starts.
os.popen = _read_and_close  # type: ignore[assignment]
try:
    from google.protobuf.message import DecodeError
    from neonize.aioze import events as nz_events
    from neonize.aioze.client import NewAClient
    from neonize.events import EVENT_TO_INT, INT_TO_EVENT
    from neonize.proto import Neonize_pb2 as nz
    from neonize.proto.waE2E import WAWebProtobufsE2E_pb2 as wa
    from neonize.utils.enum import ChatPresence, ChatPresenceMedia, ReceiptType
finally:
    os.popen = _popen

WaMessage = wa.Message

__all__ = ["EVENT_TO_INT", "NeonizeDevice", "describe", "nz", "open_device", "translate", "wa"]

#: how long whatsmeow's thread waits for a message's commit
COMMIT_TIMEOUT_S: Final = 60.0
_MESSAGE: Final = EVENT_TO_INT[nz.Message]
_MEDIA: Final[tuple[tuple[str, AttachmentKind], ...]] = (
    ("imageMessage", "image"),
    ("videoMessage", "video"),
    ("audioMessage", "audio"),
    ("documentMessage", "document"),
    ("stickerMessage", "sticker"),
)
_THUMBNAILS: Final = ("JPEGThumbnail", "pngThumbnail", "thumbnailDirectPath", "thumbnailSHA256", "thumbnailEncSHA256")
_GONE: Final = frozenset({"LOGGED_OUT", "MAIN_DEVICE_GONE", "UNKNOWN_LOGOUT"})


def open_device(session_dir: Path, handler: linked.EventHandler, log: logging.Logger) -> NeonizeDevice:
    return NeonizeDevice(session_dir, handler, log)


def jid_string(jid: Any) -> str:
    if not jid.User and not jid.Server:
        return ""
    device = f":{jid.Device}" if jid.Device else ""
    return f"{jid.User}{device}@{jid.Server}"


def to_jid(value: str) -> nz.JID:
    user, _, server = value.partition("@")
    return nz.JID(User=user, Server=server or "s.whatsapp.net", IsEmpty=False)


def _context(message: Any) -> Any:
    for field in ("extendedTextMessage", *(name for name, _ in _MEDIA)):
        if message.HasField(field):
            part = getattr(message, field)
            if part.HasField("contextInfo"):
                return part.contextInfo
    return None


def _text_of(message: Any) -> str:
    if message.conversation:
        return str(message.conversation)
    if message.HasField("extendedTextMessage"):
        return str(message.extendedTextMessage.text)
    for field in ("imageMessage", "videoMessage", "documentMessage"):
        if message.HasField(field):
            return str(getattr(message, field).caption)
    return ""


def _unwrap(message: Any) -> Any:
    """The content inside disappearing, view-once and edited wrappers."""
    for _ in range(3):
        for wrapper in ("ephemeralMessage", "viewOnceMessage", "viewOnceMessageV2", "documentWithCaptionMessage"):
            if message.HasField(wrapper):
                message = getattr(message, wrapper).message
                break
        else:
            return message
    return message


def _media(message: Any) -> Attachment | None:
    for field, kind in _MEDIA:
        if not message.HasField(field):
            continue
        part = getattr(message, field)
        bare = WaMessage()
        copy = getattr(bare, field)
        copy.CopyFrom(part)
        for name in _THUMBNAILS:
            if name in copy.DESCRIPTOR.fields_by_name:
                copy.ClearField(name)
        copy.ClearField("contextInfo")
        if field == "audioMessage" and part.PTT:
            kind = "voice"
        file_name = str(part.fileName) if field == "documentMessage" and part.fileName else None
        ref = base64.b64encode(bare.SerializePartialToString()).decode("ascii")
        return Attachment(kind, ref, str(part.mimetype) or None, file_name, int(part.fileLength) or None)
    return None


def describe(event: Any) -> linked.LinkedMessage:
    """A neonize ``Message`` event as the account's :class:`LinkedMessage`."""
    info = event.Info
    source = info.MessageSource
    content = _unwrap(event.Message)
    edited = bool(event.IsEdit)
    if content.HasField("protocolMessage") and content.protocolMessage.HasField("editedMessage"):
        content, edited = _unwrap(content.protocolMessage.editedMessage), True
    context = _context(content)
    quoted_id = quoted_sender = quoted_text = None
    mentions: tuple[str, ...] = ()
    forwarded = False
    if context is not None:
        if context.stanzaID:
            quoted_id, quoted_sender = str(context.stanzaID), str(context.participant) or None
            if context.HasField("quotedMessage"):
                quoted_text = _text_of(_unwrap(context.quotedMessage))[:500] or None
        mentions = tuple(str(j) for j in context.mentionedJID)
        forwarded = bool(context.isForwarded)
    sender_alt = jid_string(source.SenderAlt)
    return linked.LinkedMessage(
        id=str(info.ID),
        chat=jid_string(source.Chat),
        sender=jid_string(source.Sender),
        sender_name=str(info.Pushname),
        sender_phone=sender_alt if sender_alt.endswith("@s.whatsapp.net") else "",
        from_me=bool(source.IsFromMe),
        group=bool(source.IsGroup),
        timestamp_ms=int(info.Timestamp) * (1000 if info.Timestamp < 10**11 else 1),
        text=_text_of(content),
        quoted_id=quoted_id,
        quoted_sender=quoted_sender,
        quoted_text=quoted_text,
        mentions=mentions,
        forwarded=forwarded,
        edited=edited,
        media=_media(content),
    )


def translate(event: Any) -> linked.LinkedEvent | None:
    """A neonize connection event as a :mod:`linked` event (None: not one the account needs)."""
    if isinstance(event, nz.QR):
        return linked.QrCode(str(event.Codes[0])) if event.Codes else None
    if isinstance(event, nz.PairStatus):
        if event.Status == nz.PairStatus.SUCCESS:
            return linked.Paired(jid_string(event.ID), str(event.BusinessName))
        return linked.Paired("", error=str(event.Error) or "refused")
    if isinstance(event, nz.Connected):
        return linked.Connected()  # who this device is: added by the device (neonize keeps it apart)
    if isinstance(event, nz.Disconnected):
        return linked.Disconnected()
    if isinstance(event, nz.KeepAliveTimeout):
        return linked.KeepAliveLost(int(event.ErrorCount) or 1)
    if isinstance(event, nz.KeepAliveRestored):
        return linked.KeepAliveRestored()
    if isinstance(event, nz.LoggedOut):
        return linked.LoggedOut(nz.ConnectFailureReason.Name(event.Reason).lower().replace("_", " "))
    if isinstance(event, nz.TemporaryBan):
        return linked.Refused(f"temporarily banned by WhatsApp (code {event.Code}, {event.Expire} s)")
    if isinstance(event, nz.ConnectFailure):
        reason = nz.ConnectFailureReason.Name(event.Reason)
        words = reason.lower().replace("_", " ") + (f": {event.Message}" if event.Message else "")
        if reason in _GONE:
            return linked.LoggedOut(words)
        if reason == "TEMP_BANNED":
            return linked.Refused(words)
        if reason in ("CLIENT_OUTDATED", "BAD_USER_AGENT"):
            return linked.Refused(f"{words} (update the whatsapp-personal extra)", permanent=True)
        return linked.Disconnected(words)
    if isinstance(event, nz.ClientOutdated):
        return linked.Refused("this WhatsApp Web client is outdated (update the whatsapp-personal extra)", True)
    if isinstance(event, nz.StreamReplaced):
        return linked.Refused("another connection of this device took over")
    if isinstance(event, nz.StreamError):
        return linked.Disconnected(f"stream error {event.Code}")
    return None


_CONNECTION_EVENTS: Final = (
    nz.PairStatus,
    nz.Connected,
    nz.Disconnected,
    nz.KeepAliveTimeout,
    nz.KeepAliveRestored,
    nz.LoggedOut,
    nz.TemporaryBan,
    nz.ConnectFailure,
    nz.ClientOutdated,
    nz.StreamReplaced,
    nz.StreamError,
)


class NeonizeDevice:
    def __init__(self, session_dir: Path, handler: linked.EventHandler, log: logging.Logger) -> None:
        self._handler = handler
        self._log = log
        self._loop: asyncio.AbstractEventLoop | None = None
        self.client = NewAClient(str(session_dir / "session.db"))
        # whatsmeow sends only the events a handler is registered for; a message is then taken
        # by _execute before neonize's dispatch, so that it is handled to its commit
        for kind in (*_CONNECTION_EVENTS, nz.Message):
            self.client.event(kind)(self._dispatch)
        self.client.event.qr(self._qr)
        self._neonize_execute = self.client.event.execute
        self.client.event.execute = self._execute

    # -- events ------------------------------------------------------------------------------------
    def _execute(self, uuid: int, binary: int, size: int, code: int) -> None:
        """whatsmeow's callback (its thread): a message is handled to its commit before returning."""
        if code != _MESSAGE or self._loop is None:
            self._neonize_execute(uuid, binary, size, code)
            return
        try:
            event = INT_TO_EVENT[code].FromString(ctypes.string_at(binary, size))
            message = describe(event)
            asyncio.run_coroutine_threadsafe(self._handler(message), self._loop).result(COMMIT_TIMEOUT_S)
        except Exception as exc:  # never raise into Go
            self._log.warning("whatsapp: a message was not committed (WhatsApp will deliver it again): %s", exc)

    async def _dispatch(self, _client: NewAClient, event: Any) -> None:
        translated = translate(event)
        if isinstance(translated, linked.Connected):
            me = self.client.me
            if me is not None:
                translated = linked.Connected(jid_string(me.JID), jid_string(me.LID))
        if translated is not None:
            await self._handler(translated)

    async def _qr(self, _client: NewAClient, code: bytes) -> None:
        await self._handler(linked.QrCode(code.decode("utf-8", "replace")))

    # -- the connection ------------------------------------------------------------------------------
    async def connect(self) -> None:
        self._loop = asyncio.get_running_loop()
        nz_events.set_event_loop(self._loop)
        await self.client.connect()

    def alive(self) -> bool:
        try:
            return bool(self.client.is_connected() and self.client.is_logged_in())
        except Exception:
            return False

    async def close(self) -> None:
        try:
            await self.client.disconnect()
        finally:
            await self.client.stop()
            task = self.client.connect_task
            if task is not None:
                task.cancel()

    async def logout(self) -> None:
        await self.client.logout()

    # -- sending -------------------------------------------------------------------------------------
    async def send_text(self, chat: str, text: str) -> str:
        response = await self.client.send_message(to_jid(chat), text)
        return str(response.ID)

    async def send_file(self, chat: str, data: bytes, *, mime: str, kind: str, name: str, caption: str) -> str:
        client = self.client
        if kind == "image":
            message = await client.build_image_message(data, caption=caption or None)
        elif kind == "video":
            message = await client.build_video_message(data, caption=caption or None)
        elif kind in ("audio", "voice"):
            message = await client.build_audio_message(data, ptt=kind == "voice")
        else:
            message = await client.build_document_message(data, caption=caption or None, filename=name, mimetype=mime)
        response = await client.send_message(to_jid(chat), message)
        if caption and kind in ("audio", "voice"):  # WhatsApp takes no caption on audio
            await client.send_message(to_jid(chat), caption)
        return str(response.ID)

    async def typing(self, chat: str) -> None:
        await self.client.send_chat_presence(
            to_jid(chat), ChatPresence.CHAT_PRESENCE_COMPOSING, ChatPresenceMedia.CHAT_PRESENCE_MEDIA_TEXT
        )

    async def mark_read(self, chat: str, sender: str, message_id: str) -> None:
        await self.client.mark_read(message_id, chat=to_jid(chat), sender=to_jid(sender), receipt=ReceiptType.READ)

    async def download(self, ref: str, max_bytes: int) -> bytes:
        try:
            message = WaMessage.FromString(base64.b64decode(ref, validate=True))
        except (ValueError, DecodeError):
            raise SendFailed("not a WhatsApp media reference", permanent=True) from None
        media = _media(message)
        if media is None:
            raise SendFailed("not a WhatsApp media reference", permanent=True)
        if media.size is not None and media.size > max_bytes:
            raise SendFailed(f"the file is {media.size} bytes, over the {max_bytes}-byte cap", permanent=True)
        body: bytes = await self.client.download_any(message)
        return body
