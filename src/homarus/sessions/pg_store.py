"""One agent's session index in PostgreSQL (``storage.backend: postgres``): the rows of the
``sessions`` table whose ``agent_id`` is the agent's.

The same contract as :class:`~homarus.sessions.store.SessionStore`, for every gateway sharing the
database at once: an update is a read-modify-write of one key inside a transaction that first takes
a transaction-scoped advisory lock on (agent, key), so two gateways creating or changing the same
session never lose each other's change (a row lock alone would not cover a key that does not
exist yet); a failing change writes nothing; ``synced=False`` commits with
``synchronous_commit = off`` (durable against a crash of a gateway at once, against one of the
database's host from its next synced commit, as the embedded store's group commit). Maintenance
(``pruneAfter``/``maxEntries``) runs in a writing transaction, as there, but at most every
:data:`MAINTAIN_EVERY_S` per gateway: its probe is a round trip, not a local read.

Methods block (a network round trip): call them from a worker thread; :attr:`is_open` is False,
so the session manager never reads this index on the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Any, LiteralString

from homarus.errors import HomarusError
from homarus.sessions.store import (
    Change,
    Entries,
    Maintenance,
    ValidatedReads,
    decode_entry,
    encode_entry,
    updated_at_of,
)

if TYPE_CHECKING:
    from psycopg import Connection

    from homarus.storage.blocking import BlockingDatabase

__all__ = ["GLANCE_TTL_S", "MAINTAIN_EVERY_S", "PgSessionStore"]

#: how old the figures ``health`` shows of a PostgreSQL session index may be
GLANCE_TTL_S = 2.0
#: maintenance (pruneAfter/maxEntries) looks at most this often per index and gateway
MAINTAIN_EVERY_S = 10.0

log = logging.getLogger("homarus.sessions")

# the advisory lock namespace of session keys ("sess"); the second half is a hash of agent and key
_LOCK_CLASS = 0x73657373
# main sessions are never pruned (right(key, 5) <> ':main'); both probes walk (agent_id, updated_at)
_PROBE = """SELECT EXISTS (SELECT 1 FROM sessions WHERE agent_id = %(a)s OFFSET %(max)s),
    EXISTS (SELECT 1 FROM sessions WHERE agent_id = %(a)s AND updated_at < %(cut)s AND right(key, 5) <> ':main')"""
_COUNTS = """SELECT count(*), count(*) FILTER (WHERE updated_at < %(cut)s AND right(key, 5) <> ':main')
    FROM sessions WHERE agent_id = %(a)s"""
_PRUNE_STALE = "DELETE FROM sessions WHERE agent_id = %(a)s AND updated_at < %(cut)s AND right(key, 5) <> ':main'"
_PRUNE_OLDEST = """DELETE FROM sessions WHERE agent_id = %(a)s AND key IN (
    SELECT key FROM sessions WHERE agent_id = %(a)s AND right(key, 5) <> ':main'
    ORDER BY updated_at NULLS FIRST LIMIT %(n)s)"""


class PgSessionStore(ValidatedReads):
    def __init__(self, db: BlockingDatabase, agent_id: str, *, maintenance: Maintenance | None = None) -> None:
        self.db = db
        self.agent_id = agent_id
        self.maintenance = maintenance or Maintenance()
        self._warned_at = -1e9
        self._glance: tuple[int, list[tuple[str, int | None]]] = (0, [])
        self._glanced_at = -1e9
        self._glancing = False
        self._maintained_at = -1e9

    @property
    def location(self) -> str:
        """Where the index is, for listings (never the URL: it may carry the password)."""
        return f"postgresql://{self.db.where}#sessions/{self.agent_id}"

    @property
    def is_open(self) -> bool:
        return False  # every read is a round trip: never one on the event loop

    # -- reads --------------------------------------------------------------------------------------
    def read(self) -> Entries:
        rows = self._query("SELECT key, entry FROM sessions WHERE agent_id = %s", (self.agent_id,))
        return {key: decode_entry(key, raw) for key, raw in rows}

    def get_raw(self, key: str) -> dict[str, Any] | None:
        rows = self._query("SELECT entry FROM sessions WHERE agent_id = %s AND key = %s", (self.agent_id, key))
        return decode_entry(key, rows[0][0]) if rows else None

    def count(self) -> int:
        return int(self._query("SELECT count(*) FROM sessions WHERE agent_id = %s", (self.agent_id,))[0][0])

    def recent(self, limit: int) -> list[tuple[str, int | None]]:
        rows = self._query(
            "SELECT key, updated_at FROM sessions WHERE agent_id = %s ORDER BY updated_at DESC NULLS LAST LIMIT %s",
            (self.agent_id, limit),
        )
        return [(str(k), None if u is None else int(u)) for k, u in rows]

    def glance(self, limit: int) -> tuple[int, list[tuple[str, int | None]]]:
        """The count and the most recent sessions as last read (at most :data:`GLANCE_TTL_S` ago),
        read again in a worker thread when older: ``health`` is built on the event loop, which
        must not wait on the database (and may not, while it is away)."""
        now = time.monotonic()
        if now - self._glanced_at > GLANCE_TTL_S and not self._glancing:
            self._glancing = True
            try:
                _ = asyncio.get_running_loop().run_in_executor(None, self._read_glance, limit)
            except RuntimeError:  # no loop (the CLI): read it now
                self._read_glance(limit)
        return self._glance

    def _read_glance(self, limit: int) -> None:
        try:
            self._glance = (self.count(), self.recent(limit))
            self._glanced_at = time.monotonic()
        except HomarusError as exc:
            log.warning("health: %s", exc.message)
        finally:
            self._glancing = False

    # -- writes -------------------------------------------------------------------------------------
    def update(self, key: str, change: Change, *, synced: bool = True) -> dict[str, Any] | None:
        """Replace the entry of ``key`` with ``change(current)`` (None: remove it); see the module."""
        with self.db.connection() as conn, conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s)), set_config('synchronous_commit', %s, true)",
                (_LOCK_CLASS, f"{self.agent_id}/{key}", "on" if synced else "off"),
            )
            row = conn.execute(
                "SELECT entry FROM sessions WHERE agent_id = %s AND key = %s", (self.agent_id, key)
            ).fetchone()
            current = decode_entry(key, row[0]) if row is not None else None
            before = encode_entry(current) if current is not None else None
            after = change(current)
            encoded = encode_entry(after) if after is not None else None
            if encoded == before:
                return after
            if after is None:
                conn.execute("DELETE FROM sessions WHERE agent_id = %s AND key = %s", (self.agent_id, key))
            else:
                conn.execute(
                    """INSERT INTO sessions (agent_id, key, updated_at, entry) VALUES (%s, %s, %s, %s)
                       ON CONFLICT (agent_id, key)
                       DO UPDATE SET updated_at = EXCLUDED.updated_at, entry = EXCLUDED.entry""",
                    (self.agent_id, key, updated_at_of(after), encoded.decode() if encoded else ""),
                )
            self._maintain(conn)
            return after

    async def aupdate(self, key: str, change: Change, *, synced: bool = True) -> dict[str, Any] | None:
        return await asyncio.to_thread(functools.partial(self.update, key, change, synced=synced))

    def add_missing(self, entries: Entries) -> list[str]:
        """Insert the entries whose key is not stored yet (one transaction); returns the keys added."""
        added = []
        with self.db.connection() as conn, conn.transaction():
            for key, value in entries.items():
                cur = conn.execute(
                    """INSERT INTO sessions (agent_id, key, updated_at, entry) VALUES (%s, %s, %s, %s)
                       ON CONFLICT (agent_id, key) DO NOTHING""",
                    (self.agent_id, key, updated_at_of(value), encode_entry(value).decode()),
                )
                if cur.rowcount:
                    added.append(key)
            self._maintain(conn)
        return added

    def close(self) -> None:
        """Nothing to close: the pool belongs to the gateway's database."""

    def _query(self, sql: LiteralString, args: tuple[Any, ...]) -> list[Any]:
        with self.db.connection() as conn:
            return conn.execute(sql, args).fetchall()

    # -- maintenance --------------------------------------------------------------------------------
    def _maintain(self, conn: Connection[Any]) -> None:
        """Keep the index inside pruneAfter/maxEntries; one cheap probe (both through the
        (agent_id, updated_at) index, at most maxEntries rows) unless there is something to prune."""
        m = self.maintenance
        cutoff = int(time.time() * 1000) - m.prune_after_ms
        now = time.monotonic()
        if m.mode == "warn" and now - self._warned_at < 600:
            return  # said recently; a store over its bounds is not news on every write
        if now - self._maintained_at < MAINTAIN_EVERY_S:
            return  # a round trip per write would cost more than a bound overshot for seconds
        self._maintained_at = now
        args: dict[str, Any] = {"a": self.agent_id, "cut": cutoff, "max": m.max_entries}
        probe = conn.execute(_PROBE, args).fetchone()
        if probe is None or not (probe[0] or probe[1]):
            return
        if m.mode == "warn":
            row = conn.execute(_COUNTS, args).fetchone()
            count, stale = (int(row[0]), int(row[1])) if row else (0, 0)
            self._warned_at = time.monotonic()
            log.warning(
                "session store %s: %d entries older than pruneAfter, %d over maxEntries (mode warn: kept)",
                self.location,
                stale,
                max(0, count - stale - m.max_entries),
            )
            return
        conn.execute(_PRUNE_STALE, args)
        row = conn.execute("SELECT count(*) FROM sessions WHERE agent_id = %(a)s", args).fetchone()
        over = (int(row[0]) if row else 0) - m.max_entries
        if over > 0:
            conn.execute(_PRUNE_OLDEST, {**args, "n": over})
