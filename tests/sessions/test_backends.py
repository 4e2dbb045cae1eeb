"""The session backends keep one contract: the embedded one (SQLite index, JSONL files) and
PostgreSQL (a real server, tests/pg_cluster.py). Each test runs on both, through the session
manager as the gateway uses it; "two gateways" are two managers on the same storage, each with
its own handles and caches."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from homarus.errors import InvalidRequest, NotFound
from homarus.sessions.backend import SessionBackend, TranscriptLog
from homarus.sessions.manager import SessionManager
from homarus.sessions.store import Maintenance
from homarus.storage.migrations import migrate_at

Managers = Callable[..., SessionManager]


@pytest.fixture(params=["embedded", "postgres"])
def managers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Managers]:
    """A factory of session managers (gateways) sharing one storage of the backend under test."""
    made: list[Any] = []
    backend: Callable[[], SessionBackend | None] = lambda: None  # noqa: E731
    if request.param == "postgres":
        from homarus.sessions.pg_backend import PostgresSessions
        from homarus.storage.blocking import BlockingDatabase

        url = request.getfixturevalue("pg_url")
        asyncio.run(migrate_at(url))

        def backend() -> SessionBackend:
            db = BlockingDatabase(url, max_size=4)
            made.append(db)
            return PostgresSessions(db)

    def make(**kwargs: Any) -> SessionManager:
        mgr = SessionManager(tmp_path / "state", agent_ids=("main", "work"), backend=backend(), **kwargs)
        made.append(mgr)
        return mgr

    yield make
    for thing in made:
        thing.close()


def _tool_turn(call_id: str) -> list[dict[str, Any]]:
    call = {"type": "toolCall", "id": call_id, "name": "exec", "arguments": {"command": "ls"}}
    return [
        {"type": "message", "message": {"role": "assistant", "content": [call], "timestamp": 1}},
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": "exec",
                "content": [{"type": "text", "text": "ok"}],
                "isError": False,
                "timestamp": 2,
            },
        },
    ]


def _unsynced(transcript: TranscriptLog) -> bool:
    return transcript.unsynced  # read through a call: mypy keeps no narrowing across sync()


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def test_a_session_created_by_one_gateway_is_seen_and_changed_by_another(managers: Managers) -> None:
    a, b = managers(), managers()
    key = a.resolve_key("agent:main:chat-1")
    created = a.ensure(key, label="Chat one")
    assert created.created
    seen = b.require(key)
    assert seen.entry.session_id == created.entry.session_id
    assert seen.entry.label == "Chat one"
    assert not b.ensure(key).created  # the other gateway finds it, does not make a second
    b.update_entry(key, {"label": "Renamed", "thinkingLevel": "high"})
    assert a.require(key).entry.label == "Renamed"
    a.update_entry(key, {"thinkingLevel": None})
    assert b.require(key).entry.thinking_level is None
    assert [k for _a, k, _e in b.all_entries("main")] == [key.canonical]
    assert b.all_entries("work") == []
    with pytest.raises(NotFound):
        b.update_entry(b.resolve_key("agent:main:nobody"), {"label": "x"})
    with pytest.raises(InvalidRequest, match="invalid session field"):
        a.update_entry(key, {"status": "sleeping"})
    assert b.require(key).entry.label == "Renamed"  # a refused change wrote nothing


def test_two_gateways_creating_one_session_at_once_make_one(managers: Managers) -> None:
    gateways = [managers() for _ in range(4)]
    key = gateways[0].resolve_key("agent:main:race")
    ids: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(gateways))

    def create(mgr: SessionManager) -> None:
        barrier.wait()
        try:
            ids.append(mgr.ensure(key).entry.session_id)
        except BaseException as exc:  # a new store opened by several at once must not fail any
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(g,)) for g in gateways]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ids) == len(gateways) and len(set(ids)) == 1
    assert gateways[0].transcript(key.agent_id, ids[0]).read().header is not None


def test_transcripts_are_shared_incremental_and_keep_tool_pairing(managers: Managers) -> None:
    a, b = managers(), managers()
    key = a.resolve_key("agent:main:t")
    ref = a.ensure(key)
    ta, tb = a.transcript_for(ref), b.transcript_for(b.require(key))
    assert ta.exists() and tb.exists()
    first = ta.append(_user("hello"))
    assert [e["id"] for e in tb.read().entries] == [first["id"]]
    stamp = tb.stamp()
    # b appends after a without seeing a's write through its own cache first: parents chain
    batch = tb.append_many(_tool_turn("call-1"))
    assert batch[0]["parentId"] == first["id"]
    assert tb.stamp() != stamp
    view = ta.read()  # a's cached view grows by what b wrote
    assert [e["id"] for e in view.entries] == [first["id"], batch[0]["id"], batch[1]["id"]]
    assert view.header is not None and view.header["id"] == ref.entry.session_id
    # a second answer to the same call, from either gateway, is refused and writes nothing
    with pytest.raises(InvalidRequest, match="was already answered"):
        ta.append(_tool_turn("call-1")[1])
    with pytest.raises(InvalidRequest, match="has no matching tool call"):
        tb.append(_tool_turn("call-9")[1])
    # a batch is all or nothing: its second entry is bad, so its first is not stored either
    with pytest.raises(InvalidRequest, match="duplicate transcript entry id"):
        ta.append_many([_user("kept?"), {**_user("dup"), "id": first["id"]}])
    assert len(tb.read().entries) == 3
    ta.append_many([_user("later")], synced=False)
    assert _unsynced(ta)
    ta.sync()
    assert not _unsynced(ta)
    assert tb.read().entries[-1]["message"]["content"] == "later"


def test_appends_from_two_gateways_at_once_interleave_whole(managers: Managers) -> None:
    a, b = managers(), managers()
    key = a.resolve_key("agent:main:busy")
    ref = a.ensure(key)
    handles = [a.transcript_for(ref), b.transcript_for(b.require(key))]

    def write(index: int) -> None:
        for n in range(15):
            handles[index].append_many(_tool_turn(f"g{index}-{n}"))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    entries = handles[0].read().entries
    assert len(entries) == 60
    for call, result in zip(entries[::2], entries[1::2], strict=True):
        assert call["message"]["content"][0]["id"] == result["message"]["toolCallId"]
        assert result["parentId"] == call["id"]
    assert len({e["id"] for e in entries}) == 60


def test_reset_and_delete_set_the_transcript_aside_everywhere(managers: Managers) -> None:
    a, b = managers(), managers()
    key = a.resolve_key("agent:main:r")
    ref = a.ensure(key)
    a.transcript_for(ref).append(_user("before the reset"))
    assert len(b.transcript_for(b.require(key)).read().entries) == 1
    fresh, archived = a.reset(key)
    assert archived is not None and ".jsonl.reset." in archived
    assert fresh.entry.session_id != ref.entry.session_id
    old = b.transcript(key.agent_id, ref.entry.session_id)  # b's handle of the old transcript
    assert old.read().entries == [] and not old.exists()
    with pytest.raises(InvalidRequest, match="does not exist"):
        old.append(_user("into the archive"))
    new = b.transcript_for(b.require(key))
    assert new.read().entries == [] and new.read().header is not None
    removed, paths = b.delete(key)
    assert removed and len(paths) == 1 and ".jsonl.deleted." in paths[0]
    assert a.get(key) is None
    assert not a.transcript(key.agent_id, fresh.entry.session_id).exists()
    assert a.delete(key) == (False, [])
    with pytest.raises(InvalidRequest, match="Cannot delete the main session"):
        a.delete(a.main_session_key())


def test_maintenance_enforce_prunes_the_oldest_but_never_a_main_session(
    managers: Managers, monkeypatch: pytest.MonkeyPatch
) -> None:
    from homarus.sessions import pg_store

    monkeypatch.setattr(pg_store, "MAINTAIN_EVERY_S", 0.0)  # PostgreSQL: every write looks (default 10 s)
    mgr = managers(maintenance=Maintenance("enforce", prune_after_ms=10**12, max_entries=3))
    main = mgr.main_session_key()
    mgr.ensure(main)
    keys = [mgr.resolve_key(f"agent:main:s{i}") for i in range(5)]
    now = int(time.time() * 1000)
    for i, key in enumerate(keys):
        mgr.ensure(key, update={"updatedAt": now - 60_000 + i})  # older than the main session, in order
    left = {k for _a, k, _e in mgr.all_entries("main")}
    assert main.canonical in left
    assert len(left) == 3
    assert {keys[3].canonical, keys[4].canonical} <= left


async def test_updates_from_the_event_loop(managers: Managers) -> None:
    mgr = managers()
    key = mgr.resolve_key("agent:main:loop")
    await asyncio.to_thread(mgr.ensure, key)
    ref = await mgr.aupdate_entry(key, {"label": "from the loop"}, synced=False)
    assert ref.entry.label == "from the loop"
    assert (await asyncio.to_thread(mgr.require, key)).entry.label == "from the loop"
    count, recent = mgr.store("main").count(), mgr.store("main").recent(5)
    assert count == 1 and recent[0][0] == key.canonical
