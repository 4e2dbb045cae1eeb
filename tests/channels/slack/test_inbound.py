"""Slack's events and slash commands as the layer's messages, mrkdwn both ways, and the signature
check: DMs, group DMs, channels, threads, mentions removed, bots and edits skipped, files; every
mark of Markdown in mrkdwn with only ``& < >`` escaped; Slack's own signing example verified."""

from __future__ import annotations

from typing import Any

from homarus.channels.slack.inbound import normalize_command, normalize_event
from homarus.channels.slack.mrkdwn import from_mrkdwn, to_mrkdwn
from homarus.channels.slack.signing import sign, verify

BOT = "U0BOT00001"


def body(**event: Any) -> dict[str, Any]:
    base = {"type": "message", "channel": "C1", "user": "U1", "text": "hi", "ts": "1700000000.000100"}
    return {"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": {**base, **event}}


def test_chat_kinds_threads_and_the_team_as_parent() -> None:
    dm, _ = normalize_event(body(channel="D1", channel_type="im"), account_id="default", bot_user_id=BOT)
    assert dm is not None and dm.chat_kind == "direct" and dm.chat_id == "D1" and dm.thread_id is None
    group, _ = normalize_event(body(channel="G1", channel_type="mpim"), account_id="default", bot_user_id=BOT)
    assert group is not None and group.chat_kind == "group"
    room, _ = normalize_event(body(channel_type="channel"), account_id="default", bot_user_id=BOT)
    assert room is not None and room.chat_kind == "channel" and room.parent_id == "T1"
    assert room.message_id == "1700000000.000100" and room.timestamp == 1700000000000
    assert not room.was_mentioned
    reply, _ = normalize_event(
        body(thread_ts="1699999999.000001", parent_user_id=BOT), account_id="default", bot_user_id=BOT
    )
    assert reply is not None and reply.thread_id == "1699999999.000001" and reply.reply_to_bot
    root, _ = normalize_event(body(thread_ts="1700000000.000100"), account_id="default", bot_user_id=BOT)
    assert root is not None and root.thread_id is None  # a thread's root is the channel's message


def test_mentions_are_removed_and_slack_markup_read_back() -> None:
    msg, _ = normalize_event(
        body(text=f"<@{BOT}> ask <@U2|bob> in <#C9|general> about <https://x.org|this> &amp; a &lt;b&gt;"),
        account_id="default",
        bot_user_id=BOT,
    )
    assert msg is not None and msg.was_mentioned
    assert msg.text == "ask @bob in #general about this (https://x.org) & a <b>"
    mention, _ = normalize_event(body(type="app_mention", text="hey"), account_id="default", bot_user_id=BOT)
    assert mention is not None and mention.was_mentioned


def test_bots_edits_joins_and_other_events_are_skipped_with_the_reason() -> None:
    cases = {
        "the bot's own message": body(user=BOT),
        "from a bot": body(bot_id="B2"),
        "a 'message_changed' message": body(subtype="message_changed"),
        "a 'channel_join' message": body(subtype="channel_join"),
        "a 'reaction_added' event": body(type="reaction_added"),
        "no text and no file": body(text=f"<@{BOT}>"),
        "no channel, ts or user": body(user=""),
    }
    for why, event in cases.items():
        assert normalize_event(event, account_id="default", bot_user_id=BOT) == (None, why)
    allowed, _ = normalize_event(body(bot_id="B2"), account_id="default", bot_user_id=BOT, allow_bots=True)
    assert allowed is not None
    # an integration's post has no user: skipped, unless bots are allowed, then from the bot's id
    integration = body(subtype="bot_message", user=None, bot_id="B7", username="deploybot", text="deployed")
    assert normalize_event(integration, account_id="default", bot_user_id=BOT) == (None, "a 'bot_message' message")
    posted, _ = normalize_event(integration, account_id="default", bot_user_id=BOT, allow_bots=True)
    assert posted is not None and (posted.sender_id, posted.text) == ("B7", "deployed")
    assert normalize_event({"type": "url_verification"}, account_id="default", bot_user_id=BOT)[0] is None


def test_files_become_attachments_and_a_clip_is_a_voice_note() -> None:
    files = [
        {"id": "F1", "name": "cat.png", "mimetype": "image/png", "size": 10, "url_private_download": "https://f/1"},
        {"id": "F2", "name": "clip.webm", "mimetype": "audio/webm", "subtype": "slack_audio", "url_private": "u2"},
        {"id": "F3", "name": "a.pdf", "mimetype": "application/pdf"},
    ]
    msg, _ = normalize_event(body(text="", files=files, subtype="file_share"), account_id="default", bot_user_id=BOT)
    assert msg is not None
    assert [(a.kind, a.ref, a.file_name) for a in msg.attachments] == [
        ("image", "https://f/1", "cat.png"),
        ("voice", "u2", "clip.webm"),
        ("document", "", "a.pdf"),
    ]


def test_slash_commands() -> None:
    payload = {"command": "/New", "text": "fresh start", "user_id": "U1", "channel_id": "D1", "trigger_id": "t1"}
    msg, _ = normalize_command(payload, account_id="default")
    assert msg is not None and msg.text == "/new fresh start" and msg.command == "/new" and msg.was_mentioned
    assert msg.chat_kind == "direct" and msg.message_id == "command-t1"
    assert normalize_command({"command": "/new"}, account_id="default")[0] is None


def test_markdown_to_mrkdwn() -> None:
    assert to_mrkdwn("**bold** _it_ ~~gone~~ `a<b && c>d` 5 < 6") == (
        "*bold* _it_ ~gone~ `a&lt;b &amp;&amp; c&gt;d` 5 &lt; 6"
    )
    assert to_mrkdwn("[site](https://x.org/?a=1&b=2|3) [files](ftp://host/x)") == (
        "<https://x.org/?a=1&amp;b=2%7C3|site> files"  # a scheme with no use here: its text only
    )
    assert "<javascript" not in to_mrkdwn("[bad](javascript:alert(1))")
    md = "# Title\n\n- one\n- two\n\n> quoted\n> more\n\n```py\nx = 1 < 2\n```"
    assert to_mrkdwn(md) == "*Title*\n\n• one\n• two\n\n> quoted\n> more\n\n```\nx = 1 &lt; 2\n```"
    assert to_mrkdwn("<!channel> <@U1> hi") == "&lt;!channel&gt; &lt;@U1&gt; hi"  # never a ping
    assert from_mrkdwn(to_mrkdwn("a & b < c")) == "a & b < c"


def test_the_signature_as_slack_documents_it() -> None:
    # the example of Slack's "Verifying requests from Slack" page
    secret = "8f742231b10e8888abcd99yyyzzz85a5"
    raw = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
        b"&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
        b"&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
        b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    assert sign(secret, "1531420618", raw) == expected
    headers = {"x-slack-request-timestamp": "1531420618", "x-slack-signature": expected}
    assert verify(secret, headers, raw, now=1531420618 + 299) is None
    assert verify(secret, headers, raw, now=1531420618 + 301) == "a stale timestamp (over five minutes)"
    assert verify(secret, headers, raw + b"x", now=1531420618) == "a wrong signature"
    assert verify(secret, {}, raw) == "unsigned"
    assert verify(secret, {**headers, "x-slack-request-timestamp": "soon"}, raw) == "a malformed timestamp"


def test_a_team_binding_routes_the_workspace_s_channels() -> None:
    from homarus.channels.routing import resolve_route
    from homarus.config.channels import Bindings

    room, _ = normalize_event(body(channel_type="channel"), account_id="default", bot_user_id=BOT)
    assert room is not None
    bindings = Bindings.model_validate([{"agentId": "work", "match": {"channel": "slack", "teamId": "T1"}}])
    route = resolve_route(
        room,
        bindings=bindings,
        default_agent="main",
        main_key="main",
        dm_scope="main",
        identity_links={},
        primary_account="default",
        thread_word="thread",
    )
    assert (route.agent_id, route.matched_by, route.session_key) == ("work", "team", "agent:work:slack:channel:c1")


def test_a_dm_reply_thread_answers_in_the_thread_on_the_dms_session() -> None:
    """As in the original: a DM's reply thread is where the answer shows, not another session; a
    channel's thread is a session of its own."""
    from homarus.channels.model import InboundMessage
    from homarus.channels.routing import session_key_for

    def key(msg: InboundMessage | None) -> str:
        assert msg is not None
        return session_key_for(msg, "main", main_key="main", dm_scope="per-channel-peer", identity_links={})

    top, _ = normalize_event(body(channel="D1", channel_type="im"), account_id="default", bot_user_id=BOT)
    threaded, _ = normalize_event(
        body(channel="D1", channel_type="im", thread_ts="1699999999.000001"), account_id="default", bot_user_id=BOT
    )
    assert threaded is not None and threaded.thread_reply_only
    assert threaded.target.thread_id == "1699999999.000001"  # the answer goes into the thread
    assert key(threaded) == key(top) == "agent:main:slack:direct:u1"
    assert InboundMessage.from_json(threaded.to_json()) == threaded  # kept by the inbox as it came
    in_room, _ = normalize_event(body(thread_ts="1699999999.000001"), account_id="default", bot_user_id=BOT)
    assert in_room is not None and not in_room.thread_reply_only
    assert key(in_room) == "agent:main:slack:channel:c1:thread:1699999999.000001"
