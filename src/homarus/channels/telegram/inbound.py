"""A Telegram update as the channel layer's :class:`InboundMessage`.

Chat kinds: ``private`` → direct, ``group``/``supergroup`` → group, ``channel`` → channel. In a
forum supergroup every message belongs to a topic (``message_thread_id``; the General topic is
``1``); elsewhere there is no thread. The bot is addressed by an ``@username`` mention, a text
mention of its user, a ``/command@username``, or a reply to one of its messages (not the
service message that opened a topic). Entity offsets are UTF-16 code units, as the Bot API counts.
Messages from other bots are dropped (two bots must not talk to each other forever); service
messages (members joining, pins) carry nothing to answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homarus.channels.model import Attachment, ChatKind, InboundMessage

if TYPE_CHECKING:
    from homarus.channels.telegram.models import Message, MessageEntity, Update, User

__all__ = ["GENERAL_TOPIC", "normalize_update"]

GENERAL_TOPIC = "1"
_KINDS: dict[str, ChatKind] = {"private": "direct", "group": "group", "supergroup": "group", "channel": "channel"}


def _utf16_slice(text: str, offset: int, length: int) -> str:
    raw = text.encode("utf-16-le")
    return raw[offset * 2 : (offset + length) * 2].decode("utf-16-le", errors="replace")


def _name(user: User) -> str:
    full = " ".join(p for p in (user.first_name, user.last_name) if p)
    return full or (f"@{user.username}" if user.username else str(user.id))


def _addressed(text: str, entities: list[MessageEntity], bot: User) -> tuple[bool, str | None, bool]:
    """(mentioned, command without ``@bot``, command meant for another bot)."""
    handle = f"@{bot.username}".lower() if bot.username else None
    mentioned = False
    command: str | None = None
    other_bot = False
    for entity in entities:
        piece = _utf16_slice(text, entity.offset, entity.length)
        by_handle = entity.type == "mention" and handle is not None and piece.lower() == handle
        by_user = entity.type == "text_mention" and entity.user is not None and entity.user.id == bot.id
        if by_handle or by_user:
            mentioned = True
        elif entity.type == "bot_command" and entity.offset == 0:
            name, _, target = piece.partition("@")
            if target and handle and f"@{target}".lower() != handle:
                other_bot = True
            else:
                command = name.lower()
                mentioned = mentioned or bool(target)
    return mentioned, command, other_bot


def _attachments(msg: Message) -> tuple[Attachment, ...]:
    out: list[Attachment] = []
    if msg.photo:
        best = max(msg.photo, key=lambda p: (p.file_size or 0, p.width * p.height))
        out.append(Attachment("image", best.file_id, "image/jpeg", None, best.file_size))
    if msg.document is not None:
        d = msg.document
        is_image = (d.mime_type or "").startswith("image/")
        out.append(Attachment("image" if is_image else "document", d.file_id, d.mime_type, d.file_name, d.file_size))
    if msg.voice is not None:
        out.append(
            Attachment("voice", msg.voice.file_id, msg.voice.mime_type or "audio/ogg", None, msg.voice.file_size)
        )
    if msg.audio is not None:
        a = msg.audio
        out.append(Attachment("audio", a.file_id, a.mime_type, a.file_name, a.file_size))
    if msg.video is not None:
        v = msg.video
        out.append(Attachment("video", v.file_id, v.mime_type, v.file_name, v.file_size))
    return tuple(out)


def _forwarded(msg: Message) -> str | None:
    origin = msg.forward_origin
    if origin is None:
        return None
    if origin.sender_user is not None:
        return _name(origin.sender_user)
    chat = origin.chat or origin.sender_chat
    if chat is not None:
        return chat.title or chat.username or str(chat.id)
    return origin.sender_user_name or "someone"


def normalize_update(update: Update, *, account_id: str, bot: User) -> tuple[InboundMessage | None, str]:
    """(the message, or None and why it is skipped)."""
    msg = update.message or update.channel_post
    if msg is None:
        return None, "no message in this update"
    kind = _KINDS.get(msg.chat.type)
    if kind is None:
        return None, f"unsupported chat type {msg.chat.type!r}"
    sender = msg.from_
    if sender is not None and sender.is_bot:
        return None, "sent by a bot"
    text = msg.text if msg.text is not None else (msg.caption or "")
    entities = msg.entities if msg.text is not None else msg.caption_entities
    attachments = _attachments(msg)
    if not text.strip() and not attachments:
        return None, "nothing to answer (a service message, a sticker)"
    mentioned, command, other_bot = _addressed(text, entities, bot)
    if other_bot:
        return None, "a command for another bot"
    reply = msg.reply_to_message
    if reply is not None and reply.forum_topic_created is not None:
        reply = None  # in a topic every message "replies" to the topic's opening
    thread: str | None = None
    if msg.chat.is_forum:
        thread = str(msg.message_thread_id) if msg.is_topic_message and msg.message_thread_id else GENERAL_TOPIC
    sender_id = str(sender.id) if sender is not None else str((msg.sender_chat or msg.chat).id)
    sender_name = _name(sender) if sender is not None else (msg.sender_chat or msg.chat).title or sender_id
    metadata: dict[str, object] = {"updateId": update.update_id}
    if sender is not None and sender.username:
        metadata["username"] = sender.username
    return (
        InboundMessage(
            channel="telegram",
            account_id=account_id,
            chat_kind=kind,
            chat_id=str(msg.chat.id),
            message_id=str(msg.message_id),
            sender_id=sender_id,
            sender_name=sender_name,
            text=text,
            timestamp=msg.date * 1000,
            thread_id=thread,
            chat_title=msg.chat.title,
            reply_to_id=str(reply.message_id) if reply is not None else None,
            reply_to_text=(reply.text or reply.caption or "")[:500] if reply is not None else None,
            reply_to_bot=bool(reply is not None and reply.from_ is not None and reply.from_.id == bot.id),
            was_mentioned=kind == "direct" or mentioned,
            forwarded_from=_forwarded(msg),
            command=command,
            attachments=attachments,
            metadata=metadata,
        ),
        "",
    )
