"""Who may talk to the agent: one decision per inbound message, deny by default.

Direct messages (``dmPolicy``): ``disabled`` drops everything; ``open`` admits anyone (config
validation demands an explicit ``"*"``); ``allowlist`` admits ``allowFrom`` only; ``pairing`` (the
default) admits ``allowFrom`` and the senders an owner approved, and answers anyone else with a
pairing code — nothing of their message reaches a model.

Groups: the group must be allowed (``groups.<chatId>`` or ``groups."*"``; with no ``groups`` at
all only ``groupPolicy: open`` lets groups in), then the sender (``groupPolicy`` ``open``, or the
first ``allowFrom`` of topic → group → ``groupAllowFrom`` → ``allowFrom``, or one of the first
``roles`` of topic → group; DM pairing approvals never count in groups). An admitted group message
that does not address the bot (mention or reply, ``requireMention``, default true) is only
observed: recorded, no run.

A chat inside a parent (a Discord guild's channel, a Slack team's channel) may instead be allowed
by its parent's entry (``groups.<parentId>``): the parent's ``topics`` are then its chats, and
when it lists any, only those (or ``"*"``) are allowed.

Owners (``commands.ownerAllowFrom``) may run owner-only commands and approve tools from a chat;
ownership does not bypass any of the above.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from homarus.channels.model import InboundMessage
    from homarus.config.channels import GroupConfig, TopicConfig

__all__ = ["Decision", "Trust", "decide", "is_owner", "normalize_sender"]

Verdict = Literal["admit", "pair", "observe", "drop"]
#: how much the run may do: owners get the main-session policy, everyone else the non-main one
Trust = Literal["owner", "allowed", "group"]


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str
    trust: Trust = "allowed"
    owner: bool = False
    #: the topic's own agent (``groups.<id>.topics.<id>.agentId``)
    topic_agent: str | None = None


def normalize_sender(raw: str, prefixes: Iterable[str]) -> str:
    """An ``allowFrom`` entry as a bare sender id (``telegram:123`` / ``tg:123`` → ``123``)."""
    value = raw.strip()
    lowered = value.lower()
    for prefix in prefixes:
        if lowered.startswith(prefix.lower()):
            return value[len(prefix) :].strip()
    return value


def _listed(sender_id: str, entries: Iterable[str] | None, prefixes: Iterable[str]) -> bool:
    if not entries:
        return False
    prefixes = tuple(prefixes)
    return any(e == "*" or normalize_sender(e, prefixes) == sender_id for e in entries)


def is_owner(msg: InboundMessage, owners: Iterable[str], prefixes: Iterable[str]) -> bool:
    """Whether the sender is in ``commands.ownerAllowFrom`` (``<channel>:<id>``; no wildcards)."""
    me = msg.sender_id
    for entry in owners:
        channel, _, ident = entry.partition(":")
        names = {msg.channel, *(p.rstrip(":") for p in prefixes)}
        if channel.strip().lower() in names and ident.strip() == me:
            return True
    return False


def decide(
    msg: InboundMessage,
    settings: Mapping[str, Any],
    *,
    owners: Iterable[str],
    prefixes: Iterable[str],
    paired: Callable[[str], bool],
) -> Decision:
    """The verdict for ``msg`` under its account's effective ``settings`` (``ChannelConfig.account``)."""
    prefixes = tuple(prefixes)
    owner = is_owner(msg, owners, prefixes)
    if msg.chat_kind == "direct":
        return _direct(msg, settings, owner, prefixes, paired)
    return _group(msg, settings, owner, prefixes)


def _direct(
    msg: InboundMessage,
    settings: Mapping[str, Any],
    owner: bool,
    prefixes: tuple[str, ...],
    paired: Callable[[str], bool],
) -> Decision:
    policy = settings.get("dm_policy") or "pairing"
    allow = settings.get("allow_from") or ()
    trust: Trust = "owner" if owner else "allowed"
    if policy == "disabled":
        return Decision("drop", "direct messages are disabled")
    if policy == "open":
        if "*" in allow or _listed(msg.sender_id, allow, prefixes):
            return Decision("admit", "open", trust, owner)
        return Decision("drop", 'dmPolicy "open" without "*" in allowFrom')
    if _listed(msg.sender_id, [a for a in allow if a != "*"], prefixes):
        return Decision("admit", "allowFrom", trust, owner)
    if policy == "allowlist":
        return Decision("drop", "sender not in allowFrom")
    if paired(msg.sender_id):
        return Decision("admit", "paired", trust, owner)
    return Decision("pair", "unknown sender: pairing required", owner=owner)


def _group(msg: InboundMessage, settings: Mapping[str, Any], owner: bool, prefixes: tuple[str, ...]) -> Decision:
    account_policy = settings.get("group_policy") or "allowlist"
    if account_policy == "disabled":
        return Decision("drop", "groups are disabled")
    groups: Mapping[str, GroupConfig] | None = settings.get("groups")
    group = None
    #: the key of the topic level: the thread in a chat's own entry, the chat in its parent's
    topic_key = msg.thread_id
    if groups:
        group = groups.get(msg.chat_id)
        if group is None and msg.parent_id:
            group = groups.get(msg.parent_id) or groups.get("*")
            topic_key = msg.chat_id
        elif group is None:
            group = groups.get("*")
        if group is None:
            return Decision("drop", "group not in groups")
    elif account_policy != "open":
        return Decision("drop", "no groups are allowed (add them under groups)")
    topic: TopicConfig | None = None
    if group is not None and topic_key:
        topic = group.topics.get(topic_key) or group.topics.get("*")
        if topic is None and topic_key == msg.chat_id and group.topics:
            return Decision("drop", "channel not in its parent's allowed channels")
    enabled = _first(topic and topic.enabled, group and group.enabled)
    if enabled is False:
        return Decision("drop", "group or topic disabled")
    policy = _first(topic and topic.group_policy, group and group.group_policy, account_policy)
    if policy == "disabled":
        return Decision("drop", "group disabled")
    if policy != "open":
        senders = _first(
            topic and topic.allow_from,
            group and group.allow_from,
            settings.get("group_allow_from"),
            settings.get("allow_from"),
        )
        roles = _first(topic and topic.roles, group and group.roles)
        if not _listed(msg.sender_id, senders, prefixes) and not set(roles or ()) & set(msg.roles):
            return Decision("drop", "sender not allowed in this group")
    topic_agent = topic.agent_id if topic is not None and topic_key in (group.topics if group else {}) else None
    require = _first(topic and topic.require_mention, group and group.require_mention, settings.get("require_mention"))
    if require is not False and not (msg.was_mentioned or msg.reply_to_bot):
        return Decision("observe", "not addressed to the bot", "group", owner, topic_agent)
    return Decision("admit", "group", "group", owner, topic_agent)


def _first(*values: Any) -> Any:
    """The first value that is set (None is unset; False and empty lists are settings)."""
    return next((v for v in values if v is not None), None)
