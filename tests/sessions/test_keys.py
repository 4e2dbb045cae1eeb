"""Tests for session-key parsing: canonical forms, kinds, subagent lineage and strict rejection."""

from __future__ import annotations

import json

import pytest

from homarus.errors import InvalidRequest
from homarus.sessions.keys import (
    AGENT_ID_RE,
    MAX_KEY_LENGTH,
    SessionKey,
    main_session_key,
    normalize_agent_id,
    parse_session_key,
)

# -- main session ---------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, "", "main", "MAIN", "  main  ", "   "])
def test_empty_and_main_map_to_the_agents_main_session(raw: str | None) -> None:
    key = parse_session_key(raw)
    assert key == SessionKey("main", "main")
    assert key.canonical == "agent:main:main"
    assert str(key) == "agent:main:main"
    assert key.kind == "main"


@pytest.mark.parametrize("raw", [None, "", "main"])
def test_main_session_for_another_agent_and_main_key(raw: str | None) -> None:
    key = parse_session_key(raw, agent_id="Ops", main_key="home")
    assert key.canonical == "agent:ops:home"
    assert key.agent_id == "ops"
    assert key.kind == "main"


def test_main_session_key_helper() -> None:
    assert main_session_key("OPS").canonical == "agent:ops:main"
    assert main_session_key("ops", "home").canonical == "agent:ops:home"
    with pytest.raises(InvalidRequest, match="invalid agent id"):
        main_session_key("not valid")


def test_explicit_main_key_equals_default() -> None:
    assert parse_session_key("agent:main:main") == parse_session_key(None)
    assert parse_session_key("agent:main:main").kind == "main"


# -- canonical agent keys -----------------------------------------------------------------------


def test_group_key_parts_kind_and_no_thread() -> None:
    key = parse_session_key("agent:ops:discord:group:123")
    assert key.agent_id == "ops"
    assert key.rest == "discord:group:123"
    assert key.parts == ["discord", "group", "123"]
    assert key.kind == "group"
    assert key.thread_id is None
    assert key.subagent_depth == 0
    assert key.canonical == "agent:ops:discord:group:123"


def test_prefixed_key_keeps_its_agent_regardless_of_requested_agent() -> None:
    key = parse_session_key("agent:ops:discord:group:123", agent_id="main")
    assert key.agent_id == "ops"
    assert key.canonical == "agent:ops:discord:group:123"


def test_keys_are_case_insensitive() -> None:
    upper = parse_session_key("AGENT:Ops:Discord:GROUP:ABC")
    assert upper.canonical == "agent:ops:discord:group:abc"
    assert upper == parse_session_key("agent:ops:discord:group:abc")
    assert upper.kind == "group"


def test_thread_id() -> None:
    key = parse_session_key("agent:main:discord:channel:42:thread:99")
    assert key.kind == "channel"
    assert key.thread_id == "99"


def test_thread_marker_at_end_is_not_a_thread() -> None:
    # "thread" as the last segment has no id after it
    assert parse_session_key("agent:main:discord:group:thread").thread_id is None


def test_last_thread_segment_wins() -> None:
    assert parse_session_key("agent:main:slack:channel:c:thread:1:thread:2").thread_id == "2"


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("agent:main:direct:alice", "direct"),
        ("agent:main:telegram:direct:alice", "direct"),
        ("agent:main:telegram:acct:direct:alice", "direct"),
        ("agent:main:discord:group:1", "group"),
        ("agent:main:discord:channel:1", "channel"),
        ("agent:main:cron:job1", "cron"),
        ("agent:main:cron:job1:run:r1", "cron"),
        ("agent:main:hook:0c8e", "hook"),
        ("agent:main:main:subagent:abc", "subagent"),
        ("agent:main:subagent:abc", "subagent"),
        ("agent:main:dashboard:uuid-1", "other"),
        ("agent:main:openai-user:bob", "other"),
        ("agent:main:work", "main"),
        ("global", "global"),
        ("unknown", "unknown"),
    ],
)
def test_kinds(raw: str, kind: str) -> None:
    assert parse_session_key(raw).kind == kind


def test_subagent_of_a_group_session_is_a_subagent() -> None:
    key = parse_session_key("agent:main:discord:group:1:subagent:x")
    assert key.kind == "subagent"


# -- sentinels ----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["global", "GLOBAL", "unknown", " Unknown "])
def test_sentinels_are_kept_as_is(raw: str) -> None:
    key = parse_session_key(raw, agent_id="ops")
    assert key.agent_id == ""
    assert key.canonical == raw.strip().lower()
    assert key.rest == raw.strip().lower()
    assert key.kind == raw.strip().lower()


def test_sentinel_words_inside_an_agent_key_are_not_sentinels() -> None:
    key = parse_session_key("agent:main:global")
    assert key.agent_id == "main"
    assert key.canonical == "agent:main:global"


# -- non-prefixed keys --------------------------------------------------------------------------


def test_non_prefixed_key_scoped_under_default_agent() -> None:
    key = parse_session_key("Discord:Direct:42")
    assert key.canonical == "agent:main:discord:direct:42"
    assert key.agent_id == "main"
    assert key.kind == "direct"


def test_non_prefixed_key_scoped_under_requested_agent() -> None:
    key = parse_session_key("telegram:group:7", agent_id="OPS")
    assert key.canonical == "agent:ops:telegram:group:7"
    assert key.agent_id == "ops"


def test_non_prefixed_hook_key() -> None:
    key = parse_session_key("hook:1234")
    assert key.canonical == "agent:main:hook:1234"
    assert key.kind == "hook"


def test_word_starting_with_agent_but_no_colon_is_not_prefixed() -> None:
    assert parse_session_key("agents").canonical == "agent:main:agents"


def test_non_prefixed_key_with_invalid_requested_agent_is_rejected() -> None:
    with pytest.raises(InvalidRequest, match="invalid agent id 'Bad Agent'"):
        parse_session_key("x", agent_id="Bad Agent")


# -- subagents ----------------------------------------------------------------------------------


def test_subagent_depth_one_level() -> None:
    assert parse_session_key("agent:main:main:subagent:abc").subagent_depth == 1


def test_subagent_depth_nested() -> None:
    assert parse_session_key("agent:ops:main:subagent:a:subagent:b").subagent_depth == 2
    assert parse_session_key("agent:ops:main:subagent:a").subagent_depth == 1


def test_subagent_at_root() -> None:
    assert parse_session_key("agent:ops:subagent:x").subagent_depth == 1


def test_segment_containing_subagent_is_not_a_subagent() -> None:
    key = parse_session_key("agent:main:mysubagent:x")
    assert key.subagent_depth == 0
    assert key.kind == "other"


# -- malformed keys -----------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["agent:", "agent:x", "agent::x", "agent:main:", "agent:main::x", "agent:main:x:"])
def test_malformed_agent_keys(raw: str) -> None:
    with pytest.raises(InvalidRequest, match=f'malformed session key "{raw}"'):
        parse_session_key(raw)


@pytest.mark.parametrize("raw", ["agent:-x:y", "agent:_x:y", "agent:a.b:y", "agent:a!:y", "agent:" + "a" * 65 + ":y"])
def test_agent_keys_with_invalid_agent_id(raw: str) -> None:
    with pytest.raises(InvalidRequest, match="invalid agent id") as info:
        parse_session_key(raw)
    assert info.value.message.startswith(f'malformed session key "{raw}"')


def test_agent_id_of_64_characters_is_accepted() -> None:
    agent = "a" * 64
    assert parse_session_key(f"agent:{agent}:x").agent_id == agent


@pytest.mark.parametrize(
    "raw",
    [
        "agent:Bad Id:x",
        "agent:main:a b",
        "agent:main:a\nb",
        "agent:main:a\tb",
        "agent:main:a\x00b",
        "agent:main:a\x7fb",
        "agent:main:a\x1bb",
        "foo bar",
        "foo\rbar",
    ],
)
def test_whitespace_and_control_characters_are_rejected(raw: str) -> None:
    with pytest.raises(InvalidRequest, match="whitespace or control characters") as info:
        parse_session_key(raw)
    assert json.dumps(raw) in info.value.message  # quoted, control characters escaped


@pytest.mark.parametrize("raw", ["a::b", ":a", "a:", "::", "discord:group:"])
def test_empty_segment_in_non_prefixed_key(raw: str) -> None:
    with pytest.raises(InvalidRequest, match=f'malformed session key "{raw}": empty segment'):
        parse_session_key(raw)


def test_too_long_key_is_rejected() -> None:
    raw = "agent:main:" + "x" * (MAX_KEY_LENGTH - len("agent:main:") + 1)
    assert len(raw) == MAX_KEY_LENGTH + 1
    with pytest.raises(InvalidRequest, match=r"session key too long \(513 > 512 characters\)"):
        parse_session_key(raw)


def test_key_of_exactly_max_length_is_accepted() -> None:
    raw = "agent:main:" + "x" * (MAX_KEY_LENGTH - len("agent:main:"))
    assert len(raw) == MAX_KEY_LENGTH
    assert parse_session_key(raw).canonical == raw


def test_malformed_key_is_an_error_not_a_rewrite() -> None:
    # the error is the only outcome: nothing comes back that a caller could mistake for a key
    for raw in ("agent:", "agent::x", "a::b"):
        with pytest.raises(InvalidRequest):
            parse_session_key(raw)


def test_invalid_request_is_a_400() -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_session_key("agent:x")
    assert info.value.http_status == 400
    assert info.value.error_code == "INVALID_REQUEST"


# -- agent ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("main", "main"), ("OPS", "ops"), (" ops ", "ops"), ("a_b-c9", "a_b-c9"), ("9x", "9x"), ("a" * 64, "a" * 64)],
)
def test_normalize_agent_id_accepts(raw: str, expected: str) -> None:
    assert normalize_agent_id(raw) == expected


@pytest.mark.parametrize("raw", ["", "   ", "-x", "_x", "a b", "a.b", "a:b", "ä", "a" * 65, "ops\n\nx"])
def test_normalize_agent_id_rejects(raw: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        normalize_agent_id(raw)
    assert info.value.message == f"invalid agent id {raw!r}: use 1-64 of a-z, 0-9, '_' or '-'"


def test_agent_id_pattern_is_anchored() -> None:
    assert AGENT_ID_RE.match("ok") is not None
    assert AGENT_ID_RE.match("Ok") is None
