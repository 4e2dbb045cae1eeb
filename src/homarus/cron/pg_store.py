"""Cron jobs in PostgreSQL (``storage.backend: postgres``): one set of jobs for every gateway.

Each gateway keeps the jobs in memory as the file store does (the service and the scheduler are
the same code), and writes only what *it* changed: :meth:`PgCronStore.persist` compares every job
with the version it last read or wrote and updates that job's definition or its run state, each
only when it differs, so an edit made here and a run ending on another gateway never undo each
other, and a gateway that missed a change never deletes or rewinds it. Other gateways hear of a
change by a notice (``cron``) and read the jobs named in it; the gateway holding the scheduler
role reads them all before each tick, so a missed notice costs at most one tick.

A run starts only through :meth:`PgCronStore.claim`, one ``UPDATE`` on the job's row: it sets
``running_by`` when nobody live holds it and, for a scheduled run, when the job's due time is the
one the scheduler saw. Two schedulers (a role handed over while the old holder still ticked) or a
``cron.run`` on another gateway therefore never run a job twice for one due time; a claim held by a
member that is gone (past the member ttl) is free again, and that run counts as cut short.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import ValidationError

from homarus.cron.models import CronJob
from homarus.cron.store import CronStore, CronStoreCorrupt
from homarus.errors import HomarusError
from homarus.storage.cluster import live_member

if TYPE_CHECKING:
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["NOTICE_CHANNEL", "PgCronStore", "import_jobs"]

log = logging.getLogger("homarus.cron")

#: the notice channel naming jobs another gateway changed
NOTICE_CHANNEL = "cron"
_LIVE = live_member("cron_jobs.running_by")
#: a notice names at most this many jobs; a bigger change says "all" (read them all)
_NOTICE_IDS = 50


#: a job as this gateway last read or wrote it: each definition field's JSON, and the state's
Stored = tuple[dict[str, bytes], bytes]


def _halves(job: CronJob) -> Stored:
    doc = job.to_json()
    state = doc.pop("state", {})
    fields = {k: orjson.dumps(v, option=orjson.OPT_SORT_KEYS) for k, v in doc.items()}
    return fields, orjson.dumps(state, option=orjson.OPT_SORT_KEYS)


def _definition(fields: dict[str, bytes]) -> str:
    return "{" + ",".join(f"{orjson.dumps(k).decode()}:{v.decode()}" for k, v in fields.items()) + "}"


@dataclass(frozen=True, slots=True)
class Change:
    """What this gateway changed in one job: definition fields set and dropped, the new state."""

    job_id: str
    fields: dict[str, bytes] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    state: bytes | None = None
    added: bool = False
    #: the whole job as written (what the database has once this change is in); None: removed
    whole: Stored | None = None

    @property
    def removed(self) -> bool:
        return self.whole is None


def _job(definition: Any, state: Any) -> CronJob:
    return CronJob.model_validate({**definition, "state": state})


class PgCronStore(CronStore):
    def __init__(
        self,
        db: BlockingDatabase,
        member_id: str,
        member_ttl_s: float,
        *,
        announce: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        super().__init__(Path("cron_jobs"))
        self.db = db
        self.member_id = member_id
        self.member_ttl_s = member_ttl_s
        #: tells the other gateways which jobs changed (a ``cron`` notice); None: nobody listens
        self.announce = announce
        #: job id -> the job as last read from or written to the database
        self._stored: dict[str, Stored] = {}
        #: jobs another live member is running now
        self._elsewhere: set[str] = set()
        #: job id -> run id of a run whose end could not be recorded yet (the database was away):
        #: its claim is given back with the next read, else the job would stay claimed by us
        self._unreleased: dict[str, str] = {}
        self._said = ""

    def location(self) -> str:
        return f"postgresql://{self.db.where} (cron_jobs)"

    # -- reading -----------------------------------------------------------------------------
    def load(self) -> dict[str, CronJob]:
        self.jobs = {}
        self._stored = {}
        self._elsewhere = set()
        problems = self._apply(self._read(None), None)
        if problems:
            raise CronStoreCorrupt(
                f"cron jobs in PostgreSQL that do not validate (left as they are): {'; '.join(problems[:5])}",
                path=self.path,
                moved_to=None,
            )
        return self.jobs

    def _read(self, ids: list[str] | None) -> list[tuple[Any, ...]]:
        sql = f"""SELECT id, definition, state,
                         running_by IS NOT NULL AND running_by <> %(me)s AND {_LIVE},
                         running_by IS NOT DISTINCT FROM %(me)s
                  FROM cron_jobs WHERE %(ids)s::text[] IS NULL OR id = ANY(%(ids)s)
                  ORDER BY position"""  # noqa: S608 - constants; the values are parameters
        with self.db.connection() as conn:
            return conn.execute(sql, {"me": self.member_id, "ttl": self.member_ttl_s, "ids": ids}).fetchall()

    def _apply(self, rows: list[tuple[Any, ...]], ids: list[str] | None) -> list[str]:
        """Take the rows read for ``ids`` (None: every job) as the jobs now; a job this gateway is
        running keeps its live state (its run reports into it). Returns the rows that do not
        validate (left out, and never written from here)."""
        seen: set[str] = set()
        problems: list[str] = []
        fresh: dict[str, CronJob] = {}
        for job_id, definition, state, elsewhere, mine in rows:
            seen.add(job_id)
            try:
                job = _job(definition, state)
            except ValidationError as exc:
                problems.append(f"{job_id}: {exc.errors()[0]['msg']}")
                self.jobs.pop(job_id, None)
                self._stored.pop(job_id, None)  # never written (nor deleted) from here
                continue
            self._stored[job_id] = _halves(job)  # as the database has it
            current = self.jobs.get(job_id)
            if current is not None and mine:
                job.state = current.state  # running here: this gateway's state is the newest
            fresh[job_id] = job
            (self._elsewhere.add if elsewhere else self._elsewhere.discard)(job_id)
        gone = (set(self.jobs) if ids is None else set(ids)) - seen
        for job_id in gone:
            self.jobs.pop(job_id, None)
            self._stored.pop(job_id, None)
            self._elsewhere.discard(job_id)
        if ids is None:
            self.jobs = fresh  # in the database's order: the order jobs were added
        else:
            self.jobs.update(fresh)
        return problems

    async def refresh(self, ids: list[str] | None) -> None:
        """Read the jobs named in a notice (None: all of them)."""
        if self._unreleased:
            await self._give_back()
        async with self._write_lock:
            rows = await asyncio.to_thread(self._read, ids)
            problems = self._apply(rows, ids)
        said = "; ".join(problems[:5])
        if said and said != self._said:  # once, not at every tick
            log.warning("cron: jobs in PostgreSQL that do not validate are left out: %s", said)
        self._said = said

    async def sync(self) -> None:
        await self.refresh(None)

    def busy_elsewhere(self, job_id: str) -> bool:
        return job_id in self._elsewhere

    # -- writing -----------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        raise NotImplementedError("jobs in PostgreSQL are written one by one (persist)")

    def write(self, data: bytes) -> None:
        raise NotImplementedError("jobs in PostgreSQL are written one by one (persist)")

    async def persist(self) -> None:
        """Write what this gateway changed since it last read or wrote the jobs: the definition
        fields it set or dropped, its new state, the jobs it added or removed."""
        async with self._write_lock:
            changes = self._changes()
            if not changes:
                return
            await asyncio.to_thread(self._write_changes, changes)
            for change in changes:  # written: this is now what the database has
                if change.whole is None:
                    self._stored.pop(change.job_id, None)
                else:  # as it was when compared: a change made meanwhile is written next time
                    self._stored[change.job_id] = change.whole
            self._tell([change.job_id for change in changes])

    def _changes(self) -> list[Change]:
        out: list[Change] = []
        for job_id, job in self.jobs.items():
            fields, state = _halves(job)
            stored = self._stored.get(job_id)
            if stored is None:
                out.append(Change(job_id, fields, state=state, added=True, whole=(fields, state)))
                continue
            changed = {k: v for k, v in fields.items() if stored[0].get(k) != v}
            dropped = [k for k in stored[0] if k not in fields]
            if changed or dropped or state != stored[1]:
                new_state = state if state != stored[1] else None
                out.append(Change(job_id, changed, dropped, new_state, whole=(fields, state)))
        out.extend(Change(job_id) for job_id in self._stored if job_id not in self.jobs)
        return out

    def _write_changes(self, changes: list[Change]) -> None:
        with self.db.connection() as conn, conn.transaction():
            for change in changes:
                if change.removed:
                    conn.execute("DELETE FROM cron_jobs WHERE id = %s", (change.job_id,))
                elif change.added:
                    assert change.state is not None
                    conn.execute(
                        "INSERT INTO cron_jobs (id, definition, state) VALUES (%s, %s, %s)",
                        (change.job_id, _definition(change.fields), change.state.decode()),
                    )
                else:  # field by field: another gateway's edit of other fields stays
                    conn.execute(
                        """UPDATE cron_jobs SET definition = (definition - %s::text[]) || %s::jsonb,
                                                state = coalesce(%s::jsonb, state), changed_at = now()
                           WHERE id = %s""",
                        (
                            change.dropped,
                            _definition(change.fields),
                            change.state.decode() if change.state is not None else None,
                            change.job_id,
                        ),
                    )

    def _tell(self, ids: list[str]) -> None:
        if self.announce is not None:
            self.announce({"ids": ids if len(ids) <= _NOTICE_IDS else None})

    # -- runs --------------------------------------------------------------------------------
    async def claim(self, job: CronJob, run_id: str, *, forced: bool) -> bool:
        async with self._write_lock:
            fields, state = _halves(job)
            claimed = await asyncio.to_thread(self._claim, job, run_id, state, forced=forced)
            if claimed:
                self._stored[job.id] = (self._stored.get(job.id, (fields, state))[0], state)
                self._elsewhere.discard(job.id)
        if claimed:
            self._tell([job.id])
        return claimed

    def _claim(self, job: CronJob, run_id: str, state: bytes, *, forced: bool) -> bool:
        with self.db.connection() as conn:
            row = conn.execute(
                f"""UPDATE cron_jobs SET state = %(state)s, running_by = %(me)s, running_run = %(run)s,
                                         changed_at = now()
                    WHERE id = %(id)s AND (running_by IS NULL OR NOT {_LIVE})
                      AND (%(forced)s OR (state->>'nextRunAtMs')::bigint IS NOT DISTINCT FROM %(due)s)
                    RETURNING 1""",  # noqa: S608 - constants; the values are parameters
                {
                    "state": state.decode(),
                    "me": self.member_id,
                    "run": run_id,
                    "id": job.id,
                    "ttl": self.member_ttl_s,
                    "forced": forced,
                    "due": job.state.next_run_at_ms,
                },
            ).fetchone()
        return row is not None

    async def release(self, job_id: str, run_id: str) -> None:
        self._unreleased[job_id] = run_id
        try:
            await self._give_back()
        except HomarusError as exc:
            log.warning("cron job %s: the end of run %s is recorded once the database is back: %s", job_id, run_id, exc)

    async def _give_back(self) -> None:
        await self.persist()  # the state after the run first, then the claim
        for job_id, run_id in list(self._unreleased.items()):
            await asyncio.to_thread(self._release, job_id, run_id)
            if self._unreleased.get(job_id) == run_id:  # not a newer run's meanwhile
                del self._unreleased[job_id]

    def _release(self, job_id: str, run_id: str) -> None:
        with self.db.connection() as conn:
            conn.execute(
                "UPDATE cron_jobs SET running_by = NULL, running_run = NULL WHERE id = %s AND running_run = %s",
                (job_id, run_id),
            )


def import_jobs(db: BlockingDatabase, jobs: Iterable[CronJob], *, dry_run: bool = False) -> tuple[list[str], int]:
    """Copy jobs (from the embedded ``jobs.json``) into the shared table: (ids copied, how many
    were there already). A job id already in the table is left as it is, so running the move
    twice copies nothing twice."""
    copied: list[str] = []
    present = 0
    with db.connection() as conn, conn.transaction():
        for job in jobs:
            fields, state = _halves(job)
            if dry_run:
                found = conn.execute("SELECT 1 FROM cron_jobs WHERE id = %s", (job.id,)).fetchone()
            else:
                found = conn.execute(
                    """INSERT INTO cron_jobs (id, definition, state) VALUES (%s, %s, %s)
                       ON CONFLICT (id) DO NOTHING RETURNING NULL""",
                    (job.id, _definition(fields), state.decode()),
                ).fetchone()
                found = None if found is not None else (1,)
            if found:
                present += 1
            else:
                copied.append(job.id)
    return copied, present
