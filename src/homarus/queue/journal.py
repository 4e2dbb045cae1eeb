"""Durable record of accepted work (SQLite in WAL mode, ``$STATE/runs.sqlite``).

A run is written here, fsynced, *before* the gateway answers ``accepted``; so a crash or restart
can never lose it. On start, every run still ``accepted`` or ``running`` from the previous process
is marked ``interrupted`` (with the time and reason), which ``agent.wait`` and ``sessions.list``
report, and which callers may resume. Finished runs older than the retention are pruned.

The journal also makes idempotency keys survive restarts: a second ``accept`` with a known run id
returns the stored record instead of creating another run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homarus.fs import ensure_private_dir

__all__ = ["RunJournal", "RunRecord"]

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
    error       TEXT
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE INDEX IF NOT EXISTS runs_session ON runs(session_key, accepted_at);
"""

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

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


def _now_ms() -> int:
    return int(time.time() * 1000)


class RunJournal:
    """Thread-safe; each call is one short transaction."""

    def __init__(self, path: Path) -> None:
        ensure_private_dir(path.parent)
        self.path = path
        self._lock = threading.Lock()
        # create it 0600 first: SQLite gives its -wal and -shm files the database file's mode
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: the WAL is fsynced at every commit, so an acknowledged run survives power loss.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def accept(
        self,
        run_id: str,
        kind: str,
        params: dict[str, Any],
        *,
        session_key: str | None = None,
        agent_id: str | None = None,
        lane: str | None = None,
    ) -> tuple[RunRecord, bool]:
        """Record a run as accepted; returns (record, created). A known run id is not re-created."""
        with self._lock:
            cur = self._db.execute(
                "INSERT OR IGNORE INTO runs(run_id, kind, session_key, agent_id, lane, params, status, accepted_at)"
                " VALUES (?, ?, ?, ?, ?, ?, 'accepted', ?)",
                (run_id, kind, session_key, agent_id, lane, json.dumps(params), _now_ms()),
            )
            created = cur.rowcount == 1
        record = self.get(run_id)
        assert record is not None
        return record, created

    def mark_started(self, run_id: str) -> None:
        self._set(
            run_id,
            "UPDATE runs SET status='running', started_at=? WHERE run_id=? AND status IN ('accepted','interrupted')",
            (_now_ms(), run_id),
        )

    def finish(self, run_id: str, status: str, *, result: Any = None, error: Any = None) -> None:
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        self._set(
            run_id,
            "UPDATE runs SET status=?, ended_at=?, result=?, error=? WHERE run_id=?",
            (
                status,
                _now_ms(),
                json.dumps(result) if result is not None else None,
                json.dumps(error) if error is not None else None,
                run_id,
            ),
        )

    def _set(self, run_id: str, sql: str, args: tuple[Any, ...]) -> None:
        with self._lock:
            self._db.execute(sql, args)

    def get(self, run_id: str) -> RunRecord | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return _record(row) if row else None

    def recover(self, reason: str = "gateway restarted") -> list[RunRecord]:
        """Mark every run the previous process left unfinished as interrupted; return them."""
        ended = _now_ms()
        error = {"reason": reason}
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM runs WHERE status IN ('accepted','running') ORDER BY accepted_at"
            ).fetchall()
            self._db.execute(
                "UPDATE runs SET status='interrupted', ended_at=?, error=? WHERE status IN ('accepted','running')",
                (ended, json.dumps(error)),
            )
        return [dataclasses.replace(_record(r), status="interrupted", ended_at=ended, error=error) for r in rows]

    def by_session(self, session_key: str, limit: int = 20) -> list[RunRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM runs WHERE session_key=? ORDER BY accepted_at DESC LIMIT ?", (session_key, limit)
            ).fetchall()
        return [_record(r) for r in rows]

    def prune(self, older_than_ms: int) -> int:
        cutoff = _now_ms() - older_than_ms
        with self._lock:
            cur = self._db.execute(
                "DELETE FROM runs WHERE status IN ('ok','error','timeout','aborted','interrupted') AND accepted_at < ?",
                (cutoff,),
            )
        return cur.rowcount


def _record(row: tuple[Any, ...]) -> RunRecord:
    (run_id, kind, session_key, agent_id, lane, params, status, accepted_at, started_at, ended_at, result, error) = row
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
    )
