"""Which agent answers an admitted message, and in which session (openclaw-protocol.md §6.1).

Bindings are tried by tier, most specific first; within a tier the first binding in config order
wins. A binding matches only when every field it gives matches:

1. the exact peer (a thread's own id: ``<chatId>:<thread word>:<threadId>``)
2. the parent peer (the chat a thread belongs to)
3. a peer wildcard (``peer.id: "*"`` for that kind)
4. guild + roles
5. guild
6. team
7. the account (``accountId`` given, or omitted = the channel's default account)
8. the channel (``accountId: "*"``)
9. the default agent

Session keys: DMs follow ``session.dmScope`` (a binding may override it): ``main`` →
``agent:<a>:<mainKey>``, ``per-peer`` → ``agent:<a>:direct:<peer>``, ``per-channel-peer`` →
``agent:<a>:<channel>:direct:<peer>``, ``per-account-channel-peer`` →
``agent:<a>:<channel>:<account>:direct:<peer>``; ``<peer>`` is the identity-link name when the
sender is linked. ``main`` is the owners' session: a DM from anyone else lands in its sender's
own ``per-channel-peer`` session instead, unless ``share_main`` (``session.shareMainWithNonOwners``)
says otherwise. Groups are ``agent:<a>:<channel>:group:<id>`` (``:channel:<id>`` for broadcast
channels), and a thread adds ``:<thread word>:<id>`` (``topic`` for Telegram forum topics, as the
original names them; ``thread`` elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from homarus.channels.model import InboundMessage
    from homarus.config.channels import Binding

__all__ = ["TIERS", "Route", "resolve_route", "session_key_for"]

TIERS: Final = ("peer", "parent-peer", "peer-wildcard", "guild-roles", "guild", "team", "account", "channel")


@dataclass(frozen=True, slots=True)
class Route:
    agent_id: str
    session_key: str
    #: which rule chose the agent: a tier name, ``topic`` (a topic's own agent) or ``default``
    matched_by: str
    #: the index of the binding in ``bindings`` (None: no binding)
    binding: int | None = None
    #: the DM scope applied (None for groups)
    dm_scope: str | None = None


def _peer_ids(msg: InboundMessage, thread_word: str) -> tuple[str | None, str]:
    """(the thread's own peer id or None, the chat's peer id)."""
    chat_peer = msg.sender_id if msg.chat_kind == "direct" else msg.chat_id
    if msg.thread_id and msg.chat_kind != "direct":
        return f"{msg.chat_id}:{thread_word}:{msg.thread_id}", chat_peer
    return None, chat_peer


def _tier(b: Binding, msg: InboundMessage, thread_word: str, primary_account: str) -> str | None:
    """The tier at which ``b`` matches ``msg`` (None: it does not)."""
    m = b.match
    if m.channel != msg.channel:
        return None
    wanted_account = m.account_id if m.account_id is not None else primary_account
    if wanted_account != "*" and wanted_account != msg.account_id:
        return None
    if m.guild_id is not None and m.guild_id != msg.parent_id:
        return None
    if m.team_id is not None and m.team_id != msg.parent_id:
        return None
    if m.roles is not None and not set(m.roles) & set(msg.roles):
        return None
    if m.peer is not None:
        if m.peer.kind != msg.chat_kind:
            return None
        own, parent = _peer_ids(msg, thread_word)
        if m.peer.id == "*":
            return "peer-wildcard"
        if own is not None and m.peer.id == own:
            return "peer"
        if m.peer.id == parent:
            return "parent-peer" if own is not None else "peer"
        return None
    if m.guild_id is not None:
        return "guild-roles" if m.roles is not None else "guild"
    if m.team_id is not None:
        return "team"
    return "channel" if m.account_id == "*" else "account"


def resolve_route(
    msg: InboundMessage,
    *,
    bindings: Iterable[Binding],
    default_agent: str,
    main_key: str,
    dm_scope: str,
    identity_links: Mapping[str, Iterable[str]],
    primary_account: str,
    thread_word: str = "thread",
    pinned_agent: str | None = None,
    owner: bool = True,
    share_main: bool = False,
) -> Route:
    """The agent and session for ``msg`` (already admitted: bindings never admit)."""
    listed = list(bindings)
    best: tuple[int, int] | None = None  # (tier rank, binding index)
    for position, binding in enumerate(listed):
        tier = _tier(binding, msg, thread_word, primary_account)
        if tier is None:
            continue
        rank = TIERS.index(tier)
        if best is None or rank < best[0]:
            best = (rank, position)
    index: int | None = None
    override: str | None = None
    if pinned_agent is not None:
        agent, matched_by = pinned_agent, "topic"
    elif best is not None:
        chosen = listed[best[1]]
        agent, matched_by, index = chosen.agent_id, TIERS[best[0]], best[1]
        override = chosen.session.dm_scope if chosen.session is not None else None
    else:
        agent, matched_by = default_agent, "default"
    scope = override or dm_scope
    if scope == "main" and msg.chat_kind == "direct" and not owner and not share_main:
        scope = "per-channel-peer"  # never the owner's session, whatever the scope says
    key = session_key_for(
        msg, agent, main_key=main_key, dm_scope=scope, identity_links=identity_links, thread_word=thread_word
    )
    return Route(agent, key, matched_by, index, scope if msg.chat_kind == "direct" else None)


def _linked_name(msg: InboundMessage, identity_links: Mapping[str, Iterable[str]]) -> str | None:
    me = msg.sender.lower()
    for name, ids in identity_links.items():
        if me in (i.lower() for i in ids):
            return name
    return None


def session_key_for(
    msg: InboundMessage,
    agent_id: str,
    *,
    main_key: str,
    dm_scope: str,
    identity_links: Mapping[str, Iterable[str]],
    thread_word: str = "thread",
) -> str:
    """The canonical session key of ``msg`` for ``agent_id``."""
    prefix = f"agent:{agent_id}"
    thread = f":{thread_word}:{msg.thread_id}" if msg.thread_id and not msg.thread_reply_only else ""
    if msg.chat_kind == "direct":
        peer = _linked_name(msg, identity_links) or msg.sender_id
        if dm_scope == "main":
            return f"{prefix}:{main_key}"
        if dm_scope == "per-peer":
            return f"{prefix}:direct:{peer}{thread}".lower()
        if dm_scope == "per-channel-peer":
            return f"{prefix}:{msg.channel}:direct:{peer}{thread}".lower()
        return f"{prefix}:{msg.channel}:{msg.account_id}:direct:{peer}{thread}".lower()
    return f"{prefix}:{msg.channel}:{msg.chat_kind}:{msg.chat_id}{thread}".lower()
