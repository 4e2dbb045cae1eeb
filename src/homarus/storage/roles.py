"""Cluster singletons: the work that must run on one gateway of a cluster at a time (the agents'
heartbeats, the chat channels' pollers and sockets) is a *role*, held by lease.

Every member wants the roles its configuration has; the heartbeat (every third of the member ttl)
renews the ones it holds and tries to take the others: a role is free when nobody holds it or its
holder let its lease expire (killed, or cut off from the database). Taking a role starts its work
here (``on_gain``); the failover after a holder dies is the member ttl plus at most one heartbeat.

A member that cannot renew stops the work itself before anyone else may take it over: a watchdog,
independent of the database calls (which may hang until their timeout), drops every role once
:data:`SELF_FENCE` of the ttl has passed since the last successful renewal, while the lease it
renewed still runs for the rest of the ttl. So even cut off from the database, a gateway never
runs a role beside its next holder. Leaving the cluster releases the roles at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from homarus.storage.database import StorageUnavailable

if TYPE_CHECKING:
    from homarus.storage.database import Database

__all__ = ["SELF_FENCE", "Roles"]

log = logging.getLogger("homarus.storage")

#: the part of the ttl after which a member that could not renew drops its roles
SELF_FENCE = 0.6

_TAKE = """INSERT INTO cluster_roles (role, member_id, expires_at)
    VALUES (%(role)s, %(me)s, now() + make_interval(secs => %(ttl)s))
    ON CONFLICT (role) DO UPDATE
        SET member_id = EXCLUDED.member_id, expires_at = EXCLUDED.expires_at,
            fence = cluster_roles.fence + (cluster_roles.member_id <> EXCLUDED.member_id)::int,
            taken_at = CASE WHEN cluster_roles.member_id = EXCLUDED.member_id
                            THEN cluster_roles.taken_at ELSE now() END
        WHERE cluster_roles.member_id = EXCLUDED.member_id OR cluster_roles.expires_at < now()
    RETURNING role"""

Hook = Callable[[], Awaitable[None]]


@dataclass(slots=True)
class _Role:
    on_gain: Hook
    on_lose: Hook
    held: bool = False
    #: the role's starts and stops, run one after the other and never on the heartbeat's time (a
    #: channel may take its 30 s to start: the heartbeat must go on renewing meanwhile)
    work: asyncio.Task[None] | None = None


class Roles:
    def __init__(self, db: Database, member_id: str, ttl_s: float) -> None:
        self.db = db
        self.member_id = member_id
        self.ttl_s = ttl_s
        self._roles: dict[str, _Role] = {}
        self._renewed_at = time.monotonic()
        self._watchdog: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._released = False  # leaving the cluster: take nothing any more

    def want(self, role: str, on_gain: Hook, on_lose: Hook) -> None:
        """Run ``on_gain`` whenever this member takes ``role``, ``on_lose`` when it lets it go."""
        self._roles[role] = _Role(on_gain, on_lose)

    def holds(self, role: str) -> bool:
        entry = self._roles.get(role)
        return entry is not None and entry.held

    @property
    def held(self) -> list[str]:
        return sorted(name for name, r in self._roles.items() if r.held)

    async def tick(self) -> None:
        """Renew the roles held, take the free ones wanted (the heartbeat calls it); raises
        StorageUnavailable when the database is away (the watchdog handles what follows)."""
        if not self._roles or self._released:
            return
        async with self._lock:
            started = time.monotonic()
            taken: list[str] = []
            async with self.db.connection() as conn:
                for name in self._roles:
                    args = {"role": name, "me": self.member_id, "ttl": self.ttl_s}
                    if await (await conn.execute(_TAKE, args)).fetchone() is not None:
                        taken.append(name)
            self._renewed_at = started  # the leases run from before the statements, not after
            for name, role in self._roles.items():
                if name in taken and not role.held:
                    role.held = True
                    log.info("cluster: this gateway now holds the %s role", name)
                    self._switch(name, role, role.on_gain, "starting")
                elif name not in taken and role.held:  # someone took it (this member was too slow)
                    self._drop(name, role, "another gateway holds it now")
        if self._watchdog is None:
            self._watchdog = asyncio.create_task(self._watch(), name="cluster-roles-watchdog")

    async def _watch(self) -> None:
        while True:
            if not self.held:
                await asyncio.sleep(self.ttl_s / 3)
                continue
            deadline = self._renewed_at + self.ttl_s * SELF_FENCE
            await asyncio.sleep(max(0.05, deadline - time.monotonic()))
            if time.monotonic() >= self._renewed_at + self.ttl_s * SELF_FENCE and self.held:
                for name, role in self._roles.items():
                    if role.held:
                        self._drop(name, role, "its lease could not be renewed")

    def _drop(self, name: str, role: _Role, why: str, *, level: int = logging.WARNING) -> None:
        role.held = False
        log.log(level, "cluster: this gateway stops the %s role: %s", name, why)
        self._switch(name, role, role.on_lose, "stopping")

    def _switch(self, name: str, role: _Role, hook: Hook, what: str) -> None:
        """Run ``hook`` after the role's previous start or stop has finished."""
        previous = role.work

        async def after() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            await _guarded(hook, f"{what} the {name} role")

        role.work = asyncio.create_task(after(), name=f"cluster-role-{name}")

    async def settled(self) -> None:
        """Return once every role's starts and stops so far have run."""
        pending = [r.work for r in self._roles.values() if r.work is not None]
        if pending:
            await asyncio.wait(pending)

    async def release(self) -> None:
        """Stop every role's work and let the others take them at once (leaving the cluster)."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
            self._watchdog = None
        self._released = True
        async with self._lock:
            held = self.held
            for name in held:
                self._drop(name, self._roles[name], "the gateway is stopping", level=logging.INFO)
            await self.settled()  # the work has stopped before the others may take it
        if held:
            with contextlib.suppress(StorageUnavailable):
                async with self.db.connection() as conn:
                    await conn.execute(
                        "DELETE FROM cluster_roles WHERE member_id = %s AND role = ANY(%s)", (self.member_id, held)
                    )

    async def holders(self) -> dict[str, Any]:
        """Who holds each role the cluster knows (for ``status``)."""
        async with self.db.connection(1.0) as conn:
            rows = await (
                await conn.execute("SELECT role, member_id, expires_at > now() FROM cluster_roles ORDER BY role")
            ).fetchall()
        return {r[0]: {"member": r[1], "live": bool(r[2])} for r in rows}


async def _guarded(hook: Hook, what: str) -> None:
    try:
        await hook()
    except Exception:  # a role's work failing to start or stop must not stop the heartbeat
        log.exception("cluster: %s failed", what)
