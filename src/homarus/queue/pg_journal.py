"""The run journal in PostgreSQL (``storage.backend: postgres``): the journal of ``journal.py``,
shared by every gateway of the cluster, each run owned by one member.

A run is accepted by the gateway that got it (``owner`` = that member), in one statement whose
primary key makes an idempotency key start one run whichever gateways it is sent to: the second
``accept`` finds the first's record. :meth:`unfinished` is how a gateway takes runs up: it claims,
in one ``UPDATE … RETURNING``, the unfinished runs whose owner is no longer a live member of the
cluster (killed, or cut off from the database for longer than the member ttl) and returns them for
the recovery rules (``usecases/recovery.py``). Two gateways claiming at once never get the same
run: the row lock makes the second ``UPDATE`` see the first's owner. Finished runs are pruned
after the retention, as in the embedded journal.

Methods block (a round trip): the gateway calls the writes from worker threads (``a*`` methods do
it for callers on the event loop); :meth:`get` is called on the event loop too, which costs one
round trip, and fails at once while the database is known to be away (``BlockingDatabase``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from homarus.errors import ConfigError
from homarus.queue.journal import COLUMNS, TERMINAL, RunRecord, Where, record_of
from homarus.storage.cluster import live_member

if TYPE_CHECKING:
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["PgRunJournal", "import_runs"]

_SELECT = f"SELECT {COLUMNS} FROM runs"  # noqa: S608 - a constant of column names
_UNFINISHED = "status IN ('accepted', 'running')"
_OWNER_LIVE = live_member("runs.owner")


def _now_ms() -> int:
    return int(time.time() * 1000)


class PgRunJournal:
    def __init__(self, db: BlockingDatabase, member_id: str, member_ttl_s: float) -> None:
        self.db = db
        self.member_id = member_id
        self.member_ttl_s = member_ttl_s

    def close(self) -> None:
        """Nothing to close: the pool belongs to the gateway's database."""

    # -- accepting and finishing -------------------------------------------------------------
    def accept(self, run_id: str, kind: str, params: dict[str, Any], **where: Unpack[Where]) -> tuple[RunRecord, bool]:
        """Record a run as accepted and owned here; returns (record, created). A run id known to
        the cluster (sent to another gateway too) is not created again."""
        request = where.get("request")
        now, params_text = _now_ms(), json.dumps(params)
        request_text = json.dumps(request) if request is not None else None
        session_key, agent_id, lane = where.get("session_key"), where.get("agent_id"), where.get("lane")
        with self.db.connection() as conn:
            created = conn.execute(
                """INSERT INTO runs (run_id, kind, session_key, agent_id, lane, params, status, accepted_at,
                       request, owner)
                   VALUES (%s, %s, %s, %s, %s, %s, 'accepted', %s, %s, %s)
                   ON CONFLICT (run_id) DO NOTHING RETURNING 1""",
                (run_id, kind, session_key, agent_id, lane, params_text, now, request_text, self.member_id),
            ).fetchone()
        if created is not None:
            row = (run_id, kind, session_key, agent_id, lane, params_text, "accepted", now, None, None, None, None)
            return record_of((*row, request_text, 0, None)), True
        record = self.get(run_id)
        assert record is not None
        return record, False

    async def aaccept(
        self, run_id: str, kind: str, params: dict[str, Any], *, synced: bool = True, **where: Unpack[Where]
    ) -> tuple[RunRecord, bool]:
        return await asyncio.to_thread(functools.partial(self.accept, run_id, kind, params, **where))

    def mark_started(self, run_id: str, joined: Sequence[str] = (), *, synced: bool = False) -> None:
        """``run_id`` began executing, and the ``joined`` runs folded into it: one transaction."""
        now = _now_ms()
        with self.db.connection() as conn, conn.transaction():
            conn.execute(
                """UPDATE runs SET status = 'running', started_at = %s
                   WHERE run_id = %s AND status = 'accepted' AND owner IS NOT DISTINCT FROM %s""",
                (now, run_id, self.member_id),
            )
            for other in joined:
                conn.execute(
                    """UPDATE runs SET status = 'running', started_at = %s, joined_to = %s
                       WHERE run_id = %s AND status = 'accepted'""",
                    (now, run_id, other),
                )

    def finish(self, run_id: str, status: str, *, result: Any = None, error: Any = None) -> None:
        """The run's end, recorded only while this gateway owns it (one that took it over records
        its own end; a gateway that lost it while paused must not overwrite that)."""
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        with self.db.connection() as conn:
            conn.execute(
                """UPDATE runs SET status = %s, ended_at = %s, result = %s, error = %s
                   WHERE run_id = %s AND owner IS NOT DISTINCT FROM %s""",
                (
                    status,
                    _now_ms(),
                    json.dumps(result) if result is not None else None,
                    json.dumps(error) if error is not None else None,
                    run_id,
                    self.member_id,
                ),
            )

    async def afinish(self, run_id: str, status: str, *, result: Any = None, error: Any = None) -> None:
        await asyncio.to_thread(functools.partial(self.finish, run_id, status, result=result, error=error))

    def finish_soon(
        self, run_id: str, status: str, *, result: Any = None, error: Any = None, synced: bool = True
    ) -> asyncio.Future[Any]:
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        return asyncio.ensure_future(self.afinish(run_id, status, result=result, error=error))

    # -- reading ---------------------------------------------------------------------------
    def get(self, run_id: str) -> RunRecord | None:
        with self.db.connection() as conn:
            row = conn.execute(_SELECT + " WHERE run_id = %s", (run_id,)).fetchone()
        return record_of(row) if row is not None else None

    def unfinished(self) -> list[RunRecord]:
        """Claim the unfinished runs of members that are gone and return them, in the order they were
        accepted, for the recovery rules (at start, and whenever :meth:`orphans` finds some). The
        runs this gateway owns are its own business: they run here, or were recovered already."""
        with self.db.connection() as conn:
            rows = conn.execute(
                f"""WITH claimed AS (
                        UPDATE runs SET owner = %(me)s
                        WHERE {_UNFINISHED} AND (owner IS NULL OR owner <> %(me)s) AND NOT {_OWNER_LIVE}
                        RETURNING {COLUMNS}, seq)
                    SELECT {COLUMNS} FROM claimed ORDER BY accepted_at, seq""",  # noqa: S608 - constants only
                {"me": self.member_id, "ttl": self.member_ttl_s},
            ).fetchall()
        return [record_of(r) for r in rows]

    def orphans(self) -> bool:
        """Whether a member that is gone left unfinished runs (a cheap probe, before claiming)."""
        with self.db.connection() as conn:
            row = conn.execute(
                f"""SELECT 1 FROM runs WHERE {_UNFINISHED} AND owner <> %(me)s AND NOT {_OWNER_LIVE}
                    LIMIT 1""",  # noqa: S608 - constants only
                {"me": self.member_id, "ttl": self.member_ttl_s},
            ).fetchone()
        return row is not None

    # -- recovery ------------------------------------------------------------------------
    def requeue(self, run_id: str, *, follower: bool = False) -> RunRecord | None:
        if follower:
            sql = "UPDATE runs SET resumes = resumes + 1 WHERE run_id = %s AND status = 'running'"
        else:
            sql = f"""UPDATE runs SET resumes = resumes + (status = 'running')::int, status = 'accepted',
                          joined_to = NULL WHERE run_id = %s AND {_UNFINISHED}"""  # noqa: S608 - constants only
        with self.db.connection() as conn:
            conn.execute(sql, (run_id,))
        return self.get(run_id)

    def interrupt(self, run_id: str, reason: str) -> RunRecord | None:
        with self.db.connection() as conn:
            conn.execute(
                f"""UPDATE runs SET status = 'interrupted', ended_at = %s, error = %s
                    WHERE run_id = %s AND {_UNFINISHED}""",  # noqa: S608 - constants only
                (_now_ms(), json.dumps({"reason": reason}), run_id),
            )
        return self.get(run_id)

    def prune(self, older_than_ms: int) -> int:
        with self.db.connection() as conn:
            cur = conn.execute(
                f"DELETE FROM runs WHERE NOT ({_UNFINISHED}) AND accepted_at < %s",  # noqa: S608 - constants only
                (_now_ms() - older_than_ms,),
            )
        return cur.rowcount


def import_runs(db: BlockingDatabase, path: Path, *, dry_run: bool = False) -> tuple[int, int, int]:
    """Copy an embedded journal (``runs.sqlite``) into the shared one: (runs found, of them
    unfinished, runs added). Nobody owns the copies, so the first gateway to start takes the
    unfinished ones up by the recovery rules; the finished ones keep answering their idempotency
    keys. A run id the database has already is kept as it is there."""
    if not path.exists():
        return 0, 0, 0
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = source.execute(f"SELECT {COLUMNS} FROM runs ORDER BY accepted_at, rowid").fetchall()  # noqa: S608
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); start the gateway once to bring it up to date") from None
    finally:
        source.close()
    unfinished = sum(1 for r in rows if r[6] in ("accepted", "running"))
    if dry_run or not rows:
        return len(rows), unfinished, 0
    added = 0
    with db.connection() as conn, conn.transaction():
        for row in rows:
            cur = conn.execute(
                f"INSERT INTO runs ({COLUMNS}) VALUES ({', '.join(['%s'] * 15)}) ON CONFLICT (run_id) DO NOTHING",  # noqa: S608
                row,
            )
            added += cur.rowcount
    return len(rows), unfinished, added
