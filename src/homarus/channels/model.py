"""What flows through the channel layer: one normalized inbound message, one outbound piece, receipts.

Every adapter turns its platform's payloads into :class:`InboundMessage` and sends
:class:`OutboundMessage`; nothing above the adapters sees a platform's own shapes. Both have a
JSON form, because both are stored (the inbox and the outbox survive a crash).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "Attachment",
    "AttachmentKind",
    "ChannelCapabilities",
    "ChatKind",
    "InboundMessage",
    "OutboundMessage",
    "SendReceipt",
    "Target",
    "attachment_kind",
]

ChatKind = Literal["direct", "group", "channel"]
AttachmentKind = Literal["image", "document", "audio", "voice", "video", "sticker"]


def attachment_kind(mime: str | None) -> AttachmentKind:
    """What a file is by its MIME type: an image, audio, a video, else a document."""
    major = (mime or "").split("/", 1)[0]
    if major == "image":
        return "image"
    if major == "audio":
        return "audio"
    if major == "video":
        return "video"
    return "document"


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file on the platform; ``ref`` is what the adapter needs to download it (a file id)."""

    kind: AttachmentKind
    ref: str
    mime_type: str | None = None
    file_name: str | None = None
    size: int | None = None
    #: set once downloaded: the file under the session's media directory
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attachment:
        return cls(
            kind=data["kind"],
            ref=str(data["ref"]),
            mime_type=data.get("mime_type"),
            file_name=data.get("file_name"),
            size=data.get("size"),
            path=data.get("path"),
        )


@dataclass(frozen=True, slots=True)
class Target:
    """Where a message goes: a conversation of one account of one channel (and a thread in it)."""

    channel: str
    account_id: str
    chat_id: str
    thread_id: str | None = None

    @property
    def conversation(self) -> str:
        """One serialized delivery lane per conversation (thread included)."""
        base = f"{self.channel}:{self.account_id}:{self.chat_id}"
        return f"{base}:{self.thread_id}" if self.thread_id else base

    def to_json(self) -> dict[str, Any]:
        out = {"channel": self.channel, "accountId": self.account_id, "chatId": self.chat_id}
        if self.thread_id:
            out["threadId"] = self.thread_id
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Target:
        thread = data.get("threadId")
        return cls(str(data["channel"]), str(data["accountId"]), str(data["chatId"]), str(thread) if thread else None)


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message a person sent, as every channel reports it."""

    channel: str
    account_id: str
    chat_kind: ChatKind
    chat_id: str
    #: the platform's id of this message (dedupe key with the chat)
    message_id: str
    sender_id: str
    sender_name: str = ""
    text: str = ""
    #: epoch ms
    timestamp: int = 0
    thread_id: str | None = None
    #: the thread is only where the answer goes, not a session of its own: the chat's session
    #: (a Slack DM's reply thread, a UI affordance on the DM's session as in the original)
    thread_reply_only: bool = False
    #: the group's parent (a Discord guild, a Slack team) and the sender's roles there
    parent_id: str | None = None
    roles: tuple[str, ...] = ()
    chat_title: str | None = None
    #: the message this one replies to, and whether that message was the bot's
    reply_to_id: str | None = None
    reply_to_text: str | None = None
    reply_to_bot: bool = False
    #: the bot was addressed (mentioned by handle, or replied to)
    was_mentioned: bool = False
    #: the message is forwarded from someone else (its text is not the sender's words)
    forwarded_from: str | None = None
    #: a bot command (``/start``), without its ``@botname`` suffix
    command: str | None = None
    attachments: tuple[Attachment, ...] = ()
    #: an edit of an earlier message
    edited: bool = False
    #: platform facts kept for the plugins and the logs (never secrets)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> Target:
        """Where the reply goes: the same conversation and thread."""
        return Target(self.channel, self.account_id, self.chat_id, self.thread_id)

    @property
    def sender(self) -> str:
        """``<channel>:<senderId>``: how owners and identity links name a person."""
        return f"{self.channel}:{self.sender_id}"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["attachments"] = [a.to_json() for a in self.attachments]
        out["roles"] = list(self.roles)
        return {k: v for k, v in out.items() if v not in (None, "", (), [], {}, False) or k in _ALWAYS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InboundMessage:
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        values["attachments"] = tuple(Attachment.from_json(a) for a in data.get("attachments") or ())
        values["roles"] = tuple(data.get("roles") or ())
        return cls(**values)


_ALWAYS = frozenset({"channel", "account_id", "chat_kind", "chat_id", "message_id", "sender_id"})


@dataclass(frozen=True, slots=True)
class OutboundMessage:
    """One message to send: text (already within the channel's limit) and/or one file."""

    target: Target
    text: str = ""
    #: the text is Markdown (the adapter converts it); False: send it as plain text
    markdown: bool = True
    reply_to_id: str | None = None
    #: a local file to send (an image is sent as a photo when the channel can)
    media_path: str | None = None
    media_kind: Literal["image", "document", "audio", "voice", "video"] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"target": self.target.to_json(), "text": self.text, "markdown": self.markdown}
        for key in ("reply_to_id", "media_path", "media_kind"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OutboundMessage:
        return cls(
            Target.from_json(data["target"]),
            str(data.get("text") or ""),
            bool(data.get("markdown", True)),
            data.get("reply_to_id"),
            data.get("media_path"),
            data.get("media_kind"),
        )


@dataclass(frozen=True, slots=True)
class SendReceipt:
    message_id: str | None = None
    #: the text went out as plain text (the platform refused the formatted version)
    plain_fallback: bool = False


@dataclass(frozen=True, slots=True)
class ChannelCapabilities:
    """What a channel can do, for the layer above (chunking, routing, the ``message`` tool)."""

    #: the longest text one message may hold
    text_limit: int = 4000
    direct: bool = True
    groups: bool = True
    threads: bool = False
    media: bool = True
    typing: bool = True
    edits: bool = False
    #: prefixes of sender ids in ``allowFrom`` that name this channel (``telegram:``, ``tg:``)
    id_prefixes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "textLimit": self.text_limit,
            "direct": self.direct,
            "groups": self.groups,
            "threads": self.threads,
            "media": self.media,
            "typing": self.typing,
            "edits": self.edits,
        }
