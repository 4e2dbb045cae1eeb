"""One agent's session index: ``sessions.sqlite``, session key → entry, one row per session.

Why SQLite and not the original's ``sessions.json``: a whole-file store is rewritten (read, parse,
serialize, fsync, rename) on every update, so a turn costs more the more sessions exist, and every
writer waits on one file lock (the original's users report that lock held for minutes). Here an
update reads and writes one row: its cost does not grow with the number of sessions.

Guarantees, the same as the file store's: an update is a read-modify-write of one key inside
``BEGIN IMMEDIATE`` (writers in threads and processes never lose each other's changes); it is
durable when :meth:`update` returns (WAL, ``synchronous=FULL``: the WAL is fsynced at commit, so a
``kill -9`` or a power cut after the return loses nothing); a failing change or a failing write
leaves the stored state as it was. Writes go through one writer thread that commits the updates
waiting at the same time together (``homarus.group_commit``); reads use their own connection. A
row count kept by triggers makes ``maxEntries`` maintenance O(1) per write; stale rows are found
through the ``updated_at`` index.

An existing ``sessions.json`` (an older Homarus) is imported the first time the store is opened,
in one transaction (a newer row in the database wins), then renamed ``sessions.json.imported.<ms>``
so the import never runs twice; a crash between the two only makes the import run again, which
changes nothing. Transcripts stay append-only JSONL files next to it: an append is O(1) already,
the original's tools and ``homarus migrate`` read them as files, and a session's history is read
whole, in order, which a file does best.

Methods block (SQLite, fsync): call them from a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import ValidationError

from homarus.errors import RuntimeFailure
from homarus.fs import open_durable_sqlite
from homarus.group_commit import Database
from homarus.sessions.entry import SessionEntry

__all__ = [
    "DB_NAME",
    "LEGACY_NAME",
    "Change",
    "Entries",
    "Maintenance",
    "SessionStore",
    "StoreCorrupt",
    "ValidatedReads",
    "checked_entry",
    "decode_entry",
    "encode_entry",
    "updated_at_of",
    "valid_entries",
]

log = logging.getLogger("homarus.sessions")

DB_NAME = "sessions.sqlite"
LEGACY_NAME = "sessions.json"
Entries = dict[str, dict[str, Any]]
Change = Callable[[dict[str, Any] | None], dict[str, Any] | None]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    key TEXT NOT NULL UNIQUE,
    updated_at INTEGER,
    entry BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_updated_at ON sessions(updated_at);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('count', 0);
CREATE TRIGGER IF NOT EXISTS sessions_counted_in AFTER INSERT ON sessions
    BEGIN UPDATE meta SET value = value + 1 WHERE name = 'count'; END;
CREATE TRIGGER IF NOT EXISTS sessions_counted_out AFTER DELETE ON sessions
    BEGIN UPDATE meta SET value = value - 1 WHERE name = 'count'; END;
PRAGMA user_version = 1;
"""
_UPSERT = (
    "INSERT INTO sessions (key, updated_at, entry) VALUES (?, ?, ?) "
    "ON CONFLICT(key) DO UPDATE SET updated_at = excluded.updated_at, entry = excluded.entry"
)
# main sessions are never pruned (substr, not LIKE: LIKE ignores case); stale rows are found
# through the updated_at index, so these cost what they find, not the size of the store
_ANY_STALE = "SELECT 1 FROM sessions WHERE updated_at < ? AND substr(key, -5) != ':main' LIMIT 1"
_COUNT_STALE = "SELECT count(*) FROM sessions WHERE updated_at < ? AND substr(key, -5) != ':main'"
_PRUNE_STALE = "DELETE FROM sessions WHERE updated_at < ? AND substr(key, -5) != ':main'"
_PRUNE_OLDEST = (
    "DELETE FROM sessions WHERE rowid IN (SELECT rowid FROM sessions WHERE substr(key, -5) != ':main' "
    "ORDER BY updated_at LIMIT ?)"
)
_COUNT = "SELECT value FROM meta WHERE name = 'count'"
_RECENT = "SELECT key, updated_at FROM sessions ORDER BY updated_at DESC LIMIT ?"


class StoreCorrupt(RuntimeFailure):
    """The session index exists but cannot be read; nothing is written over it."""


@dataclass(frozen=True, slots=True)
class Maintenance:
    mode: Literal["warn", "enforce"] = "warn"
    prune_after_ms: int = 30 * 24 * 3600 * 1000
    max_entries: int = 500


class ValidatedReads:
    """The typed reads of an index, from its raw ones (``get_raw``, ``read``)."""

    @property
    def location(self) -> str:
        raise NotImplementedError

    def read(self) -> Entries:
        raise NotImplementedError

    def get_raw(self, key: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def get(self, key: str) -> SessionEntry | None:
        raw = self.get_raw(key)
        return checked_entry(key, raw) if raw is not None else None

    def entries(self) -> dict[str, SessionEntry]:
        return valid_entries(self.read(), self.location)


class SessionStore(ValidatedReads):
    """The session index of one agent's sessions directory (``<dir>/sessions.sqlite``)."""

    def __init__(self, directory: Path, *, maintenance: Maintenance | None = None) -> None:
        self.directory = directory
        self.path = directory / DB_NAME
        self.legacy_path = directory / LEGACY_NAME
        self.maintenance = maintenance or Maintenance()
        self._db = Database(
            self.path, self._open, StoreCorrupt, lambda: self.path.exists() or self.legacy_path.exists()
        )
        self._reading = self._db.reading
        self._writing = self._db.writing
        self._warned_at = -1e9

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def is_open(self) -> bool:
        return self._db.is_open

    # -- reads --------------------------------------------------------------------------------------
    def read(self) -> Entries:
        """Every entry as its raw JSON object (O(sessions): listings, exports, doctor)."""
        with self._reading() as db:
            if db is None:
                return {}
            return {key: decode_entry(key, raw) for key, raw in self._query(db, "SELECT key, entry FROM sessions")}

    def get_raw(self, key: str) -> dict[str, Any] | None:
        with self._reading() as db:
            return None if db is None else self._row(db, key)

    def count(self) -> int:
        with self._reading() as db:
            return 0 if db is None else int(self._query(db, _COUNT)[0][0])

    def recent(self, limit: int) -> list[tuple[str, int | None]]:
        """(key, updatedAt) of the ``limit`` most recently updated sessions, newest first (through
        the updated_at index: what it finds, not the size of the store)."""
        with self._reading() as db:
            if db is None:
                return []
            return [(str(k), None if u is None else int(u)) for k, u in self._query(db, _RECENT, (limit,))]

    def glance(self, limit: int) -> tuple[int, list[tuple[str, int | None]]]:
        """:meth:`count` and :meth:`recent`: two indexed reads of a local file, fine on the loop."""
        return self.count(), self.recent(limit)

    # -- writes -------------------------------------------------------------------------------------
    def update(self, key: str, change: Change, *, synced: bool = True) -> dict[str, Any] | None:
        """Replace the entry of ``key`` with ``change(current)`` (None: remove it), durably.

        ``change`` gets a private copy of the stored entry (None when there is none) and runs inside
        the write transaction; if it raises, nothing is written. Returns what is stored afterwards,
        once it is committed (with the other writes waiting at the same time: group commit).
        ``synced=False``: durable against a crash of the process at once, against a power cut from
        the store's next synced commit on (``group_commit``), for changes a power cut may lose.
        """
        return self._writing().run(self._update_op(key, change), synced=synced)

    async def aupdate(self, key: str, change: Change, *, synced: bool = True) -> dict[str, Any] | None:
        """:meth:`update` from the event loop: handed to the writer directly, no worker thread
        (the first use of a store opens it, file work: that one goes through a worker thread)."""
        if not self._db.is_open:
            return await asyncio.to_thread(functools.partial(self.update, key, change, synced=synced))
        return await asyncio.wrap_future(self._writing().submit(self._update_op(key, change), synced=synced))

    def _update_op(self, key: str, change: Change) -> Callable[[sqlite3.Connection], dict[str, Any] | None]:
        def op(db: sqlite3.Connection) -> dict[str, Any] | None:
            current = self._row(db, key)
            before = encode_entry(current) if current is not None else None
            after = change(None if current is None else orjson.loads(before or b"{}"))
            encoded = encode_entry(after) if after is not None else None
            if encoded == before:
                return after
            if after is None:
                db.execute("DELETE FROM sessions WHERE key = ?", (key,))
            else:
                db.execute(_UPSERT, (key, updated_at_of(after), encoded))
            self._maintain(db)
            return after

        return op

    def add_missing(self, entries: Entries) -> list[str]:
        """Insert the entries whose key is not stored yet (one transaction); returns the keys added."""

        def op(db: sqlite3.Connection) -> list[str]:
            added = []
            for key, value in entries.items():
                cur = db.execute(
                    "INSERT INTO sessions (key, updated_at, entry) VALUES (?, ?, ?) ON CONFLICT(key) DO NOTHING",
                    (key, updated_at_of(value), encode_entry(value)),
                )
                if cur.rowcount:
                    added.append(key)
            self._maintain(db)
            return added

        return self._writing().run(op)

    def close(self) -> None:
        self._db.close()

    def _open(self) -> sqlite3.Connection:
        legacy = _read_legacy(self.legacy_path)  # a broken legacy store stops here, before any write
        db: sqlite3.Connection | None = None
        try:
            db = open_durable_sqlite(self.path)
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            raise StoreCorrupt(f"{self.path} is not a readable session database ({exc}); fix or move it away") from None
        if legacy is not None:
            try:
                self._import(db, legacy)
            except BaseException:
                db.close()
                raise
        return db

    def _import(self, db: sqlite3.Connection, legacy: Entries) -> None:
        with _transaction(db, self.path):
            for key, value in legacy.items():
                db.execute(
                    _UPSERT + " WHERE sessions.updated_at IS NULL OR excluded.updated_at > sessions.updated_at",
                    (key, updated_at_of(value), encode_entry(value)),
                )
        target = self.legacy_path.with_name(f"{LEGACY_NAME}.imported.{int(time.time() * 1000)}")
        with contextlib.suppress(FileNotFoundError):  # another process imported it at the same time
            os.replace(self.legacy_path, target)
        log.info("session store %s: imported %d session(s) from %s", self.path, len(legacy), target.name)

    def _row(self, db: sqlite3.Connection, key: str) -> dict[str, Any] | None:
        rows = self._query(db, "SELECT entry FROM sessions WHERE key = ?", (key,))
        return decode_entry(key, rows[0][0]) if rows else None

    def _query(self, db: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreCorrupt(f"{self.path} cannot be read ({exc}); fix or move it away") from None

    # -- maintenance --------------------------------------------------------------------------------
    def _maintain(self, db: sqlite3.Connection) -> None:
        """Keep the store inside pruneAfter/maxEntries; O(1) unless there is something to prune."""
        m = self.maintenance
        cutoff = int(time.time() * 1000) - m.prune_after_ms
        count = int(db.execute(_COUNT).fetchone()[0])
        if m.mode == "warn":
            if time.monotonic() - self._warned_at < 600:
                return  # said recently; a store over its bounds is not news on every write
            if count <= m.max_entries and db.execute(_ANY_STALE, (cutoff,)).fetchone() is None:
                return
            stale = int(db.execute(_COUNT_STALE, (cutoff,)).fetchone()[0])
            excess = max(0, count - stale - m.max_entries)
            if not stale and not excess:
                return
            self._warned_at = time.monotonic()
            log.warning(
                "session store %s: %d entries older than pruneAfter, %d over maxEntries (mode warn: kept)",
                self.path,
                stale,
                excess,
            )
            return
        db.execute(_PRUNE_STALE, (cutoff,))
        count = int(db.execute(_COUNT).fetchone()[0])
        if count > m.max_entries:
            db.execute(_PRUNE_OLDEST, (count - m.max_entries,))


@contextmanager
def _transaction(db: sqlite3.Connection, path: Path) -> Iterator[None]:
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.DatabaseError as exc:
        raise StoreCorrupt(f"{path} cannot be written ({exc})") from None
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _read_legacy(path: Path) -> Entries | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = orjson.loads(raw)
    except ValueError as exc:
        raise StoreCorrupt(f"{path} is not valid JSON ({exc}); fix or move it away") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise StoreCorrupt(f"{path} is not an object of session entries")
    return data


def encode_entry(entry: dict[str, Any]) -> bytes:
    return orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)


def decode_entry(key: str, raw: bytes | str) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise StoreCorrupt(f"session entry {key!r} is not a JSON object")
    return value


def valid_entries(raw: Entries, where: str) -> dict[str, SessionEntry]:
    """The entries that validate; the others are skipped, each with a warning (a listing shows
    what it can rather than failing on one bad row)."""
    out = {}
    for key, value in raw.items():
        try:
            out[key] = SessionEntry.model_validate(value)
        except ValidationError:
            log.warning("skipping invalid session entry %s in %s", key, where)
    return out


def checked_entry(key: str, raw: dict[str, Any]) -> SessionEntry:
    try:
        return SessionEntry.model_validate(raw)
    except ValidationError as exc:
        raise StoreCorrupt(f"session entry {key!r} is invalid: {exc.errors()[0]['msg']}") from None


def updated_at_of(entry: dict[str, Any]) -> int | None:
    value = entry.get("updatedAt")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
