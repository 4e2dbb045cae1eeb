"""The cron façade the gateway methods and the model's ``cron`` tool share: dicts in, dicts out.

Add and update validate the whole job (shape, payload/target pairing, schedule that parses and
fires), then persist and re-arm the scheduler. ``validate_job`` is the caller's hook for checks
this layer cannot make (known agent ids, model refs).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import uuid
from collections.abc import Callable, Collection
from typing import Any, Literal

import orjson
from pydantic import ValidationError

from homarus.cron.models import CronJob, JobCreate
from homarus.cron.runlog import RunLog
from homarus.cron.schedule import ScheduleError, normalize_schedule
from homarus.cron.scheduler import CronScheduler
from homarus.cron.store import CronStore
from homarus.errors import InvalidRequest

__all__ = ["CronService", "config_revision", "read_view"]

#: fields a patch may set; ``payload`` and ``delivery`` merge one level deep when the kind stays
PATCHABLE = frozenset(
    {
        "name",
        "description",
        "agentId",
        "sessionKey",
        "enabled",
        "deleteAfterRun",
        "schedule",
        "sessionTarget",
        "wakeMode",
        "payload",
        "delivery",
    }
)
SortBy = Literal["nextRunAtMs", "updatedAtMs", "name"]


def _problems(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"])
        parts.append(f"{loc}: {e['msg']}" if loc else str(e["msg"]))
    return "; ".join(parts)


class CronService:
    def __init__(
        self,
        store: CronStore,
        scheduler: CronScheduler,
        runlog: RunLog,
        *,
        validate_job: Callable[[CronJob], None] | None = None,
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.runlog = runlog
        self.validate_job = validate_job

    @property
    def clock(self) -> Callable[[], int]:
        return self.scheduler.clock

    # -- reads -----------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "enabled": self.scheduler.enabled,
            "storePath": self.store.location(),
            "jobs": len(self.store.jobs),
            "nextWakeAtMs": self.scheduler.next_wake_ms() if self.scheduler.enabled else None,
            "running": self.scheduler.running(),
        }
        if self.scheduler.load_error:
            out["storeError"] = self.scheduler.load_error
        return out

    def get(self, job_id: str) -> dict[str, Any]:
        return read_view(self.store.get(job_id))

    def list_jobs(
        self,
        *,
        include_disabled: bool = True,
        limit: int = 50,
        offset: int = 0,
        query: str | None = None,
        enabled: Literal["all", "enabled", "disabled"] | None = None,
        sort_by: SortBy = "nextRunAtMs",
        sort_dir: Literal["asc", "desc"] = "asc",
        schedule_kind: str | None = None,
        last_run_status: str | None = None,
    ) -> dict[str, Any]:
        jobs = list(self.store.jobs.values())
        if schedule_kind not in (None, "all"):
            jobs = [j for j in jobs if j.schedule.kind == schedule_kind]
        if last_run_status not in (None, "all"):
            jobs = [j for j in jobs if j.state.last_run_status == last_run_status]
        which = enabled or ("all" if include_disabled else "enabled")
        if which != "all":
            jobs = [j for j in jobs if j.enabled == (which == "enabled")]
        if query:
            q = query.lower()
            jobs = [j for j in jobs if q in j.name.lower() or q in (j.description or "").lower() or q in j.id]

        def key(j: CronJob) -> Any:
            if sort_by == "name":
                return j.name.lower()
            if sort_by == "updatedAtMs":
                return j.updated_at_ms
            nxt = j.state.next_run_at_ms
            return (nxt is None, nxt or 0)

        jobs.sort(key=key, reverse=sort_dir == "desc")
        page = jobs[offset : offset + limit]
        has_more = offset + len(page) < len(jobs)
        return {
            "jobs": [read_view(j) for j in page],
            "snapshotRevision": self.snapshot_revision(),
            "total": len(jobs),
            "offset": offset,
            "limit": limit,
            "hasMore": has_more,
            "nextOffset": offset + len(page) if has_more else None,
        }

    def snapshot_revision(self) -> str:
        """Names the inventory as it is now (which jobs, each one's last change): a client paging
        through ``cron.list`` starts over when it changes between pages."""
        import hashlib

        parts = sorted(f"{j.id}:{j.updated_at_ms}" for j in self.store.jobs.values())
        return "sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]

    async def runs(
        self,
        job_id: str | None,
        *,
        limit: int = 50,
        offset: int = 0,
        statuses: Collection[str] = (),
        delivery_statuses: Collection[str] = (),
        query: str | None = None,
        ascending: bool = False,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        """A page of run-log entries: one job's (``job_id``) or every job's (None), newest first
        unless ``ascending``, filtered by status, delivery status, a text query and a run id."""
        if job_id is not None:
            self.store.get(job_id)  # an unknown job is an error, as in the original (not an empty page)
            entries = await asyncio.to_thread(self.runlog.entries, job_id)
        else:
            entries = await asyncio.to_thread(self.runlog.all_entries)
        if run_id is not None:
            entries = [e for e in entries if e.get("runId") == run_id]
        if statuses:
            entries = [e for e in entries if e.get("status") in statuses]
        if delivery_statuses:
            entries = [e for e in entries if e.get("deliveryStatus") in delivery_statuses]
        if query:
            needle = query.casefold()
            fields = ("jobName", "summary", "error", "jobId")
            entries = [e for e in entries if any(needle in str(e.get(f) or "").casefold() for f in fields)]
        if ascending:
            entries.reverse()
        total = len(entries)
        page = entries[offset : offset + limit]
        has_more = offset + len(page) < total
        return {
            "entries": page,
            "total": total,
            "offset": offset,
            "limit": limit,
            "hasMore": has_more,
            "nextOffset": offset + len(page) if has_more else None,
        }

    # -- changes ---------------------------------------------------------------------------------
    async def add(self, spec: dict[str, Any], *, default_agent_id: str | None = None) -> dict[str, Any]:
        try:
            create = JobCreate.model_validate(spec)
        except ValidationError as exc:
            raise InvalidRequest(f"invalid cron job: {_problems(exc)}") from None
        now = self.clock()
        job_id = str(uuid.uuid4())
        fields = create.model_dump(by_alias=False)
        if fields.get("agent_id") is None and default_agent_id is not None:
            fields["agent_id"] = default_agent_id
        fields["schedule"] = self._normalized(create.schedule, now, job_id)
        job = CronJob.model_validate({**fields, "id": job_id, "created_at_ms": now, "updated_at_ms": now})
        if self.validate_job is not None:
            self.validate_job(job)
        self.store.jobs[job.id] = job
        self.scheduler.reschedule(job)
        await self.store.persist()
        self._changed("added", job)
        return read_view(job)

    async def update(
        self, job_id: str, patch: dict[str, Any], *, expected_revision: str | None = None
    ) -> dict[str, Any]:
        """Patch a job; with ``expected_revision`` (its ``configRevision`` as the caller read it),
        only if nobody changed its definition since (an editor's save does not undo another's)."""
        job = self.store.get(job_id)
        if expected_revision is not None and (actual := config_revision(job)) != expected_revision:
            raise InvalidRequest(
                "cron job definition no longer matches the loaded version; review the latest version before retrying",
                details={
                    "code": "CRON_JOB_CHANGED",
                    "expectedConfigRevision": expected_revision,
                    "actualConfigRevision": actual,
                },
            )
        unknown = sorted(set(patch) - PATCHABLE)
        if unknown:
            raise InvalidRequest(f"cron.update: these fields cannot be patched: {', '.join(unknown)}")
        merged = job.to_json()
        for name, value in patch.items():
            current = merged.get(name)
            if (
                name in ("payload", "delivery")
                and isinstance(current, dict)
                and isinstance(value, dict)
                and value.get("kind", current.get("kind")) == current.get("kind")
            ):
                value = {**current, **value}  # same kind: a partial patch keeps the other fields
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        now = self.clock()
        merged["updatedAtMs"] = max(now, job.updated_at_ms)
        try:
            updated = CronJob.model_validate(merged)
        except ValidationError as exc:
            raise InvalidRequest(f"invalid cron job: {_problems(exc)}") from None
        if "schedule" in patch:
            updated.schedule = self._normalized(updated.schedule, now, job.id)
        if self.validate_job is not None:
            self.validate_job(updated)
        updated.state = job.state  # the live state object: a run in flight still reports into it
        self.store.jobs[job.id] = updated
        if "schedule" in patch or ("enabled" in patch and updated.enabled != job.enabled):
            self.scheduler.reschedule(updated)
        else:
            self.scheduler.poke()
        await self.store.persist()
        self._changed("updated", updated)
        return read_view(updated)

    async def remove(self, job_id: str) -> dict[str, Any]:
        job = self.store.get(job_id)  # an unknown id is "not found", as the original answers
        del self.store.jobs[job_id]
        self.scheduler.poke()
        await self.store.persist()
        self._changed("removed", job)
        return {"ok": True, "removed": True}

    async def run(self, job_id: str, *, mode: Literal["force", "due"] = "force", wait: bool = True) -> dict[str, Any]:
        return await self.scheduler.run_now(job_id, force=mode == "force", wait=wait)

    def _normalized(self, schedule: Any, now: int, job_id: str) -> Any:
        try:
            return normalize_schedule(schedule, now, job_id)
        except ScheduleError as exc:
            raise InvalidRequest(f"invalid schedule: {exc.message}") from None

    def _changed(self, action: str, job: CronJob) -> None:
        event: dict[str, Any] = {"jobId": job.id, "action": action}
        if job.state.next_run_at_ms is not None and action != "removed":
            event["nextRunAtMs"] = job.state.next_run_at_ms
        self.scheduler.emit(event)


def config_revision(job: CronJob) -> str:
    """Names a job's definition (not its run state, not when it was last touched): an editor sends
    it back with ``cron.update`` to learn whether someone changed the job meanwhile."""
    definition = {k: v for k, v in job.to_json().items() if k not in ("state", "updatedAtMs")}
    digest = hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)).digest()
    return "sha256:" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def read_view(job: CronJob) -> dict[str, Any]:
    """A job as the methods answer it: its fields and its ``configRevision``."""
    return {**job.to_json(), "configRevision": config_revision(job)}
