"""Tests for SessionManager: key resolution, ensure, patch, reset, delete and listing."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from homarus.errors import InvalidRequest, NotFound
from homarus.sessions.keys import SessionKey
from homarus.sessions.manager import SessionManager, SessionRef, now_ms
from homarus.sessions.store import SessionStore


@pytest.fixture
def mgr(tmp_path: Path) -> SessionManager:
    return SessionManager(tmp_path / "state", agent_ids=("main", "ops"), workspace="/ws")


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text}}


def _stored(mgr: SessionManager, agent: str = "main") -> dict[str, Any]:
    return SessionStore(mgr.sessions_dir(agent)).read()


# -- keys ---------------------------------------------------------------------------------------


def test_resolve_key_defaults_and_scoping(mgr: SessionManager) -> None:
    assert mgr.resolve_key(None).canonical == "agent:main:main"
    assert mgr.resolve_key("main", "ops").canonical == "agent:ops:main"
    assert mgr.resolve_key("discord:group:1", "ops").canonical == "agent:ops:discord:group:1"
    assert mgr.resolve_key("agent:ops:x").canonical == "agent:ops:x"
    assert mgr.resolve_key("global").canonical == "global"
    assert mgr.main_session_key().canonical == "agent:main:main"
    assert mgr.main_session_key("ops").canonical == "agent:ops:main"


def test_resolve_key_unknown_agent_in_argument(mgr: SessionManager) -> None:
    with pytest.raises(InvalidRequest) as info:
        mgr.resolve_key("main", "x")
    assert info.value.message == 'unknown agent id "x"'


def test_resolve_key_unknown_agent_in_key(mgr: SessionManager) -> None:
    with pytest.raises(InvalidRequest) as info:
        mgr.resolve_key("agent:x:main")
    assert info.value.message == 'unknown agent id "x"'


def test_resolve_key_agent_mismatch(mgr: SessionManager) -> None:
    with pytest.raises(InvalidRequest) as info:
        mgr.resolve_key("agent:ops:y", "main")
    assert info.value.message == 'session key "agent:ops:y" belongs to agent "ops", not "main"'


def test_resolve_key_malformed_is_refused(mgr: SessionManager) -> None:
    with pytest.raises(InvalidRequest, match="malformed session key"):
        mgr.resolve_key("agent::x")


def test_unbound_keys_cannot_be_stored(mgr: SessionManager) -> None:
    with pytest.raises(InvalidRequest, match='session key "global" is not bound to an agent'):
        mgr.ensure(mgr.resolve_key("global"))


# -- ensure -------------------------------------------------------------------------------------


def test_ensure_creates_entry_and_transcript(mgr: SessionManager) -> None:
    key = mgr.resolve_key("discord:group:1")
    before = now_ms()
    ref = mgr.ensure(key, label="team", channel="discord", chatType=None)
    assert isinstance(ref, SessionRef)
    assert ref.created is True
    assert ref.agent_id == "main"
    entry = ref.entry
    assert str(uuid.UUID(entry.session_id)) == entry.session_id
    assert entry.session_file == f"{entry.session_id}.jsonl"
    assert entry.label == "team"
    assert entry.channel == "discord"
    assert entry.chat_type is None
    assert entry.created_at == entry.updated_at
    assert entry.created_at is not None
    assert before <= entry.created_at <= now_ms()

    stored = _stored(mgr)
    assert list(stored) == ["agent:main:discord:group:1"]
    assert stored["agent:main:discord:group:1"] == entry.to_json()
    assert "chatType" not in stored["agent:main:discord:group:1"]

    path = mgr.sessions_dir("main") / f"{entry.session_id}.jsonl"
    header = json.loads(path.read_bytes())
    assert header["type"] == "session"
    assert header["version"] == 3
    assert header["id"] == entry.session_id
    assert header["cwd"] == "/ws"
    assert path.stat().st_mode & 0o777 == 0o600
    assert mgr.transcript_for(ref).path == path


def test_ensure_is_idempotent(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    first = mgr.ensure(key, label="a")
    second = mgr.ensure(key, label="b")
    assert second.created is False
    assert second.entry.session_id == first.entry.session_id
    assert second.entry.label == "a"  # ensure never patches an existing entry
    assert len(list(mgr.sessions_dir("main").glob("*.jsonl"))) == 1


def test_a_runs_status_may_skip_the_sync_but_a_new_entry_never_does(mgr: SessionManager) -> None:
    import asyncio

    key = mgr.resolve_key("x")
    assert mgr.ensure(key, update={"status": "running"}, synced=False).created
    store = mgr.store("main")
    assert isinstance(store, SessionStore)
    writer = store._writing()
    assert writer.unsynced_commits == 0  # a new entry: synced all the same
    mgr.ensure(key, update={"status": "running"}, synced=False)
    assert writer.unsynced_commits == 1
    asyncio.run(mgr.aupdate_entry(key, {"status": "done"}, synced=False))
    assert writer.unsynced_commits == 2
    assert _stored(mgr)[key.canonical]["status"] == "done"


def test_ensure_recreates_a_missing_transcript(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    ref = mgr.ensure(key)
    path = mgr.transcript_for(ref).path
    path.unlink()
    again = mgr.ensure(key)
    assert again.created is False
    assert json.loads(path.read_bytes())["id"] == ref.entry.session_id


def test_ensure_keeps_existing_transcript_contents(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    ref = mgr.ensure(key)
    mgr.transcript_for(ref).append(_user("hello"))
    before = mgr.transcript_for(ref).path.read_bytes()
    mgr.ensure(key)
    assert mgr.transcript_for(ref).path.read_bytes() == before


def test_ensure_rejects_invalid_fields_and_writes_nothing(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    with pytest.raises(InvalidRequest, match="invalid session field status"):
        mgr.ensure(key, status="bogus")
    assert SessionStore(mgr.sessions_dir("main")).read() == {}


def test_agents_have_separate_stores(mgr: SessionManager) -> None:
    mgr.ensure(mgr.resolve_key("x", "ops"))
    mgr.ensure(mgr.resolve_key("x"))
    assert list(_stored(mgr, "ops")) == ["agent:ops:x"]
    assert list(_stored(mgr, "main")) == ["agent:main:x"]


def test_get_and_require(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    assert mgr.get(key) is None
    with pytest.raises(NotFound) as info:
        mgr.require(key)
    assert info.value.message == "session not found: agent:main:x"
    assert info.value.http_status == 404
    ref = mgr.ensure(key)
    got = mgr.require(key)
    assert got.entry.session_id == ref.entry.session_id
    assert got.created is False


# -- update_entry -------------------------------------------------------------------------------


def test_update_entry_missing_session(mgr: SessionManager) -> None:
    with pytest.raises(NotFound) as info:
        mgr.update_entry(mgr.resolve_key("x"), {"label": "a"})
    assert info.value.message == "session not found: agent:main:x"
    assert SessionStore(mgr.sessions_dir("main")).read() == {}


def test_update_entry_create(mgr: SessionManager) -> None:
    ref = mgr.update_entry(mgr.resolve_key("x"), {"label": "a"}, create=True)
    assert ref.entry.label == "a"
    assert _stored(mgr)["agent:main:x"]["label"] == "a"


def test_update_entry_sets_removes_and_bumps_updated_at(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    mgr.ensure(key, label="old", thinkingLevel="high")

    mgr.store("main").update(key.canonical, lambda current: {**(current or {}), "updatedAt": 1000})
    before = now_ms()
    ref = mgr.update_entry(key, {"label": None, "displayName": "Shown", "customThing": 7})
    assert ref.entry.label is None
    assert ref.entry.display_name == "Shown"
    assert ref.entry.thinking_level == "high"
    assert before <= ref.entry.updated_at <= now_ms()
    stored = _stored(mgr)[key.canonical]
    assert "label" not in stored
    assert stored["displayName"] == "Shown"
    assert stored["customThing"] == 7
    assert stored["updatedAt"] == ref.entry.updated_at


def test_update_entry_never_moves_updated_at_backwards(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    mgr.ensure(key)
    future = now_ms() + 3_600_000

    mgr.store("main").update(key.canonical, lambda current: {**(current or {}), "updatedAt": future})
    assert mgr.update_entry(key, {"label": "a"}).entry.updated_at == future


def test_update_entry_refuses_unreadable_result(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    mgr.ensure(key)
    before = _stored(mgr)
    with pytest.raises(InvalidRequest, match="invalid session field sessionId"):
        mgr.update_entry(key, {"sessionId": None})
    with pytest.raises(InvalidRequest, match="invalid session field status"):
        mgr.update_entry(key, {"status": "weird"})
    assert _stored(mgr) == before


# -- reset --------------------------------------------------------------------------------------


def test_reset_new_session_id_archives_transcript_keeps_label(
    mgr: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = mgr.resolve_key("x")
    old = mgr.ensure(key, label="keep me", thinkingLevel="low", model="gpt-x", inputTokens=12)
    old_transcript = mgr.transcript_for(old)
    old_transcript.append(_user("before reset"))
    old_bytes = old_transcript.path.read_bytes()

    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.5)
    ref, archived = mgr.reset(key)
    monkeypatch.undo()

    assert ref.entry.session_id != old.entry.session_id
    assert ref.entry.label == "keep me"
    assert ref.entry.thinking_level == "low"
    assert ref.entry.model is None  # what the session did is not kept
    assert ref.entry.input_tokens is None
    assert ref.entry.created_at == ref.entry.updated_at == 1_700_000_000_500
    assert ref.entry.session_file == f"{ref.entry.session_id}.jsonl"

    sessions_dir = mgr.sessions_dir("main")
    expected = sessions_dir / f"{old.entry.session_id}.jsonl.reset.1700000000500"
    assert archived == str(expected)
    assert expected.read_bytes() == old_bytes
    assert not old_transcript.path.exists()

    new_path = sessions_dir / f"{ref.entry.session_id}.jsonl"
    assert json.loads(new_path.read_bytes())["id"] == ref.entry.session_id
    assert mgr.transcript_for(ref).read().entries == []
    stored = _stored(mgr)[key.canonical]
    assert stored == ref.entry.to_json()


def test_reset_missing_session(mgr: SessionManager) -> None:
    with pytest.raises(NotFound, match="session not found: agent:main:nope"):
        mgr.reset(mgr.resolve_key("nope"))


def test_reset_without_old_transcript(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    old = mgr.ensure(key)
    mgr.transcript_for(old).path.unlink()
    ref, archived = mgr.reset(key)
    assert archived is None
    assert mgr.transcript_for(ref).exists()


# -- delete -------------------------------------------------------------------------------------


def test_delete_archives_and_removes_entry(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    keep = mgr.ensure(mgr.resolve_key("y"))
    ref = mgr.ensure(key)
    transcript = mgr.transcript_for(ref).path
    content = transcript.read_bytes()
    deleted, archived = mgr.delete(key)
    assert deleted is True
    assert len(archived) == 1
    assert re.fullmatch(re.escape(str(transcript)) + r"\.deleted\.\d{13}", archived[0])
    assert Path(archived[0]).read_bytes() == content
    assert not transcript.exists()
    assert list(_stored(mgr)) == ["agent:main:y"]
    assert mgr.get(key) is None
    assert mgr.transcript_for(keep).exists()


def test_delete_can_keep_transcript(mgr: SessionManager) -> None:
    key = mgr.resolve_key("x")
    ref = mgr.ensure(key)
    assert mgr.delete(key, delete_transcript=False) == (True, [])
    assert mgr.transcript_for(ref).exists()


def test_delete_missing_session(mgr: SessionManager) -> None:
    assert mgr.delete(mgr.resolve_key("x")) == (False, [])


@pytest.mark.parametrize(
    ("raw", "agent", "canonical"), [(None, None, "agent:main:main"), ("main", "ops", "agent:ops:main")]
)
def test_delete_main_session_is_refused(
    mgr: SessionManager, raw: str | None, agent: str | None, canonical: str
) -> None:
    key = mgr.resolve_key(raw, agent)
    mgr.ensure(key)
    with pytest.raises(InvalidRequest) as info:
        mgr.delete(key)
    assert info.value.message == f"Cannot delete the main session ({canonical})."
    assert mgr.get(key) is not None


# -- listing ------------------------------------------------------------------------------------


def test_all_entries_newest_first_across_agents(mgr: SessionManager) -> None:
    times = {("main", "a"): 3000, ("ops", "b"): 5000, ("main", "c"): 1000, ("ops", "d"): 4000}
    for (agent, name), ts in times.items():
        mgr.ensure(mgr.resolve_key(name, agent), updatedAt=ts)
    rows = mgr.all_entries()
    assert [(a, k, e.updated_at) for a, k, e in rows] == [
        ("ops", "agent:ops:b", 5000),
        ("ops", "agent:ops:d", 4000),
        ("main", "agent:main:a", 3000),
        ("main", "agent:main:c", 1000),
    ]
    assert [k for _, k, _ in mgr.all_entries("ops")] == ["agent:ops:b", "agent:ops:d"]


def test_all_entries_empty(mgr: SessionManager) -> None:
    assert mgr.all_entries() == []


def test_store_and_transcript_handles_are_cached(mgr: SessionManager) -> None:
    assert mgr.store("main") is mgr.store("main")
    assert mgr.transcript("main", "s") is mgr.transcript("main", "s")
    assert mgr.sessions_dir("ops") == mgr.state_dir / "agents" / "ops" / "sessions"


def test_key_type(mgr: SessionManager) -> None:
    assert mgr.resolve_key("x") == SessionKey("main", "x")


def test_transcript_handles_are_bounded_and_an_evicted_one_keeps_working(
    mgr: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("homarus.sessions.manager.MAX_TRANSCRIPT_HANDLES", 3)
    refs = [mgr.ensure(mgr.resolve_key(f"s{i}")) for i in range(5)]
    first = mgr.transcript_for(refs[0])
    first.append(_user("one"))
    for ref in refs[1:]:
        mgr.transcript_for(ref).append(_user("x"))
    assert len(mgr._transcripts) == 3  # the least recently used were let go
    fresh = mgr.transcript_for(refs[0])
    assert fresh is not first
    second = fresh.append(_user("two"))  # a new handle learns the file's state
    third = first.append(_user("three"))  # and the evicted one sees the line it did not write
    assert third["parentId"] == second["id"]
    assert [e["message"]["content"] for e in fresh.read().entries] == ["one", "two", "three"]
