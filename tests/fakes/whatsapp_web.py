"""WhatsApp's servers, as a personal account's engine sees them, standing in behind the engine
boundary (``channels/whatsapp/linked.py``).

WhatsApp Web's own protocol (Noise handshakes, Signal sessions, binary XML) cannot be served on
loopback, so the stand-in is an engine: ``FakeWhatsAppWeb.factory`` opens devices the way
``neonize_engine.open_device`` does, and the test plays the platform and the phone (``scan``,
``message``, ``go_silent``, ``unlink``). What a device does on WhatsApp's side is recorded: codes
shown, messages sent, read receipts, typing, logouts. Like whatsmeow, a device that connects
with a session gets the messages that arrived while it was away, and a message is taken as
delivered only once the account's handler returned (else it comes again on the next connect).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homarus.channels.adapter import SendFailed
from homarus.channels.whatsapp import linked

OWN_JID = "15550009999@s.whatsapp.net"
OWN_LID = "98765@lid"


@dataclass
class Sent:
    chat: str
    text: str = ""
    kind: str = "text"
    name: str = ""
    size: int = 0


@dataclass
class FakeWhatsAppWeb:
    devices: list[FakeDevice] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    reads: list[tuple[str, str, str]] = field(default_factory=list)
    typing: list[str] = field(default_factory=list)
    logouts: int = 0
    #: messages WhatsApp holds until a linked device takes them
    queued: list[linked.LinkedMessage] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    codes_shown: int = 0
    #: sends fail while set (WhatsApp refusing)
    refuse_sends: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def factory(self, session_dir: Path, handler: linked.EventHandler, log: Any) -> FakeDevice:
        device = FakeDevice(self, session_dir, handler)
        self.devices.append(device)
        return device

    @property
    def device(self) -> FakeDevice:
        return self.devices[-1]

    def texts_to(self, chat: str) -> list[str]:
        return [s.text for s in self.sent if s.chat == chat and s.kind == "text"]

    # -- the phone and the platform -------------------------------------------------------------------
    def show_code(self) -> None:
        """WhatsApp hands the linking device a fresh code (about every 20 s)."""
        self.codes_shown += 1
        self.device.emit(linked.QrCode(f"2@fake-code-{self.codes_shown},key,identity,adv"))

    def scan(self) -> None:
        """The phone scans the code on screen: the device is paired, then connected."""
        device = self.device
        (device.session_dir / "session.fake").write_text(OWN_JID)
        device.emit(linked.Paired(OWN_JID.replace("@", ":12@"), "Personal"))
        device.connected = True
        device.emit(linked.Connected(OWN_JID, OWN_LID))
        device.deliver_queued()

    def message(self, msg: linked.LinkedMessage) -> None:
        """Someone writes: the connected device gets it, else WhatsApp keeps it for later."""
        with self.lock:
            self.queued.append(msg)
        device = self.devices[-1] if self.devices else None
        if device is not None and device.connected and not device.silent:
            device.deliver_queued()

    def go_silent(self) -> None:
        """The connection stays open but nothing arrives any more, keepalives unanswered, and the
        engine does not notice: the "linked but deaf" case."""
        self.device.silent = True
        self.device.connected = False

    def keepalive_lost(self) -> None:
        self.device.silent = True
        self.device.emit(linked.KeepAliveLost(3))

    def unlink(self) -> None:
        """Removed from the phone's Linked devices."""
        device = self.device
        device.connected = False
        device.emit(linked.LoggedOut("logged out"))


@dataclass
class FakeDevice:
    platform: FakeWhatsAppWeb
    session_dir: Path
    handler: linked.EventHandler
    loop: asyncio.AbstractEventLoop | None = None
    connected: bool = False
    silent: bool = False
    closed: bool = False
    pending: list[Any] = field(default_factory=list)

    def emit(self, event: linked.LinkedEvent) -> Any:
        assert self.loop is not None, "the device is not connected"
        future = asyncio.run_coroutine_threadsafe(self.handler(event), self.loop)
        self.pending.append(future)
        return future

    def deliver_queued(self) -> None:
        with self.platform.lock:
            queued = list(self.platform.queued)
        for msg in queued:
            future = self.emit(msg)
            future.add_done_callback(lambda f, m=msg: self._acknowledged(f, m))

    def _acknowledged(self, future: Any, msg: linked.LinkedMessage) -> None:
        if future.exception() is None and not self.silent:
            with self.platform.lock:
                if msg in self.platform.queued:
                    self.platform.queued.remove(msg)

    # -- the engine's face ----------------------------------------------------------------------------
    async def connect(self) -> None:
        self.loop = asyncio.get_running_loop()
        if (self.session_dir / "session.fake").exists():
            self.connected = True
            self.loop.call_soon(self._resume)
        else:
            self.loop.call_soon(self.platform.show_code)

    def _resume(self) -> None:
        self.emit(linked.Connected(OWN_JID, OWN_LID))
        self.deliver_queued()

    def alive(self) -> bool:
        return self.connected and not self.closed

    async def close(self) -> None:
        self.closed = True
        self.connected = False

    async def logout(self) -> None:
        self.platform.logouts += 1
        self.connected = False

    def _check(self) -> None:
        if not self.connected or self.closed or self.silent:
            raise ConnectionError("not connected")
        if self.platform.refuse_sends:
            raise RuntimeError("server returned error 479")

    async def send_text(self, chat: str, text: str) -> str:
        self._check()
        self.platform.sent.append(Sent(chat, text))
        return f"3EB0{len(self.platform.sent):08d}"

    async def send_file(self, chat: str, data: bytes, *, mime: str, kind: str, name: str, caption: str) -> str:
        self._check()
        self.platform.sent.append(Sent(chat, caption, kind, name, len(data)))
        return f"3EB0{len(self.platform.sent):08d}"

    async def typing(self, chat: str) -> None:
        self._check()
        self.platform.typing.append(chat)

    async def mark_read(self, chat: str, sender: str, message_id: str) -> None:
        self._check()
        self.platform.reads.append((chat, sender, message_id))

    async def download(self, ref: str, max_bytes: int) -> bytes:
        self._check()
        body = self.platform.files.get(ref)
        if body is None:
            raise SendFailed("media not found", permanent=True)
        return body


def dm(sender: str, text: str, msg_id: str, **kw: Any) -> linked.LinkedMessage:
    """A direct message from ``sender`` (digits) as whatsmeow reports it."""
    jid = f"{sender}@s.whatsapp.net"
    return linked.LinkedMessage(msg_id, jid, jid, kw.pop("name", "Someone"), text=text, timestamp_ms=1, **kw)


def group_message(group: str, sender: str, text: str, msg_id: str, **kw: Any) -> linked.LinkedMessage:
    return linked.LinkedMessage(
        msg_id, f"{group}@g.us", f"{sender}@s.whatsapp.net", "Member", group=True, text=text, timestamp_ms=1, **kw
    )
