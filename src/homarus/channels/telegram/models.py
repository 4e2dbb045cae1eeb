"""The Bot API objects Homarus reads, as pydantic models (a trust boundary: platform payloads).

Only the fields used are declared; everything else Telegram sends is ignored (``extra="ignore"``),
so a newer Bot API never breaks parsing. Field names are the Bot API's own (snake_case).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Chat",
    "Document",
    "File",
    "Message",
    "MessageEntity",
    "PhotoSize",
    "Update",
    "User",
    "Voice",
]


class _Api(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class User(_Api):
    id: int
    is_bot: bool = False
    first_name: str = ""
    last_name: str | None = None
    username: str | None = None
    language_code: str | None = None


class Chat(_Api):
    id: int
    type: str
    title: str | None = None
    username: str | None = None
    first_name: str | None = None
    is_forum: bool = False


class MessageEntity(_Api):
    type: str
    offset: int
    length: int
    user: User | None = None


class PhotoSize(_Api):
    file_id: str
    file_unique_id: str = ""
    width: int = 0
    height: int = 0
    file_size: int | None = None


class Document(_Api):
    file_id: str
    file_unique_id: str = ""
    file_name: str | None = None
    mime_type: str | None = None
    file_size: int | None = None


class Voice(_Api):
    file_id: str
    file_unique_id: str = ""
    duration: int = 0
    mime_type: str | None = None
    file_size: int | None = None


class MessageOrigin(_Api):
    type: str
    sender_user: User | None = None
    sender_user_name: str | None = None
    chat: Chat | None = None
    sender_chat: Chat | None = None


class Message(_Api):
    message_id: int
    message_thread_id: int | None = None
    from_: User | None = Field(None, alias="from")
    sender_chat: Chat | None = None
    date: int = 0
    chat: Chat
    is_topic_message: bool = False
    text: str | None = None
    caption: str | None = None
    entities: list[MessageEntity] = Field(default_factory=list)
    caption_entities: list[MessageEntity] = Field(default_factory=list)
    reply_to_message: Message | None = None
    forward_origin: MessageOrigin | None = None
    photo: list[PhotoSize] = Field(default_factory=list)
    document: Document | None = None
    voice: Voice | None = None
    audio: Document | None = None
    video: Document | None = None
    sticker: dict[str, Any] | None = None
    forum_topic_created: dict[str, Any] | None = None
    new_chat_members: list[User] = Field(default_factory=list)


class Update(_Api):
    update_id: int
    message: Message | None = None
    edited_message: Message | None = None
    channel_post: Message | None = None
    edited_channel_post: Message | None = None


class File(_Api):
    file_id: str
    file_unique_id: str = ""
    file_size: int | None = None
    file_path: str | None = None
