"""A gateway that lost a run (paused past its ttl while a survivor took the run over) can no longer
write it: its transcript appends for that run are refused, retryably, and its end does not
overwrite the new owner's. On a real PostgreSQL, two members' views of one database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from homarus.queue.pg_journal import PgRunJournal
from homarus.sessions.manager import SessionManager
from homarus.sessions.pg_backend import PostgresSessions
from homarus.sessions.pg_transcript import RunTakenOver
from homarus.storage.blocking import BlockingDatabase
from homarus.storage.migrations import migrate_at


def test_a_member_that_lost_a_run_cannot_write_it(tmp_path: Path, pg_url: str) -> None:
    asyncio.run(migrate_at(pg_url))
    db = BlockingDatabase(pg_url, max_size=2)
    try:
        paused, survivor = PgRunJournal(db, "paused", 15.0), PgRunJournal(db, "survivor", 15.0)
        mgr_paused = SessionManager(tmp_path, backend=PostgresSessions(db, "paused"))
        mgr_survivor = SessionManager(tmp_path, backend=PostgresSessions(db, "survivor"))
        key = mgr_paused.resolve_key("main")
        ref = mgr_paused.ensure(key)
        paused.accept("run-1", "agent", {}, session_key=key.canonical)
        paused.mark_started("run-1")
        entry = {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}, "runId": "run-1"}
        mgr_paused.transcript_for(ref).append(entry)  # its own run: written
        with db.connection() as conn:  # the survivor took it over (as PgRunJournal.unfinished does)
            conn.execute("UPDATE runs SET owner = 'survivor' WHERE run_id = 'run-1'")
        reply = {"type": "message", "message": {"role": "assistant", "content": [], "timestamp": 2}, "runId": "run-1"}
        with pytest.raises(RunTakenOver, match="taken over by another gateway") as refused:
            mgr_paused.transcript_for(ref).append(reply)
        assert refused.value.retryable
        paused.finish("run-1", "error", error={"message": "late"})
        record = survivor.get("run-1")
        assert record is not None and record.status == "running"  # the late end changed nothing
        mgr_survivor.transcript_for(mgr_survivor.require(key)).append(reply)  # the new owner writes it
        survivor.finish("run-1", "ok")
        record = survivor.get("run-1")
        assert record is not None and record.status == "ok"
        entries = mgr_paused.transcript_for(ref).read().entries
        assert [e["message"]["role"] for e in entries] == ["user", "assistant"]  # one reply: the owner's
        other = {"type": "message", "message": {"role": "user", "content": "x", "timestamp": 3}}
        mgr_paused.transcript_for(ref).append(other)  # an entry of no run is written as before
    finally:
        db.close()
