"""Tests for the durable run journal: accept idempotency, lifecycle, restart recovery, pruning."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from homarus.queue import journal as journal_mod
from homarus.queue.journal import TERMINAL, RunJournal, RunRecord


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "runs.sqlite"


@pytest.fixture
def journal(db_path: Path) -> Iterator[RunJournal]:
    j = RunJournal(db_path)
    try:
        yield j
    finally:
        j.close()


def test_files_are_private(db_path: Path, journal: RunJournal) -> None:
    journal.accept("r1", "agent", {})
    assert db_path.stat().st_mode & 0o777 == 0o600
    assert db_path.parent.stat().st_mode & 0o777 == 0o700
    wal = db_path.with_name(db_path.name + "-wal")
    assert wal.exists()
    assert wal.stat().st_mode & 0o777 == 0o600


def test_accept_creates_record(journal: RunJournal) -> None:
    before = int(time.time() * 1000)
    record, created = journal.accept(
        "r1", "agent", {"message": "hi", "n": [1, 2]}, session_key="agent:main:main", agent_id="main", lane="main"
    )
    assert created is True
    assert record == RunRecord(
        run_id="r1",
        kind="agent",
        session_key="agent:main:main",
        agent_id="main",
        lane="main",
        params={"message": "hi", "n": [1, 2]},
        status="accepted",
        accepted_at=record.accepted_at,
        started_at=None,
        ended_at=None,
        result=None,
        error=None,
    )
    assert before <= record.accepted_at <= int(time.time() * 1000)
    assert record.terminal is False
    assert journal.get("r1") == record
    assert journal.get("missing") is None


def test_accept_twice_returns_the_same_record(journal: RunJournal) -> None:
    first, created1 = journal.accept("r1", "agent", {"message": "first"})
    second, created2 = journal.accept("r1", "chat", {"message": "second"}, session_key="agent:main:x")
    assert (created1, created2) == (True, False)
    assert second == first
    assert second.params == {"message": "first"}
    assert second.kind == "agent"


def test_accept_twice_after_start_does_not_reset(journal: RunJournal) -> None:
    journal.accept("r1", "agent", {})
    journal.mark_started("r1")
    record, created = journal.accept("r1", "agent", {})
    assert created is False
    assert record.status == "running"


def test_concurrent_accepts_create_once(journal: RunJournal) -> None:
    results: list[bool] = []
    lock = threading.Lock()

    def accept() -> None:
        _, created = journal.accept("same", "agent", {})
        with lock:
            results.append(created)

    threads = [threading.Thread(target=accept) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results) == [False] * 7 + [True]


def test_mark_started_and_finish(journal: RunJournal) -> None:
    journal.accept("r1", "agent", {})
    journal.mark_started("r1")
    running = journal.get("r1")
    assert running is not None
    assert running.status == "running"
    assert running.started_at is not None
    assert running.started_at >= running.accepted_at
    assert running.ended_at is None

    journal.finish("r1", "ok", result={"text": "done", "tokens": 3})
    done = journal.get("r1")
    assert done is not None
    assert done.status == "ok"
    assert done.terminal is True
    assert done.result == {"text": "done", "tokens": 3}
    assert done.error is None
    assert done.ended_at is not None
    assert done.ended_at >= running.started_at
    assert done.started_at == running.started_at


def test_finish_with_error(journal: RunJournal) -> None:
    journal.accept("r1", "agent", {})
    journal.finish("r1", "error", error={"code": "UNAVAILABLE", "message": "provider down"})
    rec = journal.get("r1")
    assert rec is not None
    assert (rec.status, rec.result, rec.error) == ("error", None, {"code": "UNAVAILABLE", "message": "provider down"})


def test_mark_started_does_not_revive_finished_runs(journal: RunJournal) -> None:
    journal.accept("r1", "agent", {})
    journal.finish("r1", "ok")
    journal.mark_started("r1")
    rec = journal.get("r1")
    assert rec is not None
    assert rec.status == "ok"
    assert rec.started_at is None


@pytest.mark.parametrize("status", ["accepted", "running", "done", "OK", ""])
def test_finish_with_non_terminal_status_raises(journal: RunJournal, status: str) -> None:
    journal.accept("r1", "agent", {})
    with pytest.raises(ValueError, match=f"not a terminal status: {status}"):
        journal.finish("r1", status)
    rec = journal.get("r1")
    assert rec is not None
    assert rec.status == "accepted"


def test_terminal_statuses() -> None:
    assert frozenset({"ok", "error", "timeout", "aborted", "interrupted"}) == TERMINAL


def test_unfinished_lists_queued_and_running_in_accept_order(journal: RunJournal) -> None:
    journal.accept("b-accepted", "agent", {}, session_key="agent:main:a")
    journal.accept("a-running", "chat", {}, session_key="agent:main:b")
    journal.mark_started("a-running")
    journal.accept("done", "agent", {})
    journal.finish("done", "ok", result=1)
    journal.accept("failed", "agent", {})
    journal.finish("failed", "error", error="boom")
    unfinished = journal.unfinished()
    assert [r.run_id for r in unfinished] == ["b-accepted", "a-running"]  # accept order, not id order
    assert [r.state for r in unfinished] == ["queued", "running"]


def test_interrupt_ends_only_unfinished_runs(journal: RunJournal) -> None:
    journal.accept("queued", "agent", {})
    journal.accept("done", "agent", {})
    journal.finish("done", "ok", result=1)
    done_before = journal.get("done")

    rec = journal.interrupt("queued", "power cut")
    assert rec is not None
    assert (rec.status, rec.terminal, rec.error, rec.state) == (
        "interrupted",
        True,
        {"reason": "power cut"},
        "interrupted",
    )
    assert rec.ended_at is not None
    assert journal.interrupt("done", "power cut") == done_before  # a finished run keeps its end
    assert journal.unfinished() == []


def test_requeue_counts_a_resume_only_for_a_started_run(journal: RunJournal) -> None:
    journal.accept("queued", "hook", {})
    journal.accept("started", "hook", {})
    journal.mark_started("started")
    queued = journal.requeue("queued")
    started = journal.requeue("started")
    assert queued is not None and started is not None
    assert (queued.status, queued.resumes, queued.state) == ("accepted", 0, "queued")
    assert (started.status, started.resumes, started.state) == ("accepted", 1, "resumed")
    journal.mark_started("started")  # the resumed run begins again: accepted → running
    again = journal.get("started")
    assert again is not None and (again.status, again.state) == ("running", "resumed")
    journal.finish("started", "ok")
    assert journal.requeue("started") == journal.get("started")  # a finished run is not requeued
    assert journal.get("started").status == "ok"  # type: ignore[union-attr]


def test_mark_started_records_the_runs_folded_in(journal: RunJournal) -> None:
    for rid in ("host", "steered", "late"):
        journal.accept(rid, "chat", {})
    journal.finish("late", "aborted")
    journal.mark_started("host", ["steered", "late"])
    rows = {rid: journal.get(rid) for rid in ("host", "steered", "late")}
    assert {rid: (r.status, r.joined_to) for rid, r in rows.items() if r} == {
        "host": ("running", None),
        "steered": ("running", "host"),
        "late": ("aborted", None),  # a finished run is not revived
    }
    journal.mark_started("host", ["other"])  # the host already runs: nothing changes for it
    assert journal.get("host") == rows["host"]


def test_requeue_of_a_follower_keeps_it_with_its_host(journal: RunJournal) -> None:
    journal.accept("host", "hook", {})
    journal.accept("steered", "hook", {})
    journal.mark_started("host", ["steered"])
    follower = journal.requeue("steered", follower=True)
    assert follower is not None
    assert (follower.status, follower.joined_to, follower.resumes, follower.state) == ("running", "host", 1, "resumed")
    alone = journal.requeue("steered")  # its message never reached the host: a run of its own again
    assert alone is not None and (alone.status, alone.joined_to, alone.state) == ("accepted", None, "resumed")


def test_request_and_resumes_survive_reopen_and_old_files_gain_the_columns(db_path: Path) -> None:
    import sqlite3

    db_path.parent.mkdir(parents=True)
    old = sqlite3.connect(db_path)  # the first release's table: no request, no resumes
    old.executescript(
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, session_key TEXT, agent_id TEXT,"
        " lane TEXT, params TEXT NOT NULL, status TEXT NOT NULL, accepted_at INTEGER NOT NULL, started_at INTEGER,"
        " ended_at INTEGER, result TEXT, error TEXT);"
        "INSERT INTO runs VALUES ('legacy','hook',NULL,NULL,NULL,'{}','accepted',1,NULL,NULL,NULL,NULL);"
    )
    old.commit()
    old.close()
    first = RunJournal(db_path)
    legacy = first.get("legacy")
    assert legacy is not None and (legacy.request, legacy.resumes) == (None, 0)
    first.accept("r1", "agent", {}, request={"runId": "r1", "message": "hi"})
    first.mark_started("r1")
    first.requeue("r1")
    first.close()
    second = RunJournal(db_path)
    try:
        rec = second.get("r1")
        assert rec is not None
        assert (rec.request, rec.resumes, rec.status) == ({"runId": "r1", "message": "hi"}, 1, "accepted")
    finally:
        second.close()


def test_records_survive_restart(db_path: Path) -> None:
    first = RunJournal(db_path)
    first.accept("r1", "agent", {"message": "hi"}, session_key="agent:main:main")
    first.accept("r2", "agent", {})
    first.mark_started("r2")
    first.accept("r3", "agent", {})
    first.finish("r3", "timeout")
    first.close()

    second = RunJournal(db_path)
    try:
        again, created = second.accept("r1", "agent", {"message": "retry"})
        assert created is False
        assert again.params == {"message": "hi"}
        assert [(r.run_id, r.status) for r in second.unfinished()] == [("r1", "accepted"), ("r2", "running")]
        assert second.get("r3").status == "timeout"  # type: ignore[union-attr]
    finally:
        second.close()


def test_prune_removes_only_old_terminal_runs(journal: RunJournal, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = {"now": 1_000_000}
    monkeypatch.setattr(journal_mod, "_now_ms", lambda: clock["now"])
    journal.accept("old-ok", "agent", {})
    journal.finish("old-ok", "ok")
    journal.accept("old-int", "agent", {})
    journal.finish("old-int", "interrupted")
    journal.accept("old-running", "agent", {})
    journal.mark_started("old-running")
    journal.accept("old-accepted", "agent", {})
    clock["now"] += 10_000
    journal.accept("new-ok", "agent", {})
    journal.finish("new-ok", "ok")
    clock["now"] += 1_000

    assert journal.prune(older_than_ms=5_000) == 2
    remaining = {rid for rid in ("old-ok", "old-int", "old-running", "old-accepted", "new-ok") if journal.get(rid)}
    assert remaining == {"old-running", "old-accepted", "new-ok"}
    assert journal.prune(older_than_ms=5_000) == 0
    assert journal.prune(older_than_ms=0) == 1
    assert journal.get("new-ok") is None


def test_a_read_sees_every_commit_before_it_and_never_waits_for_a_writer(journal: RunJournal) -> None:
    """get() reads through its own connection: each read sees what was committed before it (no
    read snapshot is left open between reads), also while a writer holds its transaction open."""
    journal.accept("r1", "agent", {})
    assert journal.get("r1").status == "accepted"  # type: ignore[union-attr]
    journal.mark_started("r1")
    assert journal.get("r1").status == "running"  # type: ignore[union-attr]
    journal.finish("r1", "ok", result={"text": "done"})
    assert journal.get("r1").status == "ok"  # type: ignore[union-attr]
    journal.accept("r2", "agent", {})
    inside, release = threading.Event(), threading.Event()

    def slow(db: Any) -> None:  # a writer mid-transaction, its change not committed yet
        db.execute("UPDATE runs SET status='running' WHERE run_id='r2'")
        inside.set()
        release.wait(10)

    writer = threading.Thread(target=lambda: journal._writer.run(slow))
    writer.start()
    assert inside.wait(10)
    started = time.monotonic()
    seen = journal.get("r2")
    assert time.monotonic() - started < 1.0
    release.set()
    writer.join(10)
    assert seen is not None and seen.status == "accepted"
    assert journal.get("r2").status == "running"  # type: ignore[union-attr]


def test_the_record_an_accept_returns_is_the_one_stored(journal: RunJournal) -> None:
    request = {"runId": "r1", "sessionKey": "agent:main:s", "message": "hi", "images": None}
    items = [1, 2]
    params: dict[str, Any] = {"message": "hi", "nested": {"a": items}}
    record, created = journal.accept(
        "r1", "agent", params, session_key="agent:main:s", agent_id="main", request=request
    )
    assert created and record == journal.get("r1")
    items.append(3)  # the caller's objects are not the record's
    assert record.params == {"message": "hi", "nested": {"a": [1, 2]}}
    again, created = journal.accept("r1", "agent", {"other": 1})
    assert not created and again == record
