"""Running an accepted run, shared by every entry point (``agent``, ``chat.send``, webhooks, cron,
heartbeat, the OpenAI-compatible API).

:func:`start_run` writes the run (with the request that can start it again) to the journal before
anyone is told it was accepted; :func:`run_and_finish` submits it to the runtime, which records it
as started when it really begins (``AgentRuntime.on_run_start``), and records its end in the
journal, the idempotency cache and the ``agent.wait`` snapshots.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from homarus.agents.request import RunRequest
from homarus.agents.runs import RunOutcome
from homarus.errors import Unavailable
from homarus.io_lane import run_on_lane
from homarus.usecases.recovery_rules import rerun_when_queued

if TYPE_CHECKING:
    from collections.abc import Callable

    from homarus.agents.runtime import AgentRuntime
    from homarus.config.schema import HomarusConfig
    from homarus.queue.dedupe import DedupeCache
    from homarus.queue.journal import Journal, Where
    from homarus.queue.lanes import LaneQueue
    from homarus.usecases.run_events import RunEvents

__all__ = [
    "AtCapacity",
    "RunFailed",
    "RunHost",
    "final_payload",
    "queue_position",
    "record_end",
    "run_and_finish",
    "run_to_outcome",
    "start_run",
]

log = logging.getLogger("homarus.gateway")


class RunHost(Protocol):
    """What accepting, running and finishing a run uses."""

    @property
    def config(self) -> HomarusConfig: ...

    lanes: LaneQueue
    journal: Journal
    runtime: AgentRuntime
    dedupe: DedupeCache
    run_events: RunEvents
    #: runs accepted and not finished (``gateway.maxPendingRuns`` bounds the clients' new ones)
    open_runs: int
    #: the host is stopping: a run its shutdown cut short stays in the journal, to be taken up
    shutting_down: bool

    async def runs_ready(self) -> None:
        """Return once what a run needs is loaded (a cold host loads it off the event loop)."""
        ...


class RunFailed(Unavailable):
    """A run ended in error; the response also carries a payload describing it."""

    def __init__(self, message: str, payload: dict[str, Any]) -> None:
        super().__init__(message)
        self.payload = payload


def final_payload(outcome: RunOutcome) -> dict[str, Any]:
    return {
        "runId": outcome.run_id,
        "status": "ok" if outcome.status != "error" else "error",
        "summary": "completed" if outcome.status == "ok" else outcome.status,
        "result": outcome.to_payload(),
    }


class AtCapacity(Unavailable):
    """More runs are waiting than ``gateway.maxPendingRuns``: nothing was accepted; retry later."""


def queue_position(gateway: RunHost, req: RunRequest) -> int:
    """How many runs must make room before ``req`` starts: the ones of its session (one at a time)
    and those beyond the free slots of its lane (``main``: ``agents.defaults.maxConcurrent``).
    Runs of other sessions that do not hold it up are not counted."""
    return gateway.lanes.ahead(f"session:{req.session_key.canonical}", req.lane)


async def start_run(
    gateway: RunHost,
    req: RunRequest,
    kind: str,
    params: dict[str, Any],
    *,
    admit: bool = False,
    prepare: Callable[[], object] | None = None,
) -> tuple[bool, Any]:
    """Journal ``req`` as accepted; returns (created, previous record when it already existed).

    ``admit``: a client's new run, refused (before anything is written) while
    ``gateway.maxPendingRuns`` runs are accepted and not finished — backpressure instead of an
    ever longer queue; work that is already durable (chat channels, cron) is never refused.
    ``prepare``: blocking work that must precede the record (creating the session), done in the
    same trip to a worker thread.
    """
    await gateway.runs_ready()
    limit = gateway.config.gateway.max_pending_runs
    if admit and gateway.open_runs >= limit:
        raise AtCapacity(
            f"the gateway is at capacity ({gateway.open_runs} runs waiting, gateway.maxPendingRuns {limit}); "
            "nothing was accepted: retry later",
            retryable=True,
            retry_after_ms=2000,
        )
    key = req.session_key
    where: Where = {"session_key": key.canonical, "agent_id": key.agent_id, "lane": req.lane, "request": req.to_json()}
    if prepare is None:  # straight to the journal's writer: no worker thread
        # a run the restart would only mark interrupted (its caller's connection died with the
        # process: the OpenAI-compatible API): a power cut that loses its record loses nothing
        synced = rerun_when_queued(kind)
        record, created = await gateway.journal.aaccept(req.run_id, kind, params, synced=synced, **where)
    else:

        def accept() -> tuple[Any, bool]:
            prepare()
            return gateway.journal.accept(req.run_id, kind, params, **where)

        record, created = await run_on_lane(accept)
    if created:
        gateway.open_runs += 1
    return created, record


async def run_to_outcome(gateway: RunHost, req: RunRequest) -> RunOutcome:
    """Run ``req`` through the runtime; whatever goes wrong becomes an error outcome (a run always
    ends with one, so its end can be recorded)."""
    try:
        return await gateway.runtime.submit(req)
    except Exception as exc:
        message = getattr(exc, "message", None) or f"{type(exc).__name__}"
        now = int(time.time() * 1000)
        return RunOutcome(req.run_id, req.session_key.canonical, "error", error=message, started_at=now, ended_at=now)


async def run_and_finish(gateway: RunHost, req: RunRequest, kind: str) -> RunOutcome:
    """Run ``req`` through the runtime and record its end in the journal and the dedupe cache.

    A run that answers has its journal end queued as it ends (``RunRequest.on_end``), beside its
    session entry's update: one trip to the lane for both, not synced (the answer is, in the
    transcript: see ``RunJournal.finish_soon``)."""
    queued: list[tuple[dict[str, Any], asyncio.Future[Any]]] = []  # (payload, the journal's end)

    def journal_end(outcome: RunOutcome) -> None:
        if outcome.status == "ok" and outcome.run_id == req.run_id:
            payload = final_payload(outcome)
            queued.append((payload, gateway.journal.finish_soon(req.run_id, "ok", result=payload, synced=False)))

    outcome = await run_to_outcome(gateway, dataclasses.replace(req, on_end=journal_end))
    if queued and outcome.status == "ok":
        payload, finished = queued[0]
        await record_end(gateway, kind, req.run_id, "ok", payload, outcome, finished=finished)
    else:
        await record_end(gateway, kind, req.run_id, outcome.status, final_payload(outcome), outcome)
    return outcome


async def record_end(
    gateway: RunHost,
    kind: str,
    run_id: str,
    status: str,
    payload: dict[str, Any],
    outcome: RunOutcome,
    *,
    finished: asyncio.Future[Any] | None = None,
) -> None:
    """Record the end of ``run_id``: the journal, the idempotency cache, ``agent.wait``. A run folded
    into another ends with that run's ``outcome``.

    A run the gateway's own shutdown aborted is not ended in the journal: it stays ``running``, so
    the next start applies its entry point's recovery rule (a webhook or chat run resumes)."""
    gateway.open_runs = max(0, gateway.open_runs - 1)
    if gateway.shutting_down and status == "aborted":
        log.info("run %s was cut short by the shutdown; the next start takes it up", run_id)
        gateway.run_events.finished(run_id, status, outcome.started_at, outcome.ended_at, outcome.error)
        return
    if finished is not None:  # the journal's end, queued as the run ended (``run_and_finish``)
        await finished
    else:
        await gateway.journal.afinish(
            run_id, status, result=payload, error={"message": outcome.error} if outcome.error else None
        )
    ok = status != "error"
    gateway.dedupe.put(
        f"{kind}:{run_id}",
        status,
        ok=ok,
        payload=payload,
        error=None if ok else {"code": "UNAVAILABLE", "message": outcome.error or "run failed"},
    )
    gateway.run_events.finished(run_id, status, outcome.started_at, outcome.ended_at, outcome.error)
