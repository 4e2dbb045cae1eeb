"""Session leases: one session's runs execute on one gateway of the cluster at a time.

The lane queue serialises a session's runs inside a gateway; with several gateways on one database
the head of a session's lane also holds the session's lease (``session_leases``) while its run
executes. A lease is taken when it is free, already this member's, or expired; it is renewed by the
member's heartbeat (only the leases this member knows it holds, so one whose release was lost
cannot live on) and released when the run ends. A gateway that dies stops renewing: after the
member ttl another gateway takes the session over. A gateway that cannot reach the database waits
for it (its runs are accepted already; nothing is dropped) and says so once in the log.

Each take raises the lease's ``fence`` (for operators reading the table). What keeps a member that
lost a run while paused from writing it is the run's ``owner``, checked by every transcript append
(``sessions/pg_transcript.py``) and journal end (``queue/pg_journal.py``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from homarus.storage.database import StorageUnavailable

if TYPE_CHECKING:
    from homarus.storage.database import Database

__all__ = ["SessionLeases"]

log = logging.getLogger("homarus.storage")

_TAKE = """INSERT INTO session_leases (session_key, member_id, expires_at)
    VALUES (%(key)s, %(me)s, now() + make_interval(secs => %(ttl)s))
    ON CONFLICT (session_key) DO UPDATE
        SET member_id = EXCLUDED.member_id, expires_at = EXCLUDED.expires_at, fence = session_leases.fence + 1
        WHERE session_leases.member_id = EXCLUDED.member_id OR session_leases.expires_at < now()
    RETURNING fence"""
#: waiting for a lease held elsewhere: the first retry, the longest pause between retries
_FIRST_PAUSE_S = 0.02
_MAX_PAUSE_S = 0.5


class SessionLeases:
    def __init__(self, db: Database, member_id: str, ttl_s: float) -> None:
        self.db = db
        self.member_id = member_id
        self.ttl_s = ttl_s
        #: session lane name → how many of this gateway's runs hold it now (the lane admits one, but
        #: a lane's slot may be handed over before the previous holder has released)
        self.held: dict[str, int] = {}

    async def enter(self, lane: str) -> None:
        """Hold ``lane``'s lease (a ``session:<key>`` lane), waiting while another member does."""
        pause, said = _FIRST_PAUSE_S, False
        args = {"key": lane.removeprefix("session:"), "me": self.member_id, "ttl": self.ttl_s}
        while True:
            try:
                async with self.db.connection() as conn:
                    row = await (await conn.execute(_TAKE, args)).fetchone()
                if row is not None:
                    self.held[lane] = self.held.get(lane, 0) + 1
                    return
            except StorageUnavailable as exc:
                if not said:
                    log.warning("storage: %s; %s waits for the database", exc.message, lane)
                    said = True
            await asyncio.sleep(pause)
            pause = min(pause * 2, _MAX_PAUSE_S)

    async def leave(self, lane: str) -> None:
        """Let go of ``lane``'s lease (best effort: a lost release expires after the ttl)."""
        count = self.held.get(lane, 0) - 1
        if count > 0:
            self.held[lane] = count
            return
        self.held.pop(lane, None)
        try:
            async with self.db.connection() as conn:
                await conn.execute(
                    "DELETE FROM session_leases WHERE session_key = %s AND member_id = %s",
                    (lane.removeprefix("session:"), self.member_id),
                )
        except StorageUnavailable:
            pass  # it expires: nobody renews a lease this member no longer holds

    async def renew(self) -> None:
        """Extend the leases this member holds (the heartbeat calls it); raises StorageUnavailable."""
        if not self.held:
            return
        keys = [lane.removeprefix("session:") for lane in self.held]
        async with self.db.connection() as conn:
            await conn.execute(
                """UPDATE session_leases SET expires_at = now() + make_interval(secs => %s)
                   WHERE member_id = %s AND session_key = ANY(%s)""",
                (self.ttl_s, self.member_id, keys),
            )
