"""Cron jobs run: the runner, delivery, events, and start/stop.

* ``systemEvent`` jobs queue their text on the main session through the heartbeat's ``wake`` (the
  heartbeat handles it; ``wakeMode: now`` runs one at once).
* ``agentTurn`` jobs run in ``agent:<agentId>:cron:<jobId>``, a fresh session id per run (the old
  transcript is archived, so runs do not see each other), on the ``cron`` lane, journaled like
  any accepted run. The prompt is prefixed ``[cron:<jobId> <name>]``.
* Delivery of an isolated run's final text: ``announce`` (default) posts a short summary to the
  main session through the heartbeat's ``wake`` — never for a ``HEARTBEAT_OK``-only or silent reply;
  ``webhook`` POSTs the finished-run event through the SSRF-guarded client; ``none`` does
  nothing. A failed delivery fails the run unless ``delivery.bestEffort``.
* Every change and run end is broadcast as a ``cron`` event (operator.read) and, for changes
  and run ends, fires the ``cron_changed`` plugin hook.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from homarus.agents.request import RunRequest
from homarus.config.cron import CronConfig
from homarus.cron.models import AgentTurnPayload, CronJob, SystemEventPayload
from homarus.cron.runlog import RunLog
from homarus.cron.scheduler import DEFAULT_JOB_TIMEOUT_S, CronScheduler, RunResult, current_run_id
from homarus.cron.service import CronService
from homarus.cron.store import CronStore
from homarus.errors import HomarusError, InvalidRequest
from homarus.plugins.events import CronChangedEvent
from homarus.security.scopes import READ
from homarus.usecases.heartbeat import strip_token
from homarus.usecases.ports import Spawner
from homarus.usecases.runs import RunHost, run_and_finish, start_run
from homarus.usecases.session_events import SessionWatchers, emit_session_changed

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths
    from homarus.plugins.runner import HookRunner
    from homarus.providers.registry import ModelRegistry
    from homarus.queue.journal import RunRecord
    from homarus.security.ssrf import GuardedClient
    from homarus.sessions.manager import SessionManager
    from homarus.storage.cluster import Cluster
    from homarus.usecases.heartbeat import Heartbeats
    from homarus.usecases.recovery import Recovery

__all__ = [
    "CronHost",
    "CronRunner",
    "build_cron",
    "cron_config",
    "start_cron",
    "start_shared_cron",
    "stop_cron",
    "store_path",
]

log = logging.getLogger("homarus.cron")

#: the runtime's own timeout ends a run first; the scheduler's backstop waits this much longer
TIMEOUT_GRACE_S = 15.0
ANNOUNCE_MAX_CHARS = 4000
WEBHOOK_TIMEOUT_S = 10.0
HOOKED_ACTIONS = frozenset({"added", "updated", "removed", "finished"})


class CronHost(RunHost, SessionWatchers, Spawner, Protocol):
    """What cron uses: the run services, the job's session, the heartbeat (system events and
    announcements), the guarded client (webhook delivery), models (checked when a job is saved)."""

    paths: StatePaths
    sessions: SessionManager
    heartbeats: Heartbeats
    models: ModelRegistry
    web_client: GuardedClient
    hooks: HookRunner


def cron_config(host: CronHost) -> CronConfig:
    """``cron`` from the config (defaults while the section is not part of the schema)."""
    section = getattr(host.config, "cron", None)
    return section if isinstance(section, CronConfig) else CronConfig()


class CronRunner:
    """The scheduler's ``runner``: one job run with the services of its host."""

    def __init__(self, host: CronHost) -> None:
        self.host = host
        #: session keys of agent turns in flight (aborted on shutdown)
        self.active: set[str] = set()
        #: per job id, the run the last process left unfinished (and whether it had started): the
        #: job's next run is that run, continued (``run_recovery``)
        self.adopted: dict[str, tuple[RunRecord, bool]] = {}

    def adopt(self, runs: list[tuple[RunRecord, bool]]) -> list[tuple[RunRecord, bool]]:
        """Take back unfinished runs by job id; returns those that name no job (or a later run of
        the same job replaced them)."""
        orphans: list[tuple[RunRecord, bool]] = []
        for record, started in runs:  # oldest first: a later run of a job wins
            job_id = record.params.get("jobId") if isinstance(record.params, dict) else None
            if not isinstance(job_id, str):
                orphans.append((record, started))
                continue
            if job_id in self.adopted:
                orphans.append(self.adopted[job_id])
            self.adopted[job_id] = (record, started)
        return orphans

    async def __call__(self, job: CronJob) -> RunResult:
        if isinstance(job.payload, SystemEventPayload):
            await self.host.heartbeats.wake(
                job.payload.text, mode=job.wake_mode, agent_id=job.agent_id, source=f"cron:{job.id}"
            )
            return RunResult("ok", delivery_status="not-requested")
        return await self._agent_turn(job, job.payload)

    async def _agent_turn(self, job: CronJob, payload: AgentTurnPayload) -> RunResult:
        host = self.host
        agent_id = job.agent_id or host.config.agents.default_id
        key = host.sessions.resolve_key(f"agent:{agent_id}:cron:{job.id}", agent_id)

        adopted = self.adopted.pop(job.id, None)

        def session_for_run() -> str:
            if adopted is not None:  # the unfinished run continues in its own session
                ref = host.sessions.ensure(key, label=f"cron: {job.name}"[:100])
            elif host.sessions.get(key) is not None:
                ref, _archived = host.sessions.reset(key)
            else:
                ref = host.sessions.ensure(key, label=f"cron: {job.name}"[:100])
            return ref.entry.session_id

        session_id = await asyncio.to_thread(session_for_run)
        req = (
            RunRequest.from_json(adopted[0].request, key, resume=adopted[1]) if adopted and adopted[0].request else None
        )
        if req is None:
            req = RunRequest(
                run_id=current_run_id.get() or str(uuid.uuid4()),
                session_key=key,
                message=f"[cron:{job.id} {job.name}] {payload.message}",
                model=payload.model,
                thinking=payload.thinking,
                timeout_s=float(payload.timeout_seconds or DEFAULT_JOB_TIMEOUT_S),
                lane="cron",
                trigger="cron",
            )
            await start_run(host, req, "cron", {"jobId": job.id, "message": req.message, "sessionKey": key.canonical})
            emit_session_changed(host, key, "create", runId=req.run_id)
        else:
            log.warning("cron job %s: continuing run %s left unfinished by the last shutdown", job.id, req.run_id)
        run_id = req.run_id
        self.active.add(key.canonical)
        try:
            outcome = await run_and_finish(host, req, "cron")
        finally:
            self.active.discard(key.canonical)
        details: dict[str, Any] = {"sessionKey": key.canonical, "sessionId": session_id, "runId": run_id}
        if outcome.model:
            details["model"] = outcome.model
        summary = "" if outcome.silent else outcome.text
        if outcome.status != "ok":
            return RunResult(
                "error", error=outcome.error or f"run {outcome.status}", summary=summary or None, details=details
            )
        result = RunResult("ok", summary=summary or None, details=details)
        await self._deliver(job, agent_id, result, outcome.started_at, outcome.ended_at)
        return result

    async def _deliver(self, job: CronJob, agent_id: str, result: RunResult, started: int, ended: int) -> None:
        mode = job.delivery_mode
        if mode == "none":
            result.delivery_status = "not-requested"
            return
        try:
            if mode == "announce":
                delivered = await self._announce(job, agent_id, result.summary or "")
            else:
                delivered = await self._webhook(job, result, started, ended)
        except HomarusError as exc:
            failure = exc.message
        except Exception as exc:  # a delivery bug must not take the scheduler down
            log.exception("cron job %s: delivery failed", job.id)
            failure = f"{type(exc).__name__}: {exc}"
        else:
            result.delivery_status = "delivered" if delivered else "skipped"
            result.details["delivered"] = delivered
            return
        result.delivery_status = "failed"
        result.details["delivered"] = False
        result.details["deliveryError"] = failure
        if not (job.delivery is not None and job.delivery.best_effort):
            result.status = "error"
            result.error = f"delivery failed: {failure}"

    async def _announce(self, job: CronJob, agent_id: str, summary: str) -> bool:
        text, ack_only = strip_token(summary, 0)
        if ack_only or not text.strip():
            return False  # nothing worth telling: HEARTBEAT_OK-only, silent or empty
        note = f"Cron job {job.name}: {text}"[:ANNOUNCE_MAX_CHARS]
        await self.host.heartbeats.wake(note, mode=job.wake_mode, agent_id=agent_id, source=f"cron:{job.id}")
        return True

    async def _webhook(self, job: CronJob, result: RunResult, started: int, ended: int) -> bool:
        assert job.delivery is not None and job.delivery.to is not None  # the model guarantees both
        body = {
            "jobId": job.id,
            "jobName": job.name,
            "action": "finished",
            "status": result.status,
            "summary": result.summary,
            "runAtMs": started,
            "durationMs": max(0, ended - started),
            "ts": int(time.time() * 1000),
            **{k: v for k, v in result.details.items() if k in ("sessionKey", "sessionId", "runId")},
        }
        headers = {"content-type": "application/json"}
        token = cron_config(self.host).webhook_token
        if token is not None:
            headers["authorization"] = f"Bearer {token.get_secret_value()}"
        response = await self.host.web_client.fetch(
            job.delivery.to,
            method="POST",
            content=json.dumps(body).encode("utf-8"),
            headers=headers,
            max_bytes=64 * 1024,
            timeout_s=WEBHOOK_TIMEOUT_S,
            max_redirects=0,
        )
        if not 200 <= response.status < 300:
            raise InvalidRequest(f"webhook answered HTTP {response.status}")
        return True


def _validator(host: CronHost) -> Any:
    def validate(job: CronJob) -> None:
        if job.agent_id is not None and job.agent_id not in host.sessions.agent_ids:
            raise InvalidRequest(f'unknown agent id "{job.agent_id}"')
        model = getattr(job.payload, "model", None)
        if model:
            host.models.resolve(model)  # an unknown model is refused now, not at 3 a.m.

    return validate


def store_path(host: CronHost) -> Path:
    """Where the job store lives (``cron.store``, relative to the state dir; default ``cron/jobs.json``)."""
    return cron_config(host).store_path(host.paths.state_dir)


def build_cron(host: CronHost, store: CronStore | None = None, runlog: RunLog | None = None) -> CronService:
    """The service with its store, run log and scheduler (nothing is read or started yet); the
    jobs file and run logs of the state dir unless given others (a cluster's shared ones)."""
    cfg = cron_config(host)
    path = store_path(host)
    store = store or CronStore(path)
    runlog = runlog or RunLog(path.parent / "runs", max_bytes=cfg.run_log.max_bytes, keep_lines=cfg.run_log.keep_lines)
    service: CronService | None = None

    def on_change(event: dict[str, Any]) -> None:
        host.bus.broadcast("cron", event, guard=READ, droppable=True, cluster=True)
        action = str(event.get("action"))
        if action in HOOKED_ACTIONS and host.hooks.has("cron_changed") and service is not None:
            job_id = str(event.get("jobId"))
            current = service.store.jobs.get(job_id)
            snapshot = current.to_json() if current is not None else {}
            _ = host.spawn(host.hooks.void("cron_changed", CronChangedEvent(action, job_id, snapshot)))

    scheduler = CronScheduler(
        store,
        CronRunner(host),
        runlog=runlog,
        max_concurrent=cfg.max_concurrent_runs,
        timeout_grace_s=TIMEOUT_GRACE_S,
        on_change=on_change,
        enabled=cfg.enabled,
    )
    service = CronService(store, scheduler, runlog, validate_job=_validator(host))
    host.lanes.set_concurrency("cron", cfg.max_concurrent_runs)
    return service


async def start_cron(host: CronHost, recovery: Recovery | None = None) -> CronService:
    """Build the service, load the jobs, arm the timer.

    Jobs that were due while the gateway was down run once now (logged with ``catchUp``). So do
    jobs whose run the last process left unfinished (``recovery.cron``): that run continues; one
    whose job is gone or disabled ends interrupted.
    """
    service = build_cron(host)
    runner = service.scheduler.runner
    assert isinstance(runner, CronRunner)
    orphans = runner.adopt(recovery.cron if recovery is not None else [])
    due = await service.scheduler.start(rerun=list(runner.adopted))
    for job_id in [j for j in runner.adopted if j not in due]:
        orphans.append(runner.adopted.pop(job_id))
    if recovery is not None and orphans:
        await asyncio.to_thread(recovery.interrupt, host, orphans)
    return service


async def start_shared_cron(host: CronHost, cluster: Cluster, recovery: Recovery | None = None) -> CronService:
    """Cron on a cluster's shared jobs (``storage.backend: postgres``): the jobs are read now, so
    every gateway answers the ``cron.*`` methods; the timer runs only on the gateway holding the
    ``cron`` role (``scheduler.resume``/``pause``, wired by the gateway). A cron run this gateway's
    last process left unfinished ends interrupted; its job catches up by its schedule, wherever
    the role is."""
    from homarus.cron.pg_runlog import PgRunLog
    from homarus.cron.pg_store import NOTICE_CHANNEL, PgCronStore

    def announce(notice: dict[str, Any]) -> None:
        _ = host.spawn(cluster.notices.publish(NOTICE_CHANNEL, notice))

    cfg = cron_config(host)
    store = PgCronStore(cluster.blocking, cluster.member_id, cluster.ttl_s, announce=announce)
    service = build_cron(host, store, PgRunLog(cluster.blocking, keep_lines=cfg.run_log.keep_lines))
    await service.scheduler.open()
    if recovery is not None and recovery.cron:
        await asyncio.to_thread(recovery.interrupt, host, recovery.cron)
        recovery.cron = []
    return service


async def stop_cron(service: CronService | None) -> None:
    """Stop the timer and abort agent turns in flight; they are recorded as interrupted and run
    again on the next start."""
    if service is None:
        return
    runner = service.scheduler.runner
    if isinstance(runner, CronRunner):
        for key in list(runner.active):
            runner.host.runtime.abort(key, origin="shutdown")
    await service.scheduler.stop()
