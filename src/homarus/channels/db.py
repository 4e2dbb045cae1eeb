"""``$STATE/channels.sqlite``: the channel layer's durable state, one file, one writer lock.

Tables: ``inbound`` (every message a platform handed over, before the platform hears it was
received), ``cursors`` (long-poll offsets, committed with the messages they cover), ``outbox``
(every reply piece, recorded before it is sent), ``pairing_requests`` and ``pairing_allow``.

WAL mode; ``synchronous=FULL`` so what was acknowledged to a platform survives a power cut; the
file is created 0600 (it gates who may talk to the agent). Thread-safe: callers run it in a
worker thread and every call is one short transaction.

:class:`ChannelStore` is what the inbox, outbox and pairing use of it, so the same tables can live
in a cluster's PostgreSQL (``channels/pg_db.py``): their SQL keeps to what both engines speak
(``?`` parameters, ``ON CONFLICT``, ``RETURNING``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from homarus.storage.statements import Rows, SqliteStatements, Tx

__all__ = ["ChannelDb", "ChannelStore", "Rows", "Tx"]


class ChannelStore(Protocol):
    """The channel tables, wherever they are (this file, or a cluster's PostgreSQL)."""

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...
    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> int: ...
    def execute_unsynced(self, sql: str, args: tuple[Any, ...] = ()) -> int: ...
    def transaction(self) -> AbstractContextManager[Tx]: ...
    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS inbound (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    channel       TEXT NOT NULL,
    account       TEXT NOT NULL,
    chat          TEXT NOT NULL,
    message_id    TEXT NOT NULL,
    conversation  TEXT NOT NULL,
    sender        TEXT NOT NULL,
    payload       TEXT NOT NULL,
    status        TEXT NOT NULL,
    reason        TEXT,
    run_id        TEXT,
    received_at   INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (channel, account, chat, message_id)
);
CREATE INDEX IF NOT EXISTS inbound_status ON inbound(status, id);
CREATE INDEX IF NOT EXISTS inbound_run ON inbound(run_id);
CREATE INDEX IF NOT EXISTS inbound_conversation ON inbound(conversation, status, id);
CREATE TABLE IF NOT EXISTS cursors (
    channel TEXT NOT NULL,
    account TEXT NOT NULL,
    name    TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (channel, account, name)
);
CREATE TABLE IF NOT EXISTS outbox (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    key           TEXT NOT NULL UNIQUE,
    conversation  TEXT NOT NULL,
    payload       TEXT NOT NULL,
    status        TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_at       INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    platform_id   TEXT,
    run_id        TEXT,
    session_key   TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_status ON outbox(status, next_at, id);
CREATE INDEX IF NOT EXISTS outbox_run ON outbox(run_id);
CREATE TABLE IF NOT EXISTS pairing_requests (
    channel     TEXT NOT NULL,
    account     TEXT NOT NULL,
    sender      TEXT NOT NULL,
    code        TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    meta        TEXT NOT NULL,
    PRIMARY KEY (channel, account, sender)
);
CREATE TABLE IF NOT EXISTS pairing_allow (
    channel      TEXT NOT NULL,
    account      TEXT NOT NULL,
    sender       TEXT NOT NULL,
    approved_at  INTEGER NOT NULL,
    approved_by  TEXT,
    meta         TEXT NOT NULL,
    PRIMARY KEY (channel, account, sender)
);
"""


class ChannelDb(SqliteStatements):
    def __init__(self, path: Path) -> None:
        super().__init__(path, _SCHEMA)

    def execute_unsynced(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        """:meth:`execute` without waiting for the disk: the change survives a crash of this process
        as soon as this returns (it is in the OS's cache), and a power cut from the next ordinary
        commit on (its fsync covers the WAL frames before it). For a record whose commit must be
        followed at once by an action outside, where an fsync in between would widen the gap."""
        with self._lock:
            self._db.execute("PRAGMA synchronous=NORMAL")
            try:
                return self._db.execute(sql, args).rowcount
            finally:
                self._db.execute("PRAGMA synchronous=FULL")
