"""A job's state after a run or a schedule change: backoff, one-shot ends, schedule failures.

Pure functions over :class:`CronJob` (no I/O, no clock of their own), so every rule is tested
with plain numbers:

* an error backs off 30 s, 1, 5, 15, 60 min by ``consecutiveErrors`` — never earlier than the
  next regular time; success resets the count;
* an ``at`` job that succeeded is deleted (disabled instead when ``deleteAfterRun`` is false);
  one that failed is retried by backoff and disabled after 5 tries;
* a schedule that cannot be computed counts a schedule error (3 disable the job); one that has
  no next time disables the job at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from homarus.cron.models import AtSchedule, CronJob, RunStatus
from homarus.cron.schedule import BACKOFF_MS, ScheduleError, backoff_ms, first_run

__all__ = [
    "MAX_AT_ATTEMPTS",
    "MAX_SCHEDULE_ERRORS",
    "RunResult",
    "apply_result",
    "completion_status",
    "recompute",
    "run_entry",
]

log = logging.getLogger("homarus.cron")

MAX_SCHEDULE_ERRORS = 3
MAX_AT_ATTEMPTS = len(BACKOFF_MS)
SUMMARY_MAX_CHARS = 2000


@dataclass(slots=True)
class RunResult:
    status: RunStatus
    error: str | None = None
    summary: str | None = None
    duration_ms: int | None = None
    delivery_status: str | None = None
    #: extra run-log fields (sessionKey, sessionId, runId, delivered, model, ...)
    details: dict[str, Any] = field(default_factory=dict)


def recompute(job: CronJob, now: int) -> int | None:
    """Set the job's next run from its schedule; counts failures and disables as documented."""
    st = job.state
    try:
        nxt = first_run(job.schedule, now, job.id)
    except ScheduleError as exc:
        st.schedule_error_count += 1
        st.last_error = exc.message
        st.next_run_at_ms = None
        if st.schedule_error_count >= MAX_SCHEDULE_ERRORS:
            job.enabled = False
            log.error(
                "cron job %s (%s) disabled after %d schedule errors: %s",
                job.id,
                job.name,
                st.schedule_error_count,
                exc.message,
            )
        else:
            log.warning("cron job %s (%s): schedule error: %s", job.id, job.name, exc.message)
        return None
    st.schedule_error_count = 0
    if nxt is None:
        job.enabled = False
        st.next_run_at_ms = None
        st.last_error = "schedule has no next run time; job disabled"
        log.warning("cron job %s (%s) has no next run time; disabled", job.id, job.name)
        return None
    st.next_run_at_ms = nxt
    return nxt


def run_entry(
    job: CronJob, result: RunResult, started: int, finished: int, *, catch_up: bool, forced: bool
) -> dict[str, Any]:
    """The run-log line (and ``cron`` event) for a finished run."""
    entry: dict[str, Any] = {
        "ts": finished,
        "jobId": job.id,
        "jobName": job.name,
        "action": "finished",
        "status": result.status,
        "runAtMs": started,
        "durationMs": result.duration_ms if result.duration_ms is not None else max(0, finished - started),
    }
    if result.error:
        entry["error"] = result.error
    if result.summary:
        entry["summary"] = result.summary[:SUMMARY_MAX_CHARS]
    if result.delivery_status:
        entry["deliveryStatus"] = result.delivery_status
    entry["completionStatus"] = completion_status(job, result)
    if catch_up:
        entry["catchUp"] = True
    if forced:
        entry["forced"] = True
    entry.update(result.details)
    return entry


def completion_status(job: CronJob, result: RunResult) -> str:
    """Whether the run did what was asked of it, the original's way: an error or a skip failed;
    an ``ok`` run succeeded when its answer went out (or none was asked for), failed when a
    required delivery did not happen, and is ``unknown`` when nobody can tell."""
    if result.status in ("error", "skipped"):
        return "failed"
    if result.status != "ok":
        return "unknown"
    delivery = result.delivery_status
    if delivery in (None, "not-requested", "delivered"):
        return "succeeded"
    required = job.delivery is not None and job.delivery.mode != "none" and not job.delivery.best_effort
    if delivery == "not-delivered":
        return "failed" if required else "succeeded"
    return "unknown"


def apply_result(job: CronJob, result: RunResult, started: int, finished: int) -> bool:
    """Record a finished run in ``job.state``; True when the job is done and must be deleted."""
    st = job.state
    st.running_at_ms = None
    st.last_run_at_ms = started
    st.last_run_status = result.status
    st.last_duration_ms = result.duration_ms if result.duration_ms is not None else max(0, finished - started)
    st.last_error = result.error if result.status != "ok" else None
    st.last_delivery_status = result.delivery_status
    if result.status == "error":
        st.consecutive_errors += 1
    elif result.status == "ok":
        st.consecutive_errors = 0
    job.updated_at_ms = max(job.updated_at_ms, finished)
    if isinstance(job.schedule, AtSchedule):
        return _one_shot_done(job, result.status, finished)
    regular = recompute(job, finished)
    if result.status == "error" and job.enabled:
        retry = finished + backoff_ms(st.consecutive_errors)
        st.next_run_at_ms = max(regular or retry, retry)
    return False


def _one_shot_done(job: CronJob, status: RunStatus, now: int) -> bool:
    st = job.state
    if status != "error":
        if job.delete_after_run is False:
            job.enabled = False
            st.next_run_at_ms = None
            return False
        return True
    if st.consecutive_errors >= MAX_AT_ATTEMPTS:
        job.enabled = False
        st.next_run_at_ms = None
        log.error("cron job %s (%s) failed %d times; disabled", job.id, job.name, st.consecutive_errors)
        return False
    st.next_run_at_ms = now + backoff_ms(st.consecutive_errors)
    return False
