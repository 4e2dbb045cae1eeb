"""What the model calls cost: tokens in and out, cache reads and writes, dollars, per hour, agent,
session and model, in one SQLite file (``<state>/usage/usage.sqlite``).

A run adds its model calls when it ends, one row per model it used (:meth:`UsageLedger.record`,
through the group-commit writer: a run's end does not wait for an fsync of its own). Rows are
hourly so that a report can cut days at any time zone's midnight; a row is added to, never
rewritten from scratch, so the figures of a session survive the session's reset or deletion. A
run killed before its end adds nothing: the calls of a run the crash interrupted are not counted
(the run itself is resumed or marked failed by the recovery; its calls are the only loss).

Bounded: rows older than ``retain_days`` are removed (at most once an hour, on a write), so the
file holds at most, for each hour kept, a row per session and model active in it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from homarus.errors import HomarusError
from homarus.fs import open_durable_sqlite
from homarus.group_commit import Database
from homarus.messages import Usage

__all__ = [
    "ADD",
    "COLUMNS",
    "DEFAULT_RETAIN_DAYS",
    "HOUR_MS",
    "SELECT",
    "ModelTally",
    "Row",
    "RunUsage",
    "UsageLedger",
    "UsageStore",
    "UsageStoreCorrupt",
    "add_call",
    "run_rows",
]

DEFAULT_RETAIN_DAYS = 400
HOUR_MS = 3_600_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    hour INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    channel TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    calls INTEGER NOT NULL,
    runs INTEGER NOT NULL,
    input INTEGER NOT NULL,
    output INTEGER NOT NULL,
    cache_read INTEGER NOT NULL,
    cache_write INTEGER NOT NULL,
    total_tokens INTEGER NOT NULL,
    input_cost REAL NOT NULL,
    output_cost REAL NOT NULL,
    cache_read_cost REAL NOT NULL,
    cache_write_cost REAL NOT NULL,
    total_cost REAL NOT NULL,
    missing_cost INTEGER NOT NULL,
    PRIMARY KEY (hour, agent_id, session_key, provider, model)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_by_hour ON usage(hour);
"""

ADD = """
INSERT INTO usage VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (hour, agent_id, session_key, provider, model) DO UPDATE SET
    channel = excluded.channel,
    calls = usage.calls + excluded.calls, runs = usage.runs + 1,
    input = usage.input + excluded.input, output = usage.output + excluded.output,
    cache_read = usage.cache_read + excluded.cache_read, cache_write = usage.cache_write + excluded.cache_write,
    total_tokens = usage.total_tokens + excluded.total_tokens,
    input_cost = usage.input_cost + excluded.input_cost, output_cost = usage.output_cost + excluded.output_cost,
    cache_read_cost = usage.cache_read_cost + excluded.cache_read_cost,
    cache_write_cost = usage.cache_write_cost + excluded.cache_write_cost,
    total_cost = usage.total_cost + excluded.total_cost, missing_cost = usage.missing_cost + excluded.missing_cost
"""

#: every column, in the table's order (``homarus storage migrate`` copies them)
COLUMNS = (
    "hour", "agent_id", "session_key", "channel", "provider", "model", "calls", "runs", "input", "output",
    "cache_read", "cache_write", "total_tokens", "input_cost", "output_cost", "cache_read_cost", "cache_write_cost",
    "total_cost", "missing_cost",
)  # fmt: skip
#: the columns a report reads, in the order of ``Row``
SELECT = (
    "SELECT hour, agent_id, session_key, channel, provider, model, calls, runs, input, output, cache_read, "
    "cache_write, total_tokens, input_cost, output_cost, cache_read_cost, cache_write_cost, total_cost, missing_cost "
    "FROM usage WHERE hour >= ? AND hour <= ?"
)


def ledger_path(state_dir: Path) -> Path:
    """Where a state directory's ledger lives (the gateway writes it, ``homarus usage`` reads it)."""
    return state_dir / "usage" / "usage.sqlite"


class UsageStoreCorrupt(HomarusError):
    pass


@dataclass(slots=True)
class ModelTally:
    """One model's calls within a run."""

    calls: int
    usage: Usage
    #: calls whose price is unknown (no ``cost`` for the model in the config, and tokens used)
    missing_cost: int = 0


def add_call(
    tallies: dict[tuple[str, str], ModelTally], provider: str, model: str, usage: Usage, *, priced: bool
) -> None:
    """Count one model call of a run into ``tallies`` (a run's, keyed by provider and model)."""
    tally = tallies.get((provider, model))
    if tally is None:
        tally = tallies[(provider, model)] = ModelTally(0, Usage())
    tally.calls += 1
    t, c = tally.usage, tally.usage.cost
    t.input += usage.input
    t.output += usage.output
    t.cache_read += usage.cache_read
    t.cache_write += usage.cache_write
    t.total_tokens += usage.total_tokens
    c.input += usage.cost.input
    c.output += usage.cost.output
    c.cache_read += usage.cost.cache_read
    c.cache_write += usage.cost.cache_write
    c.total += usage.cost.total
    if not priced and usage.total_tokens:
        tally.missing_cost += 1


@dataclass(frozen=True, slots=True)
class RunUsage:
    """What one run's model calls used, per (provider, model)."""

    ended_at_ms: int
    agent_id: str
    session_key: str
    channel: str
    models: Mapping[tuple[str, str], ModelTally]


@dataclass(frozen=True, slots=True)
class Row:
    hour: int
    agent_id: str
    session_key: str
    channel: str
    provider: str
    model: str
    calls: int
    runs: int
    input: int
    output: int
    cache_read: int
    cache_write: int
    total_tokens: int
    input_cost: float
    output_cost: float
    cache_read_cost: float
    cache_write_cost: float
    total_cost: float
    missing_cost: int


def run_rows(run: RunUsage) -> tuple[int, list[tuple[Any, ...]]]:
    """A run's hour and the rows its calls add (the parameters of :data:`ADD`)."""
    hour = run.ended_at_ms // HOUR_MS
    rows = []
    for (provider, model), tally in run.models.items():
        u, c = tally.usage, tally.usage.cost
        where = (hour, run.agent_id, run.session_key, run.channel, provider, model, tally.calls)
        tokens = (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens)
        rows.append((*where, *tokens, c.input, c.output, c.cache_read, c.cache_write, c.total, tally.missing_cost))
    return hour, rows


class UsageStore(Protocol):
    """The ledger wherever it is (this file, or a cluster's PostgreSQL: ``pg_ledger``); blocking."""

    def record(self, run: RunUsage) -> None: ...
    def rows(self, start_ms: int, end_ms: int, agent_id: str | None = None) -> list[Row]: ...
    def count(self) -> int: ...
    def close(self) -> None: ...


class UsageLedger:
    def __init__(self, path: Path, *, retain_days: int = DEFAULT_RETAIN_DAYS) -> None:
        self.path = path
        self.retain_days = retain_days
        self._db = Database(path, self._open, UsageStoreCorrupt)
        self._pruned_hour = -1

    # -- writing ------------------------------------------------------------------------------
    def record(self, run: RunUsage) -> None:
        """Add one finished run's calls (blocking: call it from a worker thread)."""
        if not run.models:
            return
        hour, rows = run_rows(run)
        prune_before = None
        if hour != self._pruned_hour:
            self._pruned_hour = hour
            prune_before = hour - self.retain_days * 24

        def op(db: sqlite3.Connection) -> None:
            db.executemany(ADD, rows)
            if prune_before is not None:
                db.execute("DELETE FROM usage WHERE hour < ?", (prune_before,))

        # a lost accounting row costs nothing a power cut must keep: committed with the next synced write
        self._db.writing().run(op, synced=False)

    # -- reading ------------------------------------------------------------------------------
    def rows(self, start_ms: int, end_ms: int, agent_id: str | None = None) -> list[Row]:
        """Every row of the hours that overlap ``[start_ms, end_ms]`` (of one agent, or all)."""
        sql = SELECT if agent_id is None else SELECT + " AND agent_id = ?"
        args: tuple[Any, ...] = (start_ms // HOUR_MS, end_ms // HOUR_MS)
        if agent_id is not None:
            args += (agent_id,)
        with self._db.reading() as db:
            if db is None:
                return []
            try:
                return [Row(*r) for r in db.execute(sql, args).fetchall()]
            except sqlite3.DatabaseError as exc:
                raise UsageStoreCorrupt(f"{self.path} cannot be read ({exc}); move it away") from None

    def count(self) -> int:
        with self._db.reading() as db:
            return 0 if db is None else int(db.execute("SELECT count(*) FROM usage").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def _open(self) -> sqlite3.Connection:
        try:
            db = open_durable_sqlite(self.path)
        except sqlite3.DatabaseError as exc:
            raise UsageStoreCorrupt(f"{self.path} is not a readable usage database ({exc}); move it away") from None
        try:
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise UsageStoreCorrupt(f"{self.path} is not a readable usage database ({exc}); move it away") from None
        return db
