"""Runs: a message in a session becomes a loop over the model and tools, persisted and streamed.

Each run is double-enqueued (its session's lane, then a global lane), registered while it runs,
bounded by its timeout, and carried through its steps by ``turn.Turn`` (load, prepare, gate,
record, loop, end, maintain). A message for a session that is already running is handled by the
queue mode (steer, followup, collect, interrupt) under the trust rule.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.agents import setup
from homarus.agents.hook_bridge import ApprovalFn
from homarus.agents.manual_compaction import CompactReport, compact_session
from homarus.agents.outcome import failed_outcome
from homarus.agents.request import QueueMode, RunRequest, request_content
from homarus.agents.runs import ActiveRun, RunOutcome, RunRegistry
from homarus.agents.stream import EventTranslator
from homarus.agents.turn import Turn
from homarus.agents.wiring import RuntimeWiring
from homarus.config.schema import HomarusConfig
from homarus.errors import HomarusError, Unavailable
from homarus.messages import UserMessage
from homarus.plugins.runner import HookRunner
from homarus.providers.registry import ModelRegistry
from homarus.queue.lanes import LaneQueue
from homarus.sessions.manager import SessionManager
from homarus.tools.base import ToolRegistry
from homarus.usage.ledger import RunUsage

if TYPE_CHECKING:
    from homarus.sessions.keys import SessionKey

__all__ = ["AgentRuntime", "QueueMode", "RunRequest"]

log = logging.getLogger("homarus.agents")
EventSink = Callable[[dict[str, Any]], None]


class AgentRuntime:
    def __init__(
        self,
        *,
        config: Callable[[], HomarusConfig],
        sessions: SessionManager,
        models: ModelRegistry,
        tools: ToolRegistry,
        lanes: LaneQueue,
        state_dir: Path,
        on_event: EventSink,
        wiring: RuntimeWiring | None = None,
        hooks: HookRunner | None = None,
        approve: ApprovalFn | None = None,
        injections: Any = None,
        spawn: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
    ) -> None:
        self._config = config
        self.sessions = sessions
        self.models = models
        self.tools = tools
        self.lanes = lanes
        self.state_dir = state_dir
        self.on_event = on_event
        self.hooks = hooks or HookRunner()
        self.approve = approve
        #: next-turn injection queue (``drain(session_key)``), when plugins can enqueue
        self.injections = injections
        self.spawn: Callable[[Coroutine[Any, Any, Any]], Any] = spawn or _background
        self.wiring = wiring or RuntimeWiring()
        if self.wiring.services.runtime is None:
            self.wiring.services = dataclasses.replace(self.wiring.services, runtime=self)
        self.runs = RunRegistry()
        #: (session key, trust) → the collect batch waiting for its turn
        self._collect: dict[tuple[str, str], tuple[list[RunRequest], asyncio.Future[RunOutcome]]] = {}
        self.sleep: Callable[[float], Any] = asyncio.sleep

    # -- submission and queue modes -------------------------------------------------------------
    async def submit(self, req: RunRequest) -> RunOutcome:
        """Run ``req`` now, or fold it into the session's running work per the queue mode.

        The trust rule: a turn runs with the policy of whoever sent it. A request is steered into,
        collected with, or allowed to interrupt only work of its own trust (``RunRequest.trust``);
        any other request waits for its turn as a run of its own, with its own tools.
        """
        cfg = self._config()
        mode = req.queue_mode or cfg.messages.queue.mode
        key = req.session_key.canonical
        active = self.runs.for_session(key)
        if active is None:
            return await self.run(req)
        same_trust = active.trust == req.trust
        if same_trust and mode == "interrupt":
            self.abort(key, origin="interrupt")
            self.lanes.clear(f"session:{key}")
            return await self.run(req)
        waiting = self.lanes.waiting(f"session:{key}")
        # steering a message into the run while earlier ones still wait their turn would answer it
        # before them: it waits behind them instead (as a followup)
        if same_trust and mode == "steer" and not waiting and not active.compacting and not active.abort.is_set():
            await self._starting(active.run_id, [req.run_id])
            message = UserMessage(request_content(req))
            active.owners[id(message)] = req.run_id  # written under its own run id (recovery reads it)
            active.steering.append(message)
            self.runs.alias(req.run_id, active)
            return await asyncio.shield(active.done)
        if waiting >= cfg.messages.queue.cap and cfg.messages.queue.drop == "new":
            raise Unavailable(f"session queue is full ({waiting} waiting); message dropped", retryable=True)
        if mode == "collect":
            return await self._collect_into(req)  # batches are per trust as well
        return await self.run(req)  # a followup of its own (another trust: whatever the mode says)

    async def _collect_into(self, req: RunRequest) -> RunOutcome:
        key = req.session_key.canonical
        batch_key = (key, req.trust)
        pending = self._collect.get(batch_key)
        if pending is not None:
            pending[0].append(req)
            return await asyncio.shield(pending[1])
        batch = [req]
        future: asyncio.Future[RunOutcome] = asyncio.get_running_loop().create_future()
        self._collect[batch_key] = (batch, future)

        async def merged() -> RunOutcome:
            self._collect.pop(batch_key, None)  # messages arriving from now on start a new batch
            texts = [r.message for r in batch]
            parts = ["[Queued messages while agent was busy]"]
            for i, text in enumerate(texts, 1):
                parts += ["---", f"Queued #{i}", text]
            merged_req = RunRequest(
                **{
                    **req.__dict__,
                    "message": "\n".join(parts) if len(texts) > 1 else texts[0],
                    "joined": [r.run_id for r in batch[1:]],
                }
            )
            return await self._execute(merged_req)

        try:
            outcome = await self.lanes.run(f"session:{key}", lambda: self.lanes.run(req.lane, merged))
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)
            raise
        future.set_result(outcome)
        return outcome

    async def run(self, req: RunRequest) -> RunOutcome:
        key = req.session_key.canonical
        return await self.lanes.run(f"session:{key}", lambda: self.lanes.run(req.lane, lambda: self._execute(req)))

    async def compact(
        self, key: SessionKey, *, instructions: str | None = None, max_messages: int | None = None
    ) -> CompactReport:
        """Compact the session's context now, between runs (``manual_compaction``)."""
        return await compact_session(self, key, instructions=instructions, max_messages=max_messages)

    # -- control ------------------------------------------------------------------------------
    def abort(self, session_key: str, run_id: str | None = None, *, origin: str = "abort") -> list[str]:
        run = self.runs.by_run_id(run_id) if run_id else self.runs.for_session(session_key)
        if run is None or run.session_key != session_key or run.abort.is_set():
            return []
        run.abort_origin = origin
        run.abort.set()
        return [run.run_id]

    async def _starting(self, run_id: str, joined: list[str]) -> None:
        """Record a start outside a run's own first trip (a message steered into a running run)."""
        if self.wiring.on_run_start is not None:
            await asyncio.to_thread(self.wiring.on_run_start, run_id, joined)

    # -- one run --------------------------------------------------------------------------------
    async def _execute(self, req: RunRequest) -> RunOutcome:
        cfg = self._config()
        key = req.session_key
        active = ActiveRun(req.run_id, key.canonical, req.trust)
        self.runs.start(active)
        if self.wiring.on_session_run is not None:
            try:
                self.wiring.on_session_run(key)
            except Exception:  # memory is an aid: it never stops a run
                log.exception("session-start hook failed for %s", key.canonical)
        translator = EventTranslator(req.run_id, key.canonical, self.on_event, verbose=False)
        timeout = req.timeout_s or float(cfg.agents.defaults.timeout_seconds)
        timer = asyncio.get_running_loop().call_later(timeout, self._time_out, active)
        try:
            outcome = await Turn(self, req, active, translator, cfg).run()
        except HomarusError as exc:
            outcome = failed_outcome(req, active, exc.message)
            translator.lifecycle_error(exc.message)
        except Exception as exc:  # a bug must still end the run visibly, never hang its waiters
            log.exception("run %s failed", req.run_id)
            outcome = failed_outcome(req, active, f"internal error: {type(exc).__name__}")
            translator.lifecycle_error(outcome.error or "error")
        finally:
            timer.cancel()
            self.runs.end(active)
        if active.audit is not None:
            active.audit.run_end(status=outcome.status, error=outcome.error, usage=outcome.usage)
        if active.model_usage and self.wiring.on_run_usage is not None:
            try:
                self.wiring.on_run_usage(
                    RunUsage(outcome.ended_at, key.agent_id, key.canonical, req.channel or "", active.model_usage)
                )
            except Exception:  # accounting never fails a run
                log.exception("recording the usage of run %s failed", req.run_id)
        if not active.done.done():
            active.done.set_result(outcome)
        return outcome

    def _time_out(self, active: ActiveRun) -> None:
        active.timed_out = True
        active.abort_origin = "timeout"
        active.abort.set()

    def config(self) -> HomarusConfig:
        """The config as it is now (a run reads it once at its start, and again at its end)."""
        return self._config()

    def workspace_dir(self, agent_id: str, cfg: HomarusConfig) -> Path:
        return setup.workspace_dir(agent_id, cfg, self.state_dir)


_tasks: set[asyncio.Task[Any]] = set()


def _background(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(coro)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task
