"""A Slack event (an Events API ``event_callback``) or slash command as the channel layer's
:class:`InboundMessage`.

A DM (``channel_type: im``) is ``direct``, a group DM (``mpim``) a ``group``, a public or private
channel a ``channel`` (session ``agent:<a>:slack:channel:<id>``, as the original names it); the
workspace (``team_id``) is the chat's parent, which team bindings route on. A reply in a thread
(``thread_ts`` other than its own ``ts``) belongs to that thread: the answer goes into it, and in
a channel or group DM the session is the thread's (in a DM, the DM's: as in the original, a DM's
reply thread is where the answer shows, not another conversation). The bot is addressed when
mentioned (``<@bot>``, removed from the text; an ``app_mention`` event is one by definition).
``message`` and ``app_mention`` events report the same message, with the same ``ts``: the inbox
keeps one. The bot's own messages, other bots' (unless ``allowBots``), edits, deletions and joins
are skipped, with the reason.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

from homarus.channels.model import Attachment, AttachmentKind, ChatKind, InboundMessage, attachment_kind
from homarus.channels.slack.mrkdwn import from_mrkdwn

__all__ = ["normalize_command", "normalize_event"]

#: message subtypes that are a person's words (plain messages have none)
_USER_SUBTYPES: Final = frozenset({"file_share", "thread_broadcast", "me_message"})


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@functools.lru_cache(maxsize=16)
def _mention(bot_user_id: str) -> re.Pattern[str]:
    """``<@U…>`` or ``<@U…|name>`` of the bot (one pattern per bot, not one per event)."""
    return re.compile(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>")


def _kind(channel_type: str, channel: str) -> ChatKind:
    if channel_type == "im" or (not channel_type and channel.startswith("D")):
        return "direct"
    if channel_type == "mpim":
        return "group"
    return "channel"


def normalize_event(
    body: dict[str, Any], *, account_id: str, bot_user_id: str, allow_bots: bool = False
) -> tuple[InboundMessage | None, str]:
    """(the message, "") or (None, why it was skipped) for one ``event_callback`` body."""
    if body.get("type") != "event_callback":
        return None, f"a {body.get('type')!r} callback"
    event = _object(body.get("event"))
    kind_name = str(event.get("type") or "")
    if kind_name not in ("message", "app_mention"):
        return None, f"a {kind_name!r} event"
    subtype = event.get("subtype")
    # an integration's post (``bot_message``, no ``user``) is a bot's words: taken with allowBots,
    # its sender the bot's id
    from_bot = subtype == "bot_message" and allow_bots
    if subtype is not None and subtype not in _USER_SUBTYPES and not from_bot:
        return None, f"a {subtype!r} message"
    channel, ts = str(event.get("channel") or ""), str(event.get("ts") or "")
    sender = str(event.get("user") or (event.get("bot_id") if from_bot else "") or "")
    if not channel or not ts or not sender:
        return None, "no channel, ts or user"
    if sender == bot_user_id:
        return None, "the bot's own message"
    if event.get("bot_id") and not allow_bots:
        return None, "from a bot"
    raw = str(event.get("text") or "")
    mention = _mention(bot_user_id) if bot_user_id else None
    mentioned = kind_name == "app_mention" or bool(mention and mention.search(raw))
    text = from_mrkdwn(mention.sub("", raw) if mention else raw).strip()
    attachments = tuple(_attachment(f) for f in event.get("files") or () if isinstance(f, dict))
    if not text and not attachments:
        return None, "no text and no file"
    team = str(body.get("team_id") or event.get("team") or "") or None
    thread_ts = str(event.get("thread_ts") or "")
    parent_user = str(event.get("parent_user_id") or "")
    command = text.split(maxsplit=1)[0].lower() if text.startswith("/") and len(text) > 1 else None
    kind = _kind(str(event.get("channel_type") or ""), channel)
    msg = InboundMessage(
        channel="slack",
        account_id=account_id,
        chat_kind=kind,
        chat_id=channel,
        message_id=ts,
        sender_id=sender,
        text=text,
        timestamp=_epoch_ms(ts),
        thread_id=thread_ts if thread_ts and thread_ts != ts else None,
        thread_reply_only=kind == "direct",
        parent_id=team,
        reply_to_bot=bool(parent_user) and parent_user == bot_user_id,
        was_mentioned=mentioned,
        command=command,
        attachments=attachments,
        metadata={k: v for k, v in (("teamId", team), ("eventId", body.get("event_id"))) if v},
    )
    return msg, ""


def normalize_command(payload: dict[str, Any], *, account_id: str) -> tuple[InboundMessage | None, str]:
    """A slash command (``/new``, or the app's own command with words after it) as the message
    ``<command> <text>``, addressed to the bot."""
    command = str(payload.get("command") or "").strip().lower()
    user, channel = str(payload.get("user_id") or ""), str(payload.get("channel_id") or "")
    trigger = str(payload.get("trigger_id") or "")
    if not command.startswith("/") or not user or not channel or not trigger:
        return None, "no command, user, channel or trigger"
    words = from_mrkdwn(str(payload.get("text") or "")).strip()
    team = str(payload.get("team_id") or "") or None
    msg = InboundMessage(
        channel="slack",
        account_id=account_id,
        chat_kind="direct" if channel.startswith("D") else "channel",
        chat_id=channel,
        message_id=f"command-{trigger}",
        sender_id=user,
        sender_name=str(payload.get("user_name") or ""),
        text=f"{command} {words}".strip(),
        parent_id=team,
        was_mentioned=True,  # a slash command is addressed to the app by itself
        command=command,
        metadata={"slashCommand": True, **({"teamId": team} if team else {})},
    )
    return msg, ""


def _attachment(raw: dict[str, Any]) -> Attachment:
    mime = str(raw.get("mimetype") or "") or None
    kind: AttachmentKind = attachment_kind(mime)
    if raw.get("subtype") == "slack_audio":
        kind = "voice"  # a clip recorded in Slack
    size = raw.get("size")
    return Attachment(
        kind=kind,
        ref=str(raw.get("url_private_download") or raw.get("url_private") or ""),
        mime_type=mime,
        file_name=str(raw.get("name") or "") or None,
        size=size if isinstance(size, int) else None,
    )


def _epoch_ms(ts: str) -> int:
    try:
        return int(float(ts) * 1000)
    except ValueError:
        return 0
