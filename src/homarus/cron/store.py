"""``$STATE/cron/jobs.json``: ``{"version": 1, "jobs": [...]}``, held in memory, rewritten whole.

Every write is lock (cross-process ``file_lock``) → temp file → fsync → rename, so a reader or a
crash never sees half a file. A file that does not parse or validate is never silently treated as
empty (that would drop every job on the next write): it is renamed to ``jobs.json.corrupt.<ms>``
and :class:`CronStoreCorrupt` names both paths, so the operator can repair and restore it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from homarus.cron.models import CronJob
from homarus.errors import ConfigError, NotFound
from homarus.fs import atomic_write, ensure_private_dir
from homarus.locking import file_lock

__all__ = ["STORE_VERSION", "CronStore", "CronStoreCorrupt"]

log = logging.getLogger("homarus.cron")
STORE_VERSION = 1


class CronStoreCorrupt(ConfigError):
    """The jobs file could not be read; it was moved aside (``moved_to``), nothing was dropped."""

    def __init__(self, message: str, *, path: Path, moved_to: Path | None) -> None:
        super().__init__(message, path=str(path))
        self.moved_to = moved_to


class CronStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        #: id → job, in insertion order; the scheduler mutates ``state`` in place, then persists
        self.jobs: dict[str, CronJob] = {}
        self._write_lock = asyncio.Lock()

    # -- reading -----------------------------------------------------------------------------
    def load(self) -> dict[str, CronJob]:
        """Read the file (missing = no jobs). Raises CronStoreCorrupt after moving a bad file aside."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            self.jobs = {}
            return self.jobs
        try:
            self.jobs = self._parse(raw)
        except ValueError as exc:
            moved = self._move_aside()
            where = f"; moved aside to {moved}" if moved else ""
            raise CronStoreCorrupt(
                f"cron store is not valid ({exc}){where}; fix and rename it back to restore the jobs",
                path=self.path,
                moved_to=moved,
            ) from None
        return self.jobs

    def _parse(self, raw: bytes) -> dict[str, CronJob]:
        try:
            doc = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
            raise ValueError('expected an object {"version": 1, "jobs": [...]}')
        if doc.get("version") != STORE_VERSION:
            raise ValueError(f"unsupported version {doc.get('version')!r} (expected {STORE_VERSION})")
        jobs: dict[str, CronJob] = {}
        for i, item in enumerate(doc["jobs"]):
            try:
                job = CronJob.model_validate(item)
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = ".".join(str(p) for p in first["loc"])
                raise ValueError(f"jobs[{i}].{loc}: {first['msg']}") from None
            if job.id in jobs:
                raise ValueError(f"jobs[{i}]: duplicate id {job.id!r}")
            jobs[job.id] = job
        return jobs

    def _move_aside(self) -> Path | None:
        target = self.path.with_name(f"{self.path.name}.corrupt.{int(time.time() * 1000)}")
        try:
            os.replace(self.path, target)
        except OSError as exc:
            log.error("cron: could not move the corrupt store %s aside: %s", self.path, exc)
            return None
        log.error("cron: store %s is corrupt; moved aside to %s", self.path, target)
        return target

    def get(self, job_id: str) -> CronJob:
        job = self.jobs.get(job_id)
        if job is None:
            raise NotFound(f"cron job not found: {job_id}", details={"code": "CRON_JOB_NOT_FOUND", "jobId": job_id})
        return job

    # -- writing -----------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        doc: dict[str, Any] = {"version": STORE_VERSION, "jobs": [j.to_json() for j in self.jobs.values()]}
        return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    def write(self, data: bytes) -> None:
        ensure_private_dir(self.path.parent)
        with file_lock(self.path):
            atomic_write(self.path, data)

    def save(self) -> None:
        self.write(self.snapshot())

    async def persist(self) -> None:
        """Write the current jobs from a worker thread; the snapshot is taken under the lock,
        so the last writer always stores the newest state."""
        async with self._write_lock:
            await asyncio.to_thread(self.write, self.snapshot())

    def location(self) -> str:
        """Where the jobs are kept, for ``cron.status`` (``storePath``)."""
        return str(self.path)

    # -- what a store shared by several gateways overrides (cron/pg_store.py) -------------------
    # Here one process owns the file: nobody else runs a job, a start and an end are written
    # like any change, and there is nothing to catch up with.
    def busy_elsewhere(self, job_id: str) -> bool:
        """Whether another gateway is running the job now."""
        return False

    async def claim(self, job: CronJob, run_id: str, *, forced: bool) -> bool:
        """Record that ``run_id`` of ``job`` starts here (its state says ``runningAtMs``); False
        when another gateway has it: running it, or its due time already taken."""
        await self.persist()
        return True

    async def release(self, job_id: str, run_id: str) -> None:
        """Record the run's end: the job's state after it (or the job gone)."""
        await self.persist()

    async def sync(self) -> None:
        """Catch up with what other gateways changed (before the scheduler looks for due jobs)."""
