"""The cron scheduler: one timer, due jobs through an injected runner, and the state machine.

* **One timer**, armed at the earliest ``nextRunAtMs`` but never longer than 60 s, so a clock
  jump or a hand-edited store is noticed within a minute. Changes and finished runs wake it early.
* **Runs** go through ``runner(job) -> RunResult``, at most ``max_concurrent`` at once, each bounded
  by the job's timeout (``payload.timeoutSeconds`` or 10 min). A runner that raises is an error
  like any other: recorded, retried by backoff, and the scheduler keeps going.
* **After a run** the job's state moves by the rules of ``transitions``: backoff 30 s, 1, 5, 15,
  60 min after errors, ``at`` jobs deleted after success, 3 schedule errors disable a job.
* **Downtime**: on start, every enabled job whose ``nextRunAtMs`` has passed runs once (not once
  per missed slot) and is logged with ``catchUp: true``. A run the last process left
  ``runningAtMs`` is one of those: it was cut short, so it runs again.

``clock`` (epoch ms) and ``sleep`` are injected so tests drive time without waiting.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from homarus.cron.models import CronJob
from homarus.cron.runlog import RunLog
from homarus.cron.store import CronStore, CronStoreCorrupt
from homarus.cron.transitions import SUMMARY_MAX_CHARS, RunResult, apply_result, recompute, run_entry
from homarus.errors import HomarusError
from homarus.tasks import cancel_and_wait

__all__ = ["DEFAULT_JOB_TIMEOUT_S", "MAX_TIMER_MS", "CronScheduler", "RunResult", "Runner", "current_run_id"]

log = logging.getLogger("homarus.cron")

MAX_TIMER_MS = 60_000
DEFAULT_JOB_TIMEOUT_S = 600.0
INTERRUPTED = "interrupted by gateway shutdown"
#: a run that did not start: another gateway has the job (``CronStore.claim``)
ELSEWHERE = "running on another gateway"

#: the id of the run the runner is carrying out (set around each call of the runner): the agent
#: turn a job starts takes it as its own run id, so one id names the run in cron.run's answer, the
#: run log (cron.runs runId), the agent run (agent.wait) and the webhook
current_run_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("cron_run_id", default=None)
_run_seq = itertools.count(1)

Runner = Callable[[CronJob], Awaitable[RunResult]]
ChangeListener = Callable[[dict[str, Any]], None]


def _now_ms() -> int:
    return int(time.time() * 1000)


class CronScheduler:
    def __init__(
        self,
        store: CronStore,
        runner: Runner,
        *,
        clock: Callable[[], int] = _now_ms,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        runlog: RunLog | None = None,
        max_concurrent: int = 1,
        job_timeout_s: float = DEFAULT_JOB_TIMEOUT_S,
        timeout_grace_s: float = 0.0,
        on_change: ChangeListener | None = None,
        enabled: bool = True,
    ) -> None:
        self.store = store
        self.runner = runner
        self.clock = clock
        self.sleep = sleep
        self.runlog = runlog or RunLog(store.path.parent / "runs")
        self.max_concurrent = max(1, max_concurrent)
        self.job_timeout_s = job_timeout_s
        #: extra time past a job's own timeout before the scheduler gives up on the runner
        self.timeout_grace_s = timeout_grace_s
        self.on_change = on_change
        self.enabled = enabled
        self.load_error: str | None = None
        self._running: dict[str, asyncio.Task[RunResult]] = {}
        #: job id -> the id of its run in progress
        self._run_ids: dict[str, str] = {}
        self._catch_up: set[str] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._persist_task: asyncio.Task[None] | None = None
        self._stopping = False

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self, rerun: Collection[str] = ()) -> set[str]:
        """Load the store, mark missed runs for catch-up and arm the timer (when enabled).

        ``rerun``: jobs whose run the last process left unfinished, to run again now whatever
        their schedule says (a forced run included). Returns those that will run (they exist, are
        enabled, and the scheduler is).
        """
        await asyncio.to_thread(self._load)
        due = self._rerun(rerun)
        if self._prepare() or due:
            await self.store.persist()
        self._arm()
        return due

    def _rerun(self, job_ids: Collection[str]) -> set[str]:
        if not self.enabled:
            return set()
        now = self.clock()
        due: set[str] = set()
        for job_id in job_ids:
            job = self.store.jobs.get(job_id)
            if job is None or not job.enabled:
                continue
            nxt = job.state.next_run_at_ms
            job.state.next_run_at_ms = now if nxt is None else min(nxt, now)
            due.add(job_id)
        return due

    def start_now(self) -> None:
        """:meth:`start` from synchronous code, for a store read on first use (it is missing or
        was written by this process); a needed rewrite is written in the background."""
        self._load()
        if self._prepare():
            self._persist_task = asyncio.create_task(self.store.persist(), name="cron-persist")
        self._arm()

    def _load(self) -> None:
        try:
            self.store.load()
        except CronStoreCorrupt as exc:
            self.load_error = exc.message
            log.error("cron: %s", exc.message)

    def _prepare(self) -> bool:
        """Clear runs cut short, compute missing next runs, queue missed ones; True if jobs changed."""
        now = self.clock()
        changed = False
        for job in self.store.jobs.values():
            st = job.state
            running = job.id in self._running or self.store.busy_elsewhere(job.id)
            if st.running_at_ms is not None and not running:
                log.warning("cron job %s (%s) was cut short by the last shutdown; it runs again", job.id, job.name)
                st.running_at_ms = None
                changed = True
            if not job.enabled:
                continue
            if st.next_run_at_ms is None:
                recompute(job, now)
                changed = True
            elif st.next_run_at_ms <= now:
                self._catch_up.add(job.id)
                log.info(
                    "cron job %s (%s) missed its run at %d while the gateway was down; running it once now",
                    job.id,
                    job.name,
                    st.next_run_at_ms,
                )
        return changed

    def _arm(self) -> None:
        self._stopping = False
        if self.enabled and self._task is None:
            self._task = asyncio.create_task(self._loop(), name="cron-timer")

    async def open(self) -> None:
        """Read the jobs without arming the timer (a cluster member without the scheduler role)."""
        await asyncio.to_thread(self._load)

    async def resume(self) -> None:
        """Take the timer up (this gateway now holds the cluster's scheduler role): read the jobs
        as they are now, queue what is due and arm."""
        try:
            await self.store.sync()
            if self._prepare():
                await self.store.persist()
        except HomarusError as exc:  # the shared store away: the ticks read it once it is back
            log.warning("cron: the jobs could not be read on taking the timer up: %s", exc.message)
        self._arm()

    async def pause(self) -> None:
        """Stop the timer, not the runs in flight (another gateway schedules now; the runs this
        one started finish here, their jobs claimed until then)."""
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def stop(self, timeout: float = 2.0) -> None:
        """Stop the timer; give running jobs ``timeout`` seconds, then cancel them (they run again on start)."""
        self._stopping = True
        await cancel_and_wait(self._task)
        self._task = None
        running = list(self._running.values())
        if running:
            _, pending = await asyncio.wait(running, timeout=timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)

    def poke(self) -> None:
        """Re-arm the timer now (a job was added, changed or removed)."""
        self._wake.set()

    async def wait_idle(self) -> None:
        """Wait until no run is in flight (tests, shutdown)."""
        while self._running:
            await asyncio.gather(*list(self._running.values()), return_exceptions=True)

    # -- the timer -----------------------------------------------------------------------------
    async def _loop(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                started = await self.tick()
            except HomarusError as exc:  # the shared store away: the next tick tries again
                log.warning("cron: scheduler tick failed: %s", exc.message)
                started = []
            except Exception:
                log.exception("cron: scheduler tick failed")
                started = []
            delay = self.delay_ms()
            if delay == 0 and not started:
                delay = 1000  # something due could not start: never spin
            await self._wait(delay)

    async def _wait(self, delay_ms: int) -> None:
        sleeper = asyncio.ensure_future(self.sleep(delay_ms / 1000))
        waker = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()

    def next_wake_ms(self) -> int | None:
        """The earliest due time of an enabled job that is not running."""
        times = [j.state.next_run_at_ms for j in self.store.jobs.values() if self._waiting(j)]
        return min(t for t in times if t is not None) if times else None

    def _waiting(self, job: CronJob) -> bool:
        """Enabled, scheduled, and running neither here nor on another gateway."""
        return (
            job.enabled
            and job.state.next_run_at_ms is not None
            and job.id not in self._running
            and not self.store.busy_elsewhere(job.id)
        )

    def delay_ms(self) -> int:
        nxt = self.next_wake_ms()
        if nxt is None or len(self._running) >= self.max_concurrent:
            return MAX_TIMER_MS  # a finishing run wakes the timer early
        return min(max(nxt - self.clock(), 0), MAX_TIMER_MS)

    async def tick(self) -> list[asyncio.Task[RunResult]]:
        """Start every due job the concurrency cap allows; returns the started runs."""
        await self.store.sync()
        now = self.clock()
        recomputed = False
        for job in list(self.store.jobs.values()):
            if job.enabled and job.state.next_run_at_ms is None and job.id not in self._running:
                recompute(job, now)
                recomputed = True
        if recomputed:
            await self.store.persist()
        due = sorted(
            (j for j in self.store.jobs.values() if self._waiting(j) and (j.state.next_run_at_ms or 0) <= now),
            key=lambda j: j.state.next_run_at_ms or 0,
        )
        started: list[asyncio.Task[RunResult]] = []
        for job in due:
            if len(self._running) >= self.max_concurrent:
                break
            started.append(self._start(job, forced=False))
        return started

    # -- running -------------------------------------------------------------------------------
    def running(self) -> list[str]:
        return list(self._running)

    async def run_now(self, job_id: str, *, force: bool = True, wait: bool = True) -> dict[str, Any]:
        """``cron.run``: force runs whatever the schedule says; otherwise only a due job runs."""
        job = self.store.get(job_id)
        if job.id in self._running or self.store.busy_elsewhere(job.id):
            return {"ok": True, "ran": False, "reason": "already-running"}
        nxt = job.state.next_run_at_ms
        if not force and (not job.enabled or nxt is None or nxt > self.clock()):
            return {"ok": True, "ran": False, "reason": "not-due"}
        task = self._start(job, forced=force)
        run_id = self._run_ids[job.id]
        if not wait:
            return {"ok": True, "enqueued": True, "runId": run_id}
        result = await asyncio.shield(task)
        if result.error == ELSEWHERE:
            return {"ok": True, "ran": False, "reason": "already-running"}
        out: dict[str, Any] = {"ok": True, "ran": True, "status": result.status, "runId": run_id}
        if result.error:
            out["error"] = result.error
        if result.summary:
            out["summary"] = result.summary[:SUMMARY_MAX_CHARS]
        return out

    def _start(self, job: CronJob, *, forced: bool) -> asyncio.Task[RunResult]:
        catch_up = job.id in self._catch_up
        self._catch_up.discard(job.id)
        job.state.running_at_ms = started = self.clock()
        # the original's shape: manual:<job>:<start ms>:<n> for cron.run, cron:<job>:<start ms> on schedule
        run_id = f"manual:{job.id}:{started}:{next(_run_seq)}" if forced else f"cron:{job.id}:{started}"
        self._run_ids[job.id] = run_id
        task = asyncio.create_task(self._execute(job, run_id, catch_up=catch_up, forced=forced), name=f"cron:{job.id}")
        self._running[job.id] = task

        def done(t: asyncio.Task[RunResult]) -> None:
            self._running.pop(job.id, None)
            self._run_ids.pop(job.id, None)
            self._wake.set()
            if not t.cancelled() and (exc := t.exception()) is not None:
                if isinstance(exc, HomarusError):  # the shared store away: the next tick tries again
                    log.warning("cron job %s: not run: %s", job.id, exc.message)
                else:
                    log.error("cron job %s: bookkeeping failed: %r", job.id, exc)

        task.add_done_callback(done)
        return task

    def _timeout_s(self, job: CronJob) -> float:
        own = getattr(job.payload, "timeout_seconds", None)
        return (float(own) if own else self.job_timeout_s) + self.timeout_grace_s

    async def _execute(self, job: CronJob, run_id: str, *, catch_up: bool, forced: bool) -> RunResult:
        started = job.state.running_at_ms or self.clock()
        if not await self._claim(job, run_id, forced=forced):
            return RunResult("skipped", error=ELSEWHERE)
        started_event = {"jobId": job.id, "action": "started", "runAtMs": started, "runId": run_id}
        self.emit(started_event | ({"catchUp": True} if catch_up else {}))
        cancelled = False
        timeout = self._timeout_s(job)
        try:
            token = current_run_id.set(run_id)
            try:
                async with asyncio.timeout(timeout):
                    result = await self.runner(job)
            finally:
                current_run_id.reset(token)
        except TimeoutError:
            result = RunResult("error", error=f"job timed out after {timeout:g}s")
        except asyncio.CancelledError:
            cancelled = True
            result = RunResult("skipped", error=INTERRUPTED)
        except Exception as exc:  # a crashing runner is an error of this job, not of the scheduler
            log.exception("cron job %s (%s) crashed", job.id, job.name)
            result = RunResult("error", error=f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        if self._stopping and result.status != "ok":
            result = RunResult("skipped", error=INTERRUPTED, details=result.details)  # aborted by the shutdown
        entry = {"runId": run_id} | self._finish(job, result, started, self.clock(), catch_up=catch_up, forced=forced)
        await self.store.release(job.id, run_id)
        try:
            await asyncio.to_thread(self.runlog.append, job.id, entry)
        except (OSError, HomarusError) as exc:
            log.error("cron job %s: could not write the run log: %s", job.id, exc)
        self.emit(entry)
        if cancelled:
            raise asyncio.CancelledError
        return result

    async def _claim(self, job: CronJob, run_id: str, *, forced: bool) -> bool:
        """Record the start; False (and the job as it was) when another gateway has the job. A
        start that cannot be recorded (the shared store away) raises: the run does not start."""
        try:
            claimed = await self.store.claim(job, run_id, forced=forced)
        except BaseException:
            job.state.running_at_ms = None
            raise
        if not claimed:
            log.info("cron job %s: not run here, another gateway has it", job.id)
            job.state.running_at_ms = None
        return claimed

    def _finish(
        self, job: CronJob, result: RunResult, started: int, finished: int, *, catch_up: bool, forced: bool
    ) -> dict[str, Any]:
        interrupted = result.status == "skipped" and result.error == INTERRUPTED
        entry = run_entry(job, result, started, finished, catch_up=catch_up, forced=forced)
        current = self.store.jobs.get(job.id)  # the job may have been edited or removed meanwhile
        if current is None:
            entry["removed"] = True
            return entry
        if interrupted:
            # nextRunAtMs stays where it was: the next start sees it past due and catches up
            current.state.running_at_ms = None
            entry["error"] = f"{INTERRUPTED}; runs again on start"
        elif apply_result(current, result, started, finished):
            del self.store.jobs[job.id]
            entry["deleted"] = True
        entry["nextRunAtMs"] = current.state.next_run_at_ms
        return entry

    def reschedule(self, job: CronJob) -> None:
        """A job was added, enabled or given a new schedule: compute its next run and re-arm."""
        job.state.schedule_error_count = 0
        if job.enabled:
            recompute(job, self.clock())
        else:
            job.state.next_run_at_ms = None
        self.poke()

    def emit(self, event: dict[str, Any]) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(event)
        except Exception:
            log.exception("cron: change listener failed")
