"""Telegram updates, as the Bot API sends them, normalized into the channel layer's message:
chat kinds, mentions (UTF-16 offsets), commands, replies, forum topics, forwards, media, and the
updates skipped on purpose."""

from __future__ import annotations

from typing import Any

from homarus.channels.telegram.api import parse_update
from homarus.channels.telegram.inbound import normalize_update
from homarus.channels.telegram.models import User

BOT = User(id=999, is_bot=True, first_name="Bot", username="homarus_bot")
ADA = {"id": 42, "is_bot": False, "first_name": "Ada", "last_name": "L", "username": "ada"}


def update(chat: dict[str, Any], **message: Any) -> dict[str, Any]:
    return {"update_id": 7, "message": {"message_id": 100, "date": 1_700_000_000, "chat": chat, "from": ADA, **message}}


def norm(raw: dict[str, Any]) -> Any:
    return normalize_update(parse_update(raw), account_id="default", bot=BOT)


PRIVATE = {"id": 42, "type": "private", "first_name": "Ada"}
GROUP = {"id": -100123, "type": "supergroup", "title": "Team"}
FORUM = {"id": -100456, "type": "supergroup", "title": "Forum", "is_forum": True}


def test_a_private_message_is_direct_and_always_addressed() -> None:
    msg, why = norm(update(PRIVATE, text="hello"))
    assert why == "" and msg is not None
    assert (msg.chat_kind, msg.chat_id, msg.sender_id, msg.sender_name) == ("direct", "42", "42", "Ada L")
    assert (msg.message_id, msg.timestamp, msg.was_mentioned) == ("100", 1_700_000_000_000, True)
    assert msg.metadata == {"updateId": 7, "username": "ada"}


def test_a_group_mention_is_found_at_its_utf16_offset() -> None:
    text = "👋🏽 @homarus_bot what now?"  # the emoji pair counts 4 UTF-16 units
    mention = {"type": "mention", "offset": 5, "length": 12}
    msg, _ = norm(update(GROUP, text=text, entities=[mention]))
    assert msg is not None and msg.chat_kind == "group" and msg.was_mentioned
    other, _ = norm(update(GROUP, text="@someone_else hi", entities=[{"type": "mention", "offset": 0, "length": 13}]))
    assert other is not None and not other.was_mentioned


def test_commands_lose_their_bot_suffix_and_other_bots_commands_are_skipped() -> None:
    mine, _ = norm(
        update(GROUP, text="/status@homarus_bot", entities=[{"type": "bot_command", "offset": 0, "length": 19}])
    )
    assert mine is not None and mine.command == "/status" and mine.was_mentioned
    theirs, why = norm(
        update(GROUP, text="/status@other_bot", entities=[{"type": "bot_command", "offset": 0, "length": 17}])
    )
    assert theirs is None and "another bot" in why


def test_a_reply_to_the_bot_addresses_it() -> None:
    reply = {
        "message_id": 50,
        "date": 1,
        "chat": GROUP,
        "from": {"id": 999, "is_bot": True, "first_name": "Bot"},
        "text": "earlier",
    }
    msg, _ = norm(update(GROUP, text="and?", reply_to_message=reply))
    assert msg is not None and msg.reply_to_bot and msg.reply_to_id == "50" and msg.reply_to_text == "earlier"


def test_forum_topics_become_threads_and_the_topic_opening_is_not_a_reply() -> None:
    opening = {"message_id": 5, "date": 1, "chat": FORUM, "forum_topic_created": {"name": "Ops", "icon_color": 1}}
    msg, _ = norm(update(FORUM, text="hi", message_thread_id=5, is_topic_message=True, reply_to_message=opening))
    assert msg is not None and msg.thread_id == "5" and msg.reply_to_id is None
    general, _ = norm(update(FORUM, text="hi"))
    assert general is not None and general.thread_id == "1"
    plain, _ = norm(update(GROUP, text="hi", message_thread_id=9))
    assert plain is not None and plain.thread_id is None  # not a forum: reply chains are not topics


def test_forwards_are_marked_and_media_become_attachments() -> None:
    forwarded, _ = norm(
        update(
            PRIVATE, text="buy now", forward_origin={"type": "hidden_user", "date": 1, "sender_user_name": "Spam Co"}
        )
    )
    assert forwarded is not None and forwarded.forwarded_from == "Spam Co"
    photo = [
        {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90, "file_size": 1000},
        {"file_id": "big", "file_unique_id": "b", "width": 1280, "height": 1280, "file_size": 90000},
    ]
    pic, _ = norm(update(PRIVATE, photo=photo, caption="look"))
    assert pic is not None and pic.text == "look"
    assert [(a.kind, a.ref) for a in pic.attachments] == [("image", "big")]
    voice, _ = norm(
        update(PRIVATE, voice={"file_id": "v1", "file_unique_id": "v", "duration": 3, "mime_type": "audio/ogg"})
    )
    assert voice is not None and voice.attachments[0].kind == "voice"


def test_skipped_updates_say_why() -> None:
    assert (
        norm({"update_id": 1, "edited_message": update(PRIVATE, text="x")["message"]})[1] == "no message in this update"
    )
    assert "bot" in norm(update(PRIVATE, text="x", **{"from": {"id": 5, "is_bot": True, "first_name": "B"}}))[1]
    assert "nothing to answer" in norm(update(GROUP, new_chat_members=[ADA]))[1]
