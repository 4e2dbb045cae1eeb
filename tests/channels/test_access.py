"""Who may talk to the agent: DM policies, groups, topics, mentions and owners — deny by default.
Settings come from the real config model (``ChannelConfig.account``), as the gateway gets them."""

from __future__ import annotations

from typing import Any

import pytest

from homarus.channels.access import Decision, decide, normalize_sender
from homarus.channels.model import InboundMessage
from homarus.channels.telegram.config import TelegramConfig

PREFIXES = ("telegram:", "tg:")


def settings(**cfg: Any) -> dict[str, Any]:
    return TelegramConfig.model_validate({"botToken": "1:x", **cfg}).account("default")


def dm(sender: str = "42") -> InboundMessage:
    return InboundMessage("telegram", "default", "direct", sender, "m1", sender)


def grp(sender: str = "42", chat: str = "-100", *, thread: str | None = None, mention: bool = False) -> InboundMessage:
    return InboundMessage("telegram", "default", "group", chat, "m1", sender, thread_id=thread, was_mentioned=mention)


def verdict(
    msg: InboundMessage, *, owners: tuple[str, ...] = (), paired: set[str] | None = None, **cfg: Any
) -> Decision:
    return decide(msg, settings(**cfg), owners=owners, prefixes=PREFIXES, paired=lambda s: s in (paired or set()))


def test_the_default_is_pairing_an_unknown_sender_gets_a_code_and_nothing_else() -> None:
    assert verdict(dm()).verdict == "pair"
    assert verdict(dm(), paired={"42"}).verdict == "admit"
    assert verdict(dm(), allowFrom=["tg:42"]).reason == "allowFrom"


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        ({"dmPolicy": "disabled", "allowFrom": ["42"]}, "drop"),
        ({"dmPolicy": "allowlist", "allowFrom": ["telegram:42"]}, "admit"),
        ({"dmPolicy": "allowlist", "allowFrom": ["7"]}, "drop"),
        ({"dmPolicy": "open", "allowFrom": ["*"]}, "admit"),
    ],
)
def test_dm_policies(cfg: dict[str, Any], expected: str) -> None:
    assert verdict(dm(), **cfg).verdict == expected


def test_an_allowlist_ignores_pairing_approvals() -> None:
    assert verdict(dm(), paired={"42"}, dmPolicy="allowlist", allowFrom=["7"]).verdict == "drop"


def test_open_without_a_star_and_an_allowlist_without_ids_are_config_errors() -> None:
    with pytest.raises(ValueError, match='"open" needs "\\*"'):
        settings(dmPolicy="open")
    with pytest.raises(ValueError, match="at least one sender id"):
        settings(dmPolicy="allowlist", allowFrom=["*"])


def test_groups_are_closed_unless_listed() -> None:
    assert verdict(grp(mention=True), allowFrom=["42"]).verdict == "drop"
    assert verdict(grp(mention=True), allowFrom=["42"], groups={"-200": {}}).verdict == "drop"
    listed = verdict(grp(mention=True), allowFrom=["42"], groups={"-100": {}})
    assert (listed.verdict, listed.trust) == ("admit", "group")


def test_in_a_group_the_sender_must_be_allowed_and_pairing_never_counts() -> None:
    groups: dict[str, Any] = {"*": {}}
    assert verdict(grp("43", mention=True), paired={"43"}, allowFrom=["42"], groups=groups).verdict == "drop"
    assert verdict(grp("43", mention=True), groupAllowFrom=["43"], allowFrom=["42"], groups=groups).verdict == "admit"
    anyone = {"-100": {"groupPolicy": "open"}}
    assert verdict(grp("99", mention=True), groups=anyone).verdict == "admit"


def test_require_mention_is_the_default_and_unaddressed_messages_are_only_observed() -> None:
    groups = {"-100": {"groupPolicy": "open"}}
    assert verdict(grp(), groups=groups).verdict == "observe"
    replied = InboundMessage("telegram", "default", "group", "-100", "m", "42", reply_to_bot=True)
    assert verdict(replied, groups=groups).verdict == "admit"
    quiet = {"-100": {"groupPolicy": "open", "requireMention": False}}
    assert verdict(grp(), groups=quiet).verdict == "admit"


def test_topics_inherit_from_their_group_and_may_pin_an_agent_or_be_disabled() -> None:
    groups = {
        "-100": {
            "groupPolicy": "open",
            "topics": {"7": {"agentId": "coder", "requireMention": False}, "8": {"enabled": False}},
        }
    }
    in_topic = verdict(grp(thread="7"), groups=groups)
    assert (in_topic.verdict, in_topic.topic_agent) == ("admit", "coder")
    assert verdict(grp(thread="8", mention=True), groups=groups).verdict == "drop"
    elsewhere = verdict(grp(thread="9", mention=True), groups=groups)
    assert (elsewhere.verdict, elsewhere.topic_agent) == ("admit", None)


def test_owners_are_named_with_their_channel_and_ownership_bypasses_nothing() -> None:
    owner = verdict(dm(), owners=("telegram:42",), allowFrom=["42"])
    assert (owner.owner, owner.trust) == (True, "owner")
    assert verdict(dm(), owners=("discord:42",), allowFrom=["42"]).owner is False
    assert verdict(dm(), owners=("telegram:42",), dmPolicy="disabled").verdict == "drop"
    stranger_owner = verdict(dm(), owners=("telegram:42",))
    assert stranger_owner.verdict == "pair"


def test_normalize_sender_strips_known_prefixes_only() -> None:
    assert normalize_sender(" TG:123 ", PREFIXES) == "123"
    assert normalize_sender("whatsapp:123", PREFIXES) == "whatsapp:123"


# -- a chat inside a parent (a Discord guild's channel) ---------------------------------------------
def in_guild(
    sender: str = "42", channel: str = "c1", guild: str = "g1", *, roles: tuple[str, ...] = (), mention: bool = True
) -> InboundMessage:
    return InboundMessage(
        "discord", "default", "channel", channel, "m1", sender, parent_id=guild, roles=roles, was_mentioned=mention
    )


def guild_verdict(msg: InboundMessage, **cfg: Any) -> Decision:
    from homarus.config.channels import ChannelConfig

    account = ChannelConfig.model_validate(cfg).account("default")
    return decide(msg, account, owners=(), prefixes=("discord:",), paired=lambda s: False)


def test_a_parents_entry_allows_its_chats_and_its_topics_are_the_allowed_chats() -> None:
    assert guild_verdict(in_guild(), groups={"g1": {"allowFrom": ["42"]}}).verdict == "admit"
    assert guild_verdict(in_guild(guild="g2"), groups={"g1": {"allowFrom": ["42"]}}).reason == "group not in groups"
    only_c2 = {"g1": {"allowFrom": ["42"], "topics": {"c2": {}}}}
    assert guild_verdict(in_guild(), groups=only_c2).reason == "channel not in its parent's allowed channels"
    assert guild_verdict(in_guild(channel="c2"), groups=only_c2).verdict == "admit"
    closed = {"g1": {"allowFrom": ["42"], "topics": {"c1": {"enabled": False}, "*": {}}}}
    assert guild_verdict(in_guild(), groups=closed).verdict == "drop"
    assert guild_verdict(in_guild(channel="c3"), groups=closed).verdict == "admit"
    # the chat's own entry wins over its parent's
    own = {"c1": {"allowFrom": ["7"]}, "g1": {"allowFrom": ["42"]}}
    assert guild_verdict(in_guild(), groups=own).reason == "sender not allowed in this group"


def test_a_parents_chat_keeps_mention_gating_and_its_own_settings() -> None:
    groups = {"g1": {"allowFrom": ["42"], "topics": {"c1": {"requireMention": False}}}}
    assert guild_verdict(in_guild(mention=False), groups=groups).verdict == "admit"
    assert guild_verdict(in_guild(channel="c9", mention=False), groups={"g1": {"allowFrom": ["42"]}}).verdict == (
        "observe"
    )


def test_a_role_admits_a_sender_not_listed_by_id() -> None:
    groups = {"g1": {"allowFrom": ["7"], "roles": ["r-admin"]}}
    assert guild_verdict(in_guild(roles=("r-admin",)), groups=groups).verdict == "admit"
    assert guild_verdict(in_guild(roles=("r-guest",)), groups=groups).verdict == "drop"
    per_channel = {"g1": {"roles": ["r-admin"], "topics": {"c1": {"roles": ["r-ops"]}}}}
    assert guild_verdict(in_guild(roles=("r-admin",)), groups=per_channel).verdict == "drop"
    assert guild_verdict(in_guild(roles=("r-ops",)), groups=per_channel).verdict == "admit"
