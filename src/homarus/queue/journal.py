"""Durable record of accepted work (SQLite in WAL mode, ``$STATE/runs.sqlite``).

A run is written here, fsynced, *before* the gateway answers ``accepted``, with the request that
can start it again; so a crash or restart can never lose it. Its life:

``accepted`` (queued) → ``running`` (it began executing: its lane slot was taken, or its message
was folded into a running run, ``joined_to``) → a terminal status (``ok``, ``error``, ``timeout``,
``aborted``, ``interrupted``).

After a restart the gateway reads :meth:`RunJournal.unfinished` and applies its entry point's
recovery rule (``usecases/recovery.py``): a run is queued again (:meth:`requeue`; a run
that had started counts one more ``resumes``) or ends ``interrupted`` (:meth:`interrupt`). Finished
runs older than the retention are pruned.

The journal also makes idempotency keys survive restarts: a second ``accept`` with a known run id
returns the stored record instead of creating another run.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict, Unpack

from homarus.fs import open_durable_sqlite
from homarus.group_commit import GroupCommitter

__all__ = ["COLUMNS", "TERMINAL", "Journal", "RunJournal", "RunRecord", "Where", "record_of"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    session_key TEXT,
    agent_id    TEXT,
    lane        TEXT,
    params      TEXT NOT NULL,
    status      TEXT NOT NULL,
    accepted_at INTEGER NOT NULL,
    started_at  INTEGER,
    ended_at    INTEGER,
    result      TEXT,
    error       TEXT,
    request     TEXT,
    resumes     INTEGER NOT NULL DEFAULT 0,
    joined_to   TEXT
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE INDEX IF NOT EXISTS runs_session ON runs(session_key, accepted_at);
"""
#: columns added after the first release: (name, definition), added when an older file lacks them
_ADDED_COLUMNS = (("request", "TEXT"), ("resumes", "INTEGER NOT NULL DEFAULT 0"), ("joined_to", "TEXT"))
#: every column, in RunRecord's order (a constant: the f-strings below interpolate nothing else)
COLUMNS = (
    "run_id, kind, session_key, agent_id, lane, params, status, accepted_at, started_at, ended_at, result, error,"
    " request, resumes, joined_to"
)

TERMINAL = frozenset({"ok", "error", "timeout", "aborted", "interrupted"})


@dataclass(frozen=True, slots=True)
class RunRecord:
    run_id: str
    kind: str
    session_key: str | None
    agent_id: str | None
    lane: str | None
    params: dict[str, Any]
    status: str
    accepted_at: int
    started_at: int | None
    ended_at: int | None
    result: Any
    error: Any
    #: the run request to submit again after a restart (``RunRequest.to_json``); None for old rows
    request: dict[str, Any] | None = None
    #: how many restarts found it started and queued it again
    resumes: int = 0
    #: the run it was folded into (its message steered into that run, or merged into its prompt)
    joined_to: str | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def state(self) -> str:
        """What ``agent.wait`` reports of a run that is not over: queued, running or resumed."""
        if self.terminal:
            return self.status
        if self.resumes:
            return "resumed"
        return "running" if self.status == "running" else "queued"


class Where(TypedDict, total=False):
    """Where an accepted run belongs (all optional)."""

    session_key: str | None
    agent_id: str | None
    lane: str | None
    request: dict[str, Any] | None


class Journal(Protocol):
    """What the gateway asks of a run journal: this module's (SQLite, one gateway) or
    ``queue/pg_journal.py`` (PostgreSQL, shared by the gateways of a cluster)."""

    def close(self) -> None: ...
    def accept(
        self, run_id: str, kind: str, params: dict[str, Any], **where: Unpack[Where]
    ) -> tuple[RunRecord, bool]: ...
    async def aaccept(
        self, run_id: str, kind: str, params: dict[str, Any], *, synced: bool = True, **where: Unpack[Where]
    ) -> tuple[RunRecord, bool]: ...
    def mark_started(self, run_id: str, joined: Sequence[str] = (), *, synced: bool = False) -> None: ...
    def finish(self, run_id: str, status: str, *, result: Any = None, error: Any = None) -> None: ...
    async def afinish(self, run_id: str, status: str, *, result: Any = None, error: Any = None) -> None: ...
    def finish_soon(
        self, run_id: str, status: str, *, result: Any = None, error: Any = None, synced: bool = True
    ) -> asyncio.Future[Any]: ...
    def get(self, run_id: str) -> RunRecord | None: ...
    def unfinished(self) -> list[RunRecord]: ...
    def requeue(self, run_id: str, *, follower: bool = False) -> RunRecord | None: ...
    def interrupt(self, run_id: str, reason: str) -> RunRecord | None: ...
    def prune(self, older_than_ms: int) -> int: ...


def _now_ms() -> int:
    return int(time.time() * 1000)


class RunJournal:
    """Thread-safe. Writes go to the database's writer thread, which commits the writes waiting at
    the same time in one transaction (``homarus.group_commit``): a call returns once its write is
    committed. Reads use a second connection with its own lock: in WAL mode a read never waits for
    a writer (nor its fsync), so the gateway looks a run up on its event loop (tens of
    microseconds) instead of sending the lookup to a worker thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        db = open_durable_sqlite(path)  # an acknowledged run survives power loss
        db.executescript(_SCHEMA)
        present = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        for name, definition in _ADDED_COLUMNS:
            if name not in present:
                db.execute(f"ALTER TABLE runs ADD COLUMN {name} {definition}")
        self._writer = GroupCommitter(db, str(path))
        self._read_lock = threading.Lock()
        self._reader = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._reader.execute("PRAGMA query_only=1")

    def close(self) -> None:
        self._writer.close()
        with self._read_lock:
            self._reader.close()

    def accept(self, run_id: str, kind: str, params: dict[str, Any], **where: Unpack[Where]) -> tuple[RunRecord, bool]:
        """Record a run as accepted; returns (record, created). A known run id is not re-created."""
        return self._accepted(run_id, self._writer.run(self._accept_op(run_id, kind, params, where)))

    async def aaccept(
        self, run_id: str, kind: str, params: dict[str, Any], *, synced: bool = True, **where: Unpack[Where]
    ) -> tuple[RunRecord, bool]:
        """:meth:`accept` from the event loop: handed to the writer directly, no worker thread.
        ``synced=False`` for a run that a restart would not run again anyway (its caller is gone)."""
        op = self._accept_op(run_id, kind, params, where)
        created = await asyncio.wrap_future(self._writer.submit(op, synced=synced))
        return self._accepted(run_id, created)

    def _accepted(self, run_id: str, created: RunRecord | None) -> tuple[RunRecord, bool]:
        if created is not None:  # as inserted: no read back
            return created, True
        record = self.get(run_id)
        assert record is not None
        return record, False

    def _accept_op(
        self, run_id: str, kind: str, params: dict[str, Any], where: Where
    ) -> Callable[[sqlite3.Connection], RunRecord | None]:
        session_key, agent_id = where.get("session_key"), where.get("agent_id")
        lane, request = where.get("lane"), where.get("request")

        def op(db: sqlite3.Connection) -> RunRecord | None:
            now, params_text = _now_ms(), json.dumps(params)
            request_text = json.dumps(request) if request is not None else None
            cur = db.execute(
                "INSERT OR IGNORE INTO runs(run_id, kind, session_key, agent_id, lane, params, status, accepted_at,"
                " request) VALUES (?, ?, ?, ?, ?, ?, 'accepted', ?, ?)",
                (run_id, kind, session_key, agent_id, lane, params_text, now, request_text),
            )
            if cur.rowcount != 1:
                return None
            # what a read of the row gives (decoded copies, not the caller's objects)
            row = (run_id, kind, session_key, agent_id, lane, params_text, "accepted", now, None, None, None, None)
            return record_of((*row, request_text, 0, None))

        return op

    def mark_started(self, run_id: str, joined: Sequence[str] = (), *, synced: bool = False) -> None:
        """``run_id`` began executing, and the ``joined`` runs with it (their messages were folded
        into it): one transaction, committed before its first step runs.

        Not fsynced by default: a crash of the process keeps it (the WAL is in the OS's cache), and
        a power cut that loses it leaves a run whose transcript shows it began, which the recovery
        takes as started (``usecases/recovery.py``); a run that left no trace there had done
        nothing anyone saw. One fsync less before every run's model call."""
        now = _now_ms()

        def op(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE runs SET status='running', started_at=? WHERE run_id=? AND status='accepted'", (now, run_id)
            )
            db.executemany(
                "UPDATE runs SET status='running', started_at=?, joined_to=? WHERE run_id=? AND status='accepted'",
                [(now, run_id, other) for other in joined],
            )

        self._writer.run(op, synced=synced)

    def finish(self, run_id: str, status: str, *, result: Any = None, error: Any = None) -> None:
        self._writer.run(self._finish_op(run_id, status, result, error))

    async def afinish(self, run_id: str, status: str, *, result: Any = None, error: Any = None) -> None:
        """:meth:`finish` from the event loop: handed to the writer directly, no worker thread."""
        await self.finish_soon(run_id, status, result=result, error=error)

    def finish_soon(
        self, run_id: str, status: str, *, result: Any = None, error: Any = None, synced: bool = True
    ) -> asyncio.Future[Any]:
        """Queue :meth:`finish` now and return what to await (on the event loop): queued just before
        another write for the same trip to the lane, the two cost one hand-over instead of two.
        ``synced=False`` for a run whose answer is in its synced transcript: a power cut that loses
        this record leaves the run ``running``, and its resume finds the answer and only records it."""
        return asyncio.wrap_future(self._writer.submit(self._finish_op(run_id, status, result, error), synced=synced))

    def _finish_op(self, run_id: str, status: str, result: Any, error: Any) -> Callable[[sqlite3.Connection], Any]:
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        args = (
            status,
            _now_ms(),
            json.dumps(result) if result is not None else None,
            json.dumps(error) if error is not None else None,
            run_id,
        )
        return lambda db: db.execute("UPDATE runs SET status=?, ended_at=?, result=?, error=? WHERE run_id=?", args)

    def _set(self, run_id: str, sql: str, args: tuple[Any, ...]) -> None:
        self._writer.run(lambda db: db.execute(sql, args))

    def get(self, run_id: str) -> RunRecord | None:
        """The run's record; does not wait for writers (safe to call on the event loop)."""
        with self._read_lock:
            # fetchall, not fetchone: a statement left unfinished keeps its read snapshot open, and
            # the next read on this connection would not see later commits
            rows = self._reader.execute(f"SELECT {COLUMNS} FROM runs WHERE run_id=?", (run_id,)).fetchall()  # noqa: S608
        return record_of(rows[0]) if rows else None

    def unfinished(self) -> list[RunRecord]:
        """The runs a previous process accepted and did not finish, in the order they were accepted."""
        with self._read_lock:
            rows = self._reader.execute(
                f"SELECT {COLUMNS} FROM runs WHERE status IN ('accepted','running') ORDER BY accepted_at, rowid"  # noqa: S608
            ).fetchall()
        return [record_of(r) for r in rows]

    def requeue(self, run_id: str, *, follower: bool = False) -> RunRecord | None:
        """Queue an unfinished run again after a restart; one that had started counts a resume.

        ``follower``: a run folded into another that goes on; it stays ``running`` with it.
        """
        if follower:
            sql = "UPDATE runs SET resumes=resumes + 1 WHERE run_id=? AND status='running'"
        else:
            sql = (
                "UPDATE runs SET resumes=resumes + (status='running'), status='accepted', joined_to=NULL"
                " WHERE run_id=? AND status IN ('accepted','running')"
            )
        self._set(run_id, sql, (run_id,))
        return self.get(run_id)

    def interrupt(self, run_id: str, reason: str) -> RunRecord | None:
        """End an unfinished run as ``interrupted`` (its entry point's rule does not resume it)."""
        self._set(
            run_id,
            "UPDATE runs SET status='interrupted', ended_at=?, error=? WHERE run_id=?"
            " AND status IN ('accepted','running')",
            (_now_ms(), json.dumps({"reason": reason}), run_id),
        )
        return self.get(run_id)

    def prune(self, older_than_ms: int) -> int:
        cutoff = _now_ms() - older_than_ms

        def op(db: sqlite3.Connection) -> int:
            return db.execute(
                "DELETE FROM runs WHERE status IN ('ok','error','timeout','aborted','interrupted') AND accepted_at < ?",
                (cutoff,),
            ).rowcount

        return self._writer.run(op)


def record_of(row: tuple[Any, ...]) -> RunRecord:
    """A row of :data:`COLUMNS` as a record."""
    (
        run_id,
        kind,
        session_key,
        agent_id,
        lane,
        params,
        status,
        accepted_at,
        started_at,
        ended_at,
        result,
        error,
        request,
        resumes,
        joined_to,
    ) = row
    return RunRecord(
        run_id,
        kind,
        session_key,
        agent_id,
        lane,
        json.loads(params),
        status,
        accepted_at,
        started_at,
        ended_at,
        json.loads(result) if result else None,
        json.loads(error) if error else None,
        json.loads(request) if request else None,
        int(resumes or 0),
        joined_to,
    )
