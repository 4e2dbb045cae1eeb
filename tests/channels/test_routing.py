"""Bindings by tier (the most specific wins, config order inside a tier) and session keys by
dmScope, identity links, groups and threads (openclaw-protocol.md §6.1)."""

from __future__ import annotations

from typing import Any

import pytest

from homarus.channels.model import InboundMessage
from homarus.channels.routing import Route, resolve_route, session_key_for
from homarus.config.channels import Bindings


def dm(sender: str = "42", *, channel: str = "telegram", account: str = "default", **kw: Any) -> InboundMessage:
    return InboundMessage(channel, account, "direct", sender, "m1", sender, **kw)


def group(chat: str = "-100", *, thread: str | None = None, **kw: Any) -> InboundMessage:
    return InboundMessage(kw.pop("channel", "telegram"), "default", "group", chat, "m1", "42", thread_id=thread, **kw)


def route(msg: InboundMessage, bindings: list[dict[str, Any]] | None = None, **kw: Any) -> Route:
    options: dict[str, Any] = {
        "default_agent": "main",
        "main_key": "main",
        "dm_scope": "main",
        "identity_links": {},
        "primary_account": "default",
        "thread_word": "topic",
    }
    options.update(kw)
    return resolve_route(msg, bindings=Bindings.model_validate(bindings or []), **options)


def binding(agent: str, **match: Any) -> dict[str, Any]:
    return {"agentId": agent, "match": {"channel": "telegram", **match}}


def test_no_binding_goes_to_the_default_agent_and_main_session() -> None:
    r = route(dm())
    assert (r.agent_id, r.session_key, r.matched_by, r.binding) == ("main", "agent:main:main", "default", None)


@pytest.mark.parametrize(
    ("scope", "key"),
    [
        ("main", "agent:main:main"),
        ("per-peer", "agent:main:direct:42"),
        ("per-channel-peer", "agent:main:telegram:direct:42"),
        ("per-account-channel-peer", "agent:main:telegram:work:direct:42"),
    ],
)
def test_dm_session_keys_follow_dm_scope(scope: str, key: str) -> None:
    assert route(dm(account="work"), dm_scope=scope, primary_account="work").session_key == key


def test_identity_links_give_one_person_one_session_across_channels() -> None:
    links = {"ada": ["telegram:42", "discord:9001"]}
    on_telegram = route(dm("42"), dm_scope="per-peer", identity_links=links)
    on_discord = route(dm("9001", channel="discord"), dm_scope="per-peer", identity_links=links)
    assert on_telegram.session_key == on_discord.session_key == "agent:main:direct:ada"
    stranger = route(dm("43"), dm_scope="per-peer", identity_links=links)
    assert stranger.session_key == "agent:main:direct:43"


def test_groups_and_topics_have_their_own_sessions_whatever_the_dm_scope() -> None:
    assert route(group()).session_key == "agent:main:telegram:group:-100"
    assert route(group(thread="7")).session_key == "agent:main:telegram:group:-100:topic:7"
    assert route(group(), dm_scope="per-peer").dm_scope is None


def test_the_most_specific_tier_wins_whatever_the_config_order() -> None:
    bindings = [
        binding("by-channel", accountId="*"),
        binding("by-account"),
        binding("by-wildcard", peer={"kind": "group", "id": "*"}),
        binding("by-parent", peer={"kind": "group", "id": "-100"}),
        binding("by-topic", peer={"kind": "group", "id": "-100:topic:7"}),
    ]
    assert route(group(thread="7"), bindings).agent_id == "by-topic"
    assert route(group(thread="8"), bindings).matched_by == "parent-peer"
    assert route(group("-200"), bindings).agent_id == "by-wildcard"
    assert route(dm(), bindings).agent_id == "by-account"
    assert route(dm(account="other"), bindings).agent_id == "by-channel"
    assert route(dm(channel="discord"), bindings).agent_id == "main"


def test_first_binding_wins_inside_a_tier_and_its_index_is_reported() -> None:
    bindings = [
        binding("first", peer={"kind": "direct", "id": "42"}),
        binding("second", peer={"kind": "direct", "id": "42"}),
    ]
    r = route(dm(), bindings)
    assert (r.agent_id, r.binding, r.matched_by) == ("first", 0, "peer")


def test_guild_roles_rank_above_guild_and_team() -> None:
    bindings = [
        binding("team", channel="slack", teamId="T1"),
        binding("guild", channel="discord", guildId="G1"),
        binding("mods", channel="discord", guildId="G1", roles=["mod"]),
    ]
    mod = group("c1", channel="discord", parent_id="G1", roles=("mod",))
    member = group("c1", channel="discord", parent_id="G1", roles=("member",))
    assert route(mod, bindings).agent_id == "mods"
    assert route(member, bindings).agent_id == "guild"
    assert route(group("c2", channel="slack", parent_id="T1"), bindings).matched_by == "team"


def test_a_binding_without_account_matches_only_the_default_account() -> None:
    bindings = [binding("work", peer={"kind": "direct", "id": "42"})]
    assert route(dm(account="default"), bindings).agent_id == "work"
    assert route(dm(account="second"), bindings).agent_id == "main"


def test_a_binding_may_override_the_dm_scope_and_a_topic_may_pin_its_agent() -> None:
    bindings = [{**binding("solo", peer={"kind": "direct", "id": "42"}), "session": {"dmScope": "per-peer"}}]
    r = route(dm(), bindings)
    assert (r.session_key, r.dm_scope) == ("agent:solo:direct:42", "per-peer")
    pinned = route(group(thread="7"), bindings, pinned_agent="coder")
    assert (pinned.agent_id, pinned.matched_by) == ("coder", "topic")
    assert pinned.session_key == "agent:coder:telegram:group:-100:topic:7"


def test_session_keys_are_lower_case_and_channels_keep_their_kind() -> None:
    broadcast = InboundMessage("telegram", "default", "channel", "-100ABC", "m", "1")
    key = session_key_for(broadcast, "main", main_key="main", dm_scope="main", identity_links={})
    assert key == "agent:main:telegram:channel:-100abc"


def test_main_is_the_owners_session_a_non_owner_dm_gets_its_own_unless_sharing_is_opted_in() -> None:
    assert route(dm("7"), owner=True).session_key == "agent:main:main"
    stranger = route(dm("8"), owner=False)
    assert stranger.session_key == "agent:main:telegram:direct:8" and stranger.dm_scope == "per-channel-peer"
    # a binding that says main does not hand the owner's session out either
    bound = route(dm("8"), [{**binding("main"), "session": {"dmScope": "main"}}], owner=False)
    assert bound.session_key == "agent:main:telegram:direct:8"
    shared = route(dm("8"), owner=False, share_main=True)
    assert shared.session_key == "agent:main:main" and shared.dm_scope == "main"
    # other scopes are per sender already
    assert route(dm("8"), owner=False, dm_scope="per-peer").session_key == "agent:main:direct:8"
