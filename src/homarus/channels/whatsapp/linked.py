"""A personal WhatsApp account as a linked device: what the account needs of a WhatsApp Web
engine, and what it gets from one.

WhatsApp has no public API for a personal number; the original links the gateway as one of the
account's devices (a QR code scanned in the phone's "Linked devices") and speaks WhatsApp Web's
protocol. That protocol is a library's job (whatsmeow, through ``neonize``): this module is the
boundary, so the account's logic (linking, the connection's supervision, access, delivery) does
not depend on one library, and tests can drive it without WhatsApp's servers.

An engine is registered by name (``register_engine``; ``neonize`` is built in and imported only
when an account uses it) and opened per account with its session directory and an event
handler. Events are plain dataclasses; a message is :class:`LinkedMessage`, whose media carries an
opaque ``ref`` the same engine downloads later (after a restart too).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from homarus.channels.adapter import SendFailed
from homarus.channels.model import Attachment, InboundMessage

if TYPE_CHECKING:
    import logging

__all__ = [
    "Connected",
    "Disconnected",
    "EngineFactory",
    "KeepAliveLost",
    "KeepAliveRestored",
    "LinkedDevice",
    "LinkedEvent",
    "LinkedMessage",
    "LoggedOut",
    "Paired",
    "QrCode",
    "Refused",
    "chat_jid",
    "engine",
    "peer_id",
    "register_engine",
    "to_inbound",
]

INSTALL_HINT: Final = "pip install 'homarus[whatsapp-personal]'"


# -- events ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class QrCode:
    """A code to show as a QR code; the phone scans it in Settings → Linked devices."""

    code: str


@dataclass(frozen=True, slots=True)
class Paired:
    """The phone scanned the code (``error`` set: it did, but pairing failed)."""

    jid: str
    name: str = ""
    error: str = ""


@dataclass(frozen=True, slots=True)
class Connected:
    """Connected and logged in; who this device is, when the engine knows (phone and privacy id)."""

    jid: str = ""
    lid: str = ""


@dataclass(frozen=True, slots=True)
class Disconnected:
    reason: str = ""


@dataclass(frozen=True, slots=True)
class KeepAliveLost:
    """WhatsApp stopped answering the engine's keepalive pings."""

    errors: int = 1


@dataclass(frozen=True, slots=True)
class KeepAliveRestored:
    pass


@dataclass(frozen=True, slots=True)
class LoggedOut:
    """The device was unlinked (from the phone, or WhatsApp ended it): link again."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class Refused:
    """WhatsApp will not serve this device for now: a temporary ban, an outdated client, another
    session of the same device taking over. ``permanent``: retrying will not help."""

    reason: str
    permanent: bool = False


@dataclass(frozen=True, slots=True)
class LinkedMessage:
    id: str
    #: JIDs as ``user@server`` (``15551230001@s.whatsapp.net``, ``1203...@g.us``, ``123@lid``)
    chat: str
    sender: str
    sender_name: str = ""
    #: the sender's phone-number JID when ``sender`` is a privacy id (``@lid``)
    sender_phone: str = ""
    from_me: bool = False
    group: bool = False
    timestamp_ms: int = 0
    text: str = ""
    quoted_id: str | None = None
    quoted_sender: str | None = None
    quoted_text: str | None = None
    mentions: tuple[str, ...] = ()
    forwarded: bool = False
    edited: bool = False
    #: its file, as the layer names one; ``ref`` is what the engine needs to download it again
    #: (opaque, bounded, no secret of the account)
    media: Attachment | None = None


LinkedEvent = (
    QrCode | Paired | Connected | Disconnected | KeepAliveLost | KeepAliveRestored | LoggedOut | Refused | LinkedMessage
)
EventHandler = Callable[[LinkedEvent], Coroutine[Any, Any, None]]


class LinkedDevice(Protocol):
    """One account's connection through an engine. ``connect`` returns once connecting has begun;
    what follows arrives as events. The handler of a :class:`LinkedMessage` returns after the
    message is committed, and an engine acknowledges the message to WhatsApp only after that when
    its library lets it."""

    async def connect(self) -> None: ...

    def alive(self) -> bool:
        """Connected and logged in, as far as the engine knows now (no network round trip)."""
        ...

    async def close(self) -> None: ...

    async def logout(self) -> None:
        """Unlink this device from the account (the phone's list loses it)."""
        ...

    async def send_text(self, chat: str, text: str) -> str:
        """Send; the message's id."""
        ...

    async def send_file(self, chat: str, data: bytes, *, mime: str, kind: str, name: str, caption: str) -> str: ...

    async def typing(self, chat: str) -> None: ...

    async def mark_read(self, chat: str, sender: str, message_id: str) -> None: ...

    async def download(self, ref: str, max_bytes: int) -> bytes: ...


#: (session directory, event handler, logger) → a device, not yet connected
EngineFactory = Callable[[Path, EventHandler, "logging.Logger"], LinkedDevice]

_ENGINES: dict[str, EngineFactory | str] = {"neonize": "homarus.channels.whatsapp.neonize_engine:open_device"}


def register_engine(name: str, factory: EngineFactory) -> None:
    """Make ``channels.whatsapp.engine: <name>`` open devices with ``factory`` (a plugin's engine)."""
    _ENGINES[name] = factory


def engine(name: str) -> EngineFactory:
    """The factory of engine ``name``; SendFailed (permanent) naming what to install or fix."""
    found = _ENGINES.get(name)
    if found is None:
        raise SendFailed(f"no WhatsApp engine {name!r} (known: {', '.join(sorted(_ENGINES))})", permanent=True)
    if isinstance(found, str):
        module, _, attr = found.partition(":")
        try:
            factory: EngineFactory = getattr(importlib.import_module(module), attr)
        except ImportError as exc:
            raise SendFailed(
                f"the WhatsApp engine {name!r} is not installed ({exc.name or exc}): {INSTALL_HINT}", permanent=True
            ) from None
        _ENGINES[name] = factory
        return factory
    return found


# -- ids ---------------------------------------------------------------------------------------------
def peer_id(jid: str) -> str:
    """How the channel layer names a WhatsApp peer: a phone number in E.164 (as the original and
    the Cloud API do), a group or privacy id as its JID."""
    if "@" not in jid:
        return jid
    bare = _bare(jid)
    user, _, server = bare.partition("@")
    return "+" + user if server == "s.whatsapp.net" and user.isdigit() else bare


def chat_jid(chat_id: str) -> str:
    """The JID a reply goes to, from the layer's chat id."""
    if "@" in chat_id:
        return chat_id
    return chat_id.removeprefix("+") + "@s.whatsapp.net"


def _bare(jid: str) -> str:
    """The JID without a device suffix (``123:4@s.whatsapp.net`` is the same person as ``123@…``)."""
    user, _, server = jid.partition("@")
    return f"{user.split(':', 1)[0]}@{server}"


def to_inbound(msg: LinkedMessage, *, account_id: str, own: tuple[str, ...]) -> InboundMessage | str:
    """The layer's message, or why it is skipped. ``own``: this device's JIDs (phone and privacy
    id), to tell a mention or a reply of the bot."""
    if msg.from_me:
        return "sent from this account"
    if msg.chat.endswith(("@broadcast", "@newsletter")):
        return "a status or channel update"
    if not msg.text and msg.media is None:
        return "no text or media"
    sender = peer_id(msg.sender_phone or msg.sender)
    own_bare = {_bare(j) for j in own if j}
    mentioned = any(_bare(j) in own_bare for j in msg.mentions)
    reply_to_bot = msg.quoted_sender is not None and _bare(msg.quoted_sender) in own_bare
    return InboundMessage(
        channel="whatsapp",
        account_id=account_id,
        chat_kind="group" if msg.group else "direct",
        chat_id=msg.chat if msg.group else sender,
        message_id=msg.id,
        sender_id=sender,
        sender_name=msg.sender_name,
        text=msg.text,
        timestamp=msg.timestamp_ms,
        reply_to_id=msg.quoted_id,
        reply_to_text=msg.quoted_text,
        reply_to_bot=reply_to_bot,
        was_mentioned=mentioned or reply_to_bot,
        forwarded_from="someone" if msg.forwarded else None,
        attachments=(msg.media,) if msg.media is not None else (),
        edited=msg.edited,
        metadata={"jid": _bare(msg.sender)},
    )
