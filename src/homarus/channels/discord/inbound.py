"""A Gateway ``MESSAGE_CREATE`` as the channel layer's :class:`InboundMessage`.

DMs are ``direct`` (the DM channel is the chat, the author the sender). A guild text channel is a
``channel`` chat (session ``agent:<a>:discord:channel:<id>``, as the original names it) whose
parent is the guild; a thread or a forum post is a thread of its parent channel (the reply goes
into the thread, the session is the thread's own). The bot is addressed when it is mentioned
(``<@id>``, the mention itself removed from the text) or replied to. The bot's own messages, other
bots' (unless ``allowBots``), system messages and empty ones are skipped, with the reason. A slash
command (an ``INTERACTION_CREATE``) is the message ``/<name>``, addressed to the bot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from homarus.channels.model import Attachment, AttachmentKind, ChatKind, InboundMessage, attachment_kind

__all__ = ["SLASH_COMMANDS", "THREAD_TYPES", "ChannelInfo", "normalize_interaction", "normalize_message"]

#: announcement thread, public thread, private thread (forum and media posts are public threads)
THREAD_TYPES: Final = frozenset({10, 11, 12})
DM_TYPES: Final = frozenset({1})
#: default and reply messages; every other type is a system message (joins, pins, boosts)
_USER_MESSAGE_TYPES: Final = frozenset({0, 19})
_MENTION = re.compile(r"<@!?(\d+)>")


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    """What the adapter knows of a channel (from the Gateway's guild data, or ``GET /channels``)."""

    id: str
    type: int
    parent_id: str | None = None
    name: str | None = None
    guild_id: str | None = None


def normalize_message(
    data: dict[str, Any],
    *,
    account_id: str,
    bot_id: str,
    channel: ChannelInfo | None,
    allow_bots: bool = False,
) -> tuple[InboundMessage | None, str]:
    """(the message, "") or (None, why it was skipped)."""
    author = data.get("author") if isinstance(data.get("author"), dict) else None
    channel_id, message_id = str(data.get("channel_id") or ""), str(data.get("id") or "")
    if author is None or not channel_id or not message_id:
        return None, "no author, channel or id"
    sender = str(author.get("id") or "")
    if sender == bot_id:
        return None, "the bot's own message"
    if author.get("bot") and not allow_bots:
        return None, "from a bot"
    if data.get("type", 0) not in _USER_MESSAGE_TYPES:
        return None, f"a system message (type {data.get('type')})"
    guild_id = str(data["guild_id"]) if data.get("guild_id") else None
    content = str(data.get("content") or "")
    mentioned = any(str(m.get("id")) == bot_id for m in data.get("mentions") or () if isinstance(m, dict))
    mentioned = mentioned or bot_id in _MENTION.findall(content)
    text = _MENTION.sub(lambda m: "" if m.group(1) == bot_id else m.group(0), content).strip()
    attachments = tuple(_attachment(a) for a in data.get("attachments") or () if isinstance(a, dict))
    if not text and not attachments:
        return None, "no text and no attachment (is the Message Content intent enabled?)"
    referenced = data.get("referenced_message") if isinstance(data.get("referenced_message"), dict) else None
    ref_author: dict[str, Any] = _object(referenced.get("author")) if referenced else {}
    kind: ChatKind
    thread_id: str | None = None
    chat_id = channel_id
    if guild_id is None:
        kind = "direct"
    else:
        kind = "channel"
        if channel is not None and channel.type in THREAD_TYPES and channel.parent_id:
            chat_id, thread_id = channel.parent_id, channel_id
    member = _object(data.get("member"))
    name = str(member.get("nick") or author.get("global_name") or author.get("username") or "")
    command = text.split(maxsplit=1)[0].lower() if text.startswith("/") and len(text) > 1 else None
    msg = InboundMessage(
        channel="discord",
        account_id=account_id,
        chat_kind=kind,
        chat_id=chat_id,
        message_id=message_id,
        sender_id=sender,
        sender_name=name,
        text=text,
        timestamp=_epoch_ms(data.get("timestamp")),
        thread_id=thread_id,
        parent_id=guild_id,
        roles=tuple(str(r) for r in member.get("roles") or ()),
        chat_title=channel.name if channel is not None else None,
        reply_to_id=str(referenced["id"]) if referenced and referenced.get("id") else None,
        reply_to_text=str(referenced.get("content") or "")[:2000] if referenced else None,
        reply_to_bot=str(ref_author.get("id") or "") == bot_id,
        was_mentioned=mentioned,
        command=command,
        attachments=attachments,
        metadata={"guildId": guild_id} if guild_id else {},
    )
    return msg, ""


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _attachment(raw: dict[str, Any]) -> Attachment:
    mime = str(raw.get("content_type") or "") or None
    kind: AttachmentKind = attachment_kind(mime)
    if raw.get("duration_secs") is not None and raw.get("waveform"):
        kind = "voice"  # Discord's voice messages carry a waveform
    size = raw.get("size")
    return Attachment(
        kind=kind,
        ref=str(raw.get("url") or ""),
        mime_type=mime,
        file_name=str(raw.get("filename") or "") or None,
        size=size if isinstance(size, int) else None,
    )


def _epoch_ms(value: Any) -> int:
    try:
        return int(datetime.fromisoformat(str(value)).timestamp() * 1000)
    except ValueError:
        return 0


#: the owner commands offered as slash commands (their text form works too)
SLASH_COMMANDS: Final = (
    {"name": "new", "description": "Start a new conversation", "type": 1},
    {"name": "status", "description": "Session status", "type": 1},
    {"name": "help", "description": "What I can do", "type": 1},
)


def normalize_interaction(
    data: dict[str, Any], *, account_id: str, channel: ChannelInfo | None
) -> tuple[InboundMessage | None, str]:
    """A slash command (``INTERACTION_CREATE`` of type 2) as the message ``/<name> <options>``,
    addressed to the bot; (None, why) for any other interaction."""
    if data.get("type") != 2:
        return None, f"an interaction of type {data.get('type')}"
    command = _object(data.get("data"))
    name = str(command.get("name") or "").lower()
    member = _object(data.get("member"))
    user = _object(member.get("user")) or _object(data.get("user"))
    interaction_id, channel_id = str(data.get("id") or ""), str(data.get("channel_id") or "")
    if not name or not user.get("id") or not interaction_id or not channel_id:
        return None, "no command, user, id or channel"
    options = " ".join(str(o.get("value")) for o in command.get("options") or () if isinstance(o, dict))
    guild_id = str(data["guild_id"]) if data.get("guild_id") else None
    chat_id, thread_id = channel_id, None
    if guild_id and channel is not None and channel.type in THREAD_TYPES and channel.parent_id:
        chat_id, thread_id = channel.parent_id, channel_id
    msg = InboundMessage(
        channel="discord",
        account_id=account_id,
        chat_kind="channel" if guild_id else "direct",
        chat_id=chat_id,
        message_id=f"interaction-{interaction_id}",
        sender_id=str(user["id"]),
        sender_name=str(member.get("nick") or user.get("global_name") or user.get("username") or ""),
        text=f"/{name} {options}".strip(),
        thread_id=thread_id,
        parent_id=guild_id,
        roles=tuple(str(r) for r in member.get("roles") or ()),
        was_mentioned=True,  # a slash command is addressed to the bot by itself
        command=f"/{name}",
        metadata={"interaction": True, **({"guildId": guild_id} if guild_id else {})},
    )
    return msg, ""
