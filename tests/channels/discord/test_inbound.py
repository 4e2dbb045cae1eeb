"""A Gateway ``MESSAGE_CREATE`` as the channel layer's message: DMs, guild channels, threads and
forum posts, mentions and replies, roles, attachments, and what is skipped."""

from __future__ import annotations

from typing import Any

from homarus.channels.discord.inbound import ChannelInfo, normalize_message

BOT = "900"


def message(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "1001",
        "channel_id": "50",
        "author": {"id": "7", "username": "ann", "global_name": "Ann"},
        "content": "hello",
        "timestamp": "2026-11-28T12:00:00.000000+00:00",
        "type": 0,
        "mentions": [],
        "attachments": [],
    }
    base.update(over)
    return base


def norm(data: dict[str, Any], channel: ChannelInfo | None = None, **kw: Any) -> Any:
    return normalize_message(data, account_id="default", bot_id=BOT, channel=channel, **kw)


def test_a_dm_is_direct_and_its_channel_the_chat() -> None:
    msg, why = norm(message())
    assert why == "" and msg.chat_kind == "direct" and msg.chat_id == "50" and msg.sender_id == "7"
    assert msg.sender_name == "Ann" and msg.timestamp == 1_795_867_200_000 and msg.parent_id is None


def test_a_guild_message_names_its_guild_roles_and_whether_the_bot_was_addressed() -> None:
    data = message(
        guild_id="400",
        content=f"<@{BOT}> what is up? cc <@8>",
        mentions=[{"id": BOT}],
        member={"roles": ["700", "701"], "nick": "Annie"},
    )
    msg, _ = norm(data, ChannelInfo("50", 0, name="general", guild_id="400"))
    assert (msg.chat_kind, msg.chat_id, msg.parent_id, msg.thread_id) == ("channel", "50", "400", None)
    assert msg.was_mentioned and msg.text == "what is up? cc <@8>" and msg.roles == ("700", "701")
    assert msg.sender_name == "Annie" and msg.chat_title == "general"
    plain, _ = norm(message(guild_id="400"), ChannelInfo("50", 0))
    assert plain.was_mentioned is False


def test_a_reply_to_the_bot_addresses_it() -> None:
    data = message(
        guild_id="400", type=19, referenced_message={"id": "9", "content": "an answer", "author": {"id": BOT}}
    )
    msg, _ = norm(data, ChannelInfo("50", 0))
    assert msg.reply_to_bot and msg.reply_to_id == "9" and msg.reply_to_text == "an answer"


def test_threads_and_forum_posts_are_threads_of_their_parent_channel() -> None:
    msg, _ = norm(message(guild_id="400", channel_id="61"), ChannelInfo("61", 11, parent_id="60"))
    assert (msg.chat_id, msg.thread_id) == ("60", "61")
    assert msg.target.thread_id == "61"  # the reply goes into the thread


def test_attachments_keep_their_url_type_and_voice_messages_are_voice() -> None:
    files = [
        {"id": "1", "filename": "cat.png", "size": 10, "url": "https://cdn/x/cat.png", "content_type": "image/png"},
        {
            "id": "2",
            "filename": "voice-message.ogg",
            "size": 20,
            "url": "https://cdn/x/v.ogg",
            "content_type": "audio/ogg",
            "duration_secs": 3.2,
            "waveform": "AAAA",
        },
    ]
    msg, _ = norm(message(content="", attachments=files))
    assert [(a.kind, a.ref, a.file_name) for a in msg.attachments] == [
        ("image", "https://cdn/x/cat.png", "cat.png"),
        ("voice", "https://cdn/x/v.ogg", "voice-message.ogg"),
    ]


def test_what_is_skipped_says_why() -> None:
    assert norm(message(author={"id": BOT}))[1] == "the bot's own message"
    assert norm(message(author={"id": "8", "bot": True}))[1] == "from a bot"
    assert norm(message(author={"id": "8", "bot": True}), allow_bots=True)[0] is not None
    assert norm(message(type=7))[1].startswith("a system message")
    assert "Message Content intent" in norm(message(content=""))[1]
    assert norm({"id": "1"})[1] == "no author, channel or id"


def test_a_slash_word_is_a_command() -> None:
    msg, _ = norm(message(content="/status please"))
    assert msg.command == "/status"


def test_a_slash_command_is_its_message_addressed_to_the_bot() -> None:
    from homarus.channels.discord.inbound import normalize_interaction

    data = {
        "id": "77",
        "type": 2,
        "token": "t",
        "channel_id": "61",
        "guild_id": "400",
        "member": {"user": {"id": "7", "username": "ann"}, "roles": ["700"]},
        "data": {"name": "Model", "options": [{"name": "id", "value": "fast"}]},
    }
    msg, why = normalize_interaction(data, account_id="default", channel=ChannelInfo("61", 11, parent_id="60"))
    assert why == "" and msg is not None
    assert (msg.text, msg.command, msg.was_mentioned) == ("/model fast", "/model", True)
    assert (msg.chat_id, msg.thread_id, msg.parent_id, msg.roles) == ("60", "61", "400", ("700",))
    assert msg.message_id == "interaction-77"  # a replayed interaction is the same message
    assert normalize_interaction({**data, "type": 3}, account_id="default", channel=None)[0] is None
