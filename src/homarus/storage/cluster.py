"""The gateways sharing one PostgreSQL database: who is a member, seen how recently.

A gateway joins at start (connect, migrate, register its row), is seen again every third of the
member ttl, and leaves when it stops (its row removed). A gateway killed outright leaves its row
behind: it is no longer counted once its ttl has passed, and rows unseen for a day are removed by
whoever is alive. While the database is away the heartbeat keeps trying, says so once in the log
and once more when it is back; the member's ``healthy`` flag tells ``status`` meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

from homarus.storage.blocking import BlockingDatabase
from homarus.storage.database import Database, StorageUnavailable
from homarus.storage.leases import SessionLeases
from homarus.storage.migrations import migrate
from homarus.storage.notices import Notices
from homarus.storage.relay import EventRelay
from homarus.storage.roles import Roles

__all__ = ["Cluster", "Member", "live_member"]

log = logging.getLogger("homarus.storage")

#: rows of members unseen for this long are removed (a killed gateway's leftover)
FORGET_AFTER_S = 24 * 3600
#: how long ``status`` waits for a connection before it reports the database away
STATUS_WAIT_S = 1.0


def live_member(column: str) -> str:
    """SQL that is true when the member named by ``column`` is alive: seen within the member ttl
    (the statement's ``%(ttl)s`` parameter). Who owns a run, or runs a cron job, stops counting
    once this is false."""
    return (
        f"EXISTS (SELECT 1 FROM gateway_members m WHERE m.id = {column}"  # noqa: S608 - a column name of the caller
        " AND m.seen_at > now() - make_interval(secs => %(ttl)s))"
    )


@dataclass(frozen=True, slots=True)
class Member:
    id: str
    host: str
    pid: int
    port: int | None
    version: str
    started_at_ms: int
    seen_at_ms: int
    alive: bool
    #: how long ago, by the database's clock, the member was last seen (its heartbeat's lag)
    seen_ago_ms: int = 0

    def to_json(self, own_id: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "host": self.host,
            "pid": self.pid,
            "port": self.port,
            "version": self.version,
            "startedAtMs": self.started_at_ms,
            "seenAtMs": self.seen_at_ms,
            "seenAgoMs": self.seen_ago_ms,
            "alive": self.alive,
            "self": self.id == own_id,
        }


@dataclass(slots=True)
class Cluster:
    db: Database
    member_id: str
    ttl_s: float
    schema_version: int
    version: str
    #: the same database for code in worker threads (sessions, transcripts); connects on first use
    blocking: BlockingDatabase
    #: the session leases this member holds (renewed by the heartbeat)
    leases: SessionLeases
    #: LISTEN/NOTIFY between the members (subscribe, then ``notices.start()``)
    notices: Notices
    #: the singleton roles (heartbeats, channels) this member wants, and holds when it can
    roles: Roles
    #: the run events between the members (``relay.receive``, then ``start``)
    relay: EventRelay
    port: int | None = None
    healthy: bool = True
    _beat: asyncio.Task[None] | None = field(default=None, repr=False)

    @classmethod
    async def join(
        cls,
        url: str,
        *,
        version: str,
        ttl_s: float = 15.0,
        pool_min: int = 1,
        pool_max: int = 10,
        timeout_s: float = 5.0,
        statement_timeout_ms: int = 30_000,
    ) -> Cluster:
        """Connect, bring the schema up to date, register; raises StorageUnavailable or SchemaTooNew."""
        db = await Database.open(
            url, min_size=pool_min, max_size=pool_max, timeout_s=timeout_s, statement_timeout_ms=statement_timeout_ms
        )
        try:
            schema, applied = await migrate(db)
            if applied:
                log.info("storage: schema of %s migrated to version %d (applied %s)", db.where, schema, applied)
            member = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            blocking = BlockingDatabase(
                url, max_size=pool_max, timeout_s=timeout_s, statement_timeout_ms=statement_timeout_ms
            )
            leases, notices, roles = SessionLeases(db, member, ttl_s), Notices(db, member), Roles(db, member, ttl_s)
            relay = EventRelay(db, notices)
            cluster = cls(db, member, ttl_s, schema, version, blocking, leases, notices, roles, relay)
            await cluster._register()
        except BaseException:
            await db.close()
            raise
        cluster._beat = asyncio.create_task(cluster._heartbeat(), name="cluster-heartbeat")
        return cluster

    async def _register(self) -> None:
        async with self.db.connection() as conn:
            await conn.execute(
                """INSERT INTO gateway_members (id, host, pid, port, version) VALUES (%s, %s, %s, %s, %s)
                   ON CONFLICT (id) DO UPDATE SET seen_at = now(), port = EXCLUDED.port""",
                (self.member_id, socket.gethostname(), os.getpid(), self.port, self.version),
            )

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            try:
                await self.beat()
            except StorageUnavailable as exc:
                if self.healthy:
                    log.warning("storage: %s; retrying every %.0f s", exc.message, self.ttl_s / 3)
                self.healthy = False
                self.blocking.away = True
            except Exception:  # a bug in a heartbeat must not end the heartbeats
                log.exception("storage: heartbeat failed")

    async def beat(self) -> None:
        """Be seen now (registering again if someone removed the row); forget long-dead members."""
        async with self.db.connection() as conn:
            found = await conn.execute(
                "UPDATE gateway_members SET seen_at = now(), port = %s WHERE id = %s", (self.port, self.member_id)
            )
            if found.rowcount == 0:
                await self._register()
            await conn.execute(
                "DELETE FROM gateway_members WHERE seen_at < now() - make_interval(secs => %s)", (FORGET_AFTER_S,)
            )
        await self.leases.renew()
        await self.roles.tick()
        self.blocking.away = False
        if not self.healthy:
            log.warning("storage: PostgreSQL at %s is back", self.db.where)
        self.healthy = True

    def start_messaging(self) -> None:
        """Start listening and relaying, once every subscriber has subscribed."""
        self.notices.start()
        self.relay.start()

    async def listening(self, port: int) -> None:
        """The gateway's port, once bound (shown to the other members)."""
        self.port = port
        with contextlib.suppress(StorageUnavailable):
            await self.beat()

    async def members(self, timeout_s: float | None = None) -> list[Member]:
        async with self.db.connection(timeout_s) as conn:
            cur = await conn.execute(
                """SELECT id, host, pid, port, version,
                          (extract(epoch FROM started_at) * 1000)::bigint,
                          (extract(epoch FROM seen_at) * 1000)::bigint,
                          seen_at > now() - make_interval(secs => %s),
                          (extract(epoch FROM now() - seen_at) * 1000)::bigint
                   FROM gateway_members ORDER BY started_at, id""",
                (self.ttl_s,),
            )
            rows = await cur.fetchall()
        return [Member(r[0], r[1], r[2], r[3], r[4], r[5], r[6], bool(r[7]), max(0, int(r[8]))) for r in rows]

    async def status(self) -> dict[str, Any]:
        """What ``status`` shows of the cluster; the members only while the database answers."""
        out: dict[str, Any] = {
            "backend": "postgres",
            "database": self.db.where,
            "schemaVersion": self.schema_version,
            "member": self.member_id,
            "healthy": self.healthy,
        }
        try:
            members = await self.members(STATUS_WAIT_S)  # status answers at once, the database or not
        except StorageUnavailable as exc:
            out["healthy"] = False
            out["error"] = exc.message
            return out
        out["members"] = [m.to_json(self.member_id) for m in members]
        out["alive"] = sum(1 for m in members if m.alive)
        with contextlib.suppress(StorageUnavailable):
            out["roles"] = await self.roles.holders()
        out["heldRoles"] = self.roles.held
        out["relay"] = {"queued": self.relay.queued, "dropped": self.relay.dropped}
        return out

    async def leave(self) -> None:
        """Stop being seen, remove the row (best effort: a database that is away forgets it later)."""
        await self.relay.stop()
        await self.notices.stop()
        if self._beat is not None:
            self._beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beat
        with contextlib.suppress(StorageUnavailable, TimeoutError):
            async with asyncio.timeout(self.ttl_s):
                async with self.db.connection() as conn:
                    await conn.execute("DELETE FROM session_leases WHERE member_id = %s", (self.member_id,))
                    await conn.execute("DELETE FROM gateway_members WHERE id = %s", (self.member_id,))
        await asyncio.to_thread(self.blocking.close)
        await self.db.close()
