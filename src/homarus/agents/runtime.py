"""Runs: a message in a session becomes a loop over the model and tools, persisted and streamed.

Each run is double-enqueued (its session's lane, then a global lane), resolves its model chain,
builds the system prompt from the workspace, replays the transcript, runs the loop, writes every
turn to the transcript as it completes, and reports events with a per-run ``seq``. A message for
a session that is already running is handled by the queue mode (steer, followup, collect,
interrupt).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.agents import compaction, setup, workspace
from homarus.agents.compactor import RunCompactor
from homarus.agents.history import load_history
from homarus.agents.hook_bridge import ApprovalFn, RunPhases, RuntimeHooks
from homarus.agents.loop import LoopSettings, run_agent_loop
from homarus.agents.memory_flush import MEMORY_FLUSH_TRIGGER, claim_memory_flush, flush_prompt
from homarus.agents.outcome import bounded, entry_changes, failed_outcome, model_ref_of, run_outcome
from homarus.agents.raw_stream import stream_tap
from homarus.agents.request import QueueMode, RunRequest, request_content
from homarus.agents.resume import ResumePoint, close_interrupted
from homarus.agents.runs import ActiveRun, RunOutcome, RunRegistry
from homarus.agents.stream import EventTranslator
from homarus.agents.wiring import RuntimeWiring
from homarus.audit.trail import RunAudit
from homarus.config.schema import HomarusConfig
from homarus.errors import HomarusError, RuntimeFailure, Unavailable
from homarus.io_lane import run_on_lane
from homarus.messages import AssistantMessage, Message, TextContent, UserMessage
from homarus.plugins import events as ev
from homarus.plugins.runner import HookRunner
from homarus.providers.registry import ModelRegistry
from homarus.queue.lanes import LaneQueue
from homarus.sessions.keys import SessionKey
from homarus.sessions.manager import SessionManager, SessionRef
from homarus.sessions.transcript import Transcript
from homarus.tools.base import ToolContext, ToolRegistry, tool_schema_tool

if TYPE_CHECKING:
    from homarus.skills.prompt import SkillsPrompt

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
            outcome = await self._run_loop(req, active, translator, cfg)
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
        if not active.done.done():
            active.done.set_result(outcome)
        return outcome

    def _audit_for(self, req: RunRequest) -> RunAudit:
        assert self.wiring.audit is not None
        key = req.session_key
        audit = RunAudit(self.wiring.audit, req.run_id, key.canonical, key.agent_id)
        audit.run_start(trigger=req.trigger, channel=req.channel, origin=req.origin, model=req.model)
        return audit

    def _time_out(self, active: ActiveRun) -> None:
        active.timed_out = True
        active.abort_origin = "timeout"
        active.abort.set()

    async def _run_loop(
        self, req: RunRequest, active: ActiveRun, translator: EventTranslator, cfg: HomarusConfig
    ) -> RunOutcome:
        key = req.session_key
        ws = setup.workspace_dir(key.agent_id, cfg, self.state_dir)
        # all the file work a run needs before the model, in one trip to a worker thread
        skill_dirs = self.wiring.skill_dirs
        loaded = await run_on_lane(self._load, req, active, cfg, ws, skill_dirs)
        ref, history, ids, injections, files, point, skills = loaded
        ctx = ev.HookContext(
            agent_id=key.agent_id,
            session_key=key.canonical,
            session_id=ref.entry.session_id,
            run_id=req.run_id,
            trigger=req.trigger,
        )
        audit = self._audit_for(req) if self.wiring.audit is not None else None
        active.audit = audit
        hooks = RuntimeHooks(self.hooks, ctx, self.spawn, abort=active.abort, approve=self.approve, audit=audit)
        phases = RunPhases(hooks)
        if not req.external_delivery:  # a chat channel fires it per message, with its own context
            hooks.fire(
                "message_received",
                ev.MessageReceivedEvent(
                    req.message, channel=req.channel, session_key=key.canonical, run_id=req.run_id, context=ctx
                ),
            )
        if ref.created:
            hooks.fire("session_start", ev.SessionStartEvent(ref.entry.session_id, key.canonical, context=ctx))
        override = await phases.resolve_model(req.message)
        transcript = self.sessions.transcript_for(ref)
        entry_ids: dict[int, str] = {id(m): i for m, i in zip(history, ids, strict=True) if i}
        prepare = self.wiring.tool_prepare  # starts lazy tool servers (MCP) for this agent
        hidden: set[str] = await prepare(key.agent_id) if prepare is not None else set()
        tools = {t.name: t for t in self.tools.tools() if t.name not in hidden}
        candidates = setup.model_chain(self.models, cfg, key, req.model or override, ref.entry.model_override)
        policy_key = req.policy_key or key
        if self.wiring.tool_filter is not None:
            allowed = self.wiring.tool_filter(policy_key, candidates[0].info.provider, candidates[0].info.id)
            tools = {n: t for n, t in tools.items() if n in allowed}
        if req.policy_key is not None:  # deny by default: no filter wired means no tools
            kept = self.wiring.untrusted_filter(req, set(tools)) if self.wiring.untrusted_filter is not None else set()
            tools = {n: t for n, t in tools.items() if n in kept}
        if cfg.tools.lazy_schemas and tools:
            schema_tool = tool_schema_tool(tools)
            tools = {**tools, schema_tool.name: schema_tool}
        files = await self._bootstrap(key, ws, files)
        if "read" not in tools:
            skills = None  # a listed skill could not be opened
        base_prompt = setup.system_prompt(
            cfg,
            key,
            ws,
            [t.spec for t in tools.values()],
            candidates[0].info.ref,
            channel=req.channel,
            extra=req.extra_system_prompt,
            thinking=req.thinking,
            files=files,
            skills=skills.text if skills else None,
        )
        needs_history = any(
            self.hooks.has(h)
            for h in ("agent_turn_prepare", "before_prompt_build", "before_agent_start", "before_agent_run")
        )
        history_json = [m.to_json() for m in history] if needs_history else []  # only when a hook reads it
        changes = await phases.prompt_changes(req.message, history_json, injections, base_prompt)
        if changes.model_override and not (req.model or override):
            candidates = setup.model_chain(self.models, cfg, key, changes.model_override, None)
        if changes.tools_allow is not None:
            tools = {n: t for n, t in tools.items() if n in changes.tools_allow}
        translator.lifecycle_start(active.started_at)
        blocked = await phases.gate(req.message, changes.system_prompt, history_json, req.channel)
        if blocked is not None:
            # a blocked run keeps only the plugin's replacement text, never the original prompt
            stored = UserMessage(blocked.message or "[message withheld by a plugin]")
            await run_on_lane(self._write, transcript, phases, req.run_id, [stored])
            return await self._end(req, active, translator, ctx, hooks, error=f"run blocked: {blocked.reason}")
        prompts: list[Message] = []
        if point.final is not None:  # it had answered before the restart: only the bookkeeping is left
            return await self._end(
                req, active, translator, ctx, hooks, final=point.final, model_ref=model_ref_of(point.final)
            )
        if not point.started:
            user = UserMessage(request_content(req))
            written = (await run_on_lane(self._write, transcript, phases, req.run_id, [user], joined=req.joined))[0]
            if written is not None:
                entry_ids[id(user)] = written["id"]
            claimed = await phases.claim_reply(req.message)
            if claimed is not None:
                reply = AssistantMessage(
                    [TextContent(claimed.reply or "")], api="plugin", provider="plugin", model="before_agent_reply"
                )
                await run_on_lane(self._write, transcript, phases, req.run_id, [reply])
                return await self._end(req, active, translator, ctx, hooks, final=reply, model_ref="plugin")
            model_user = user
            if changes.prepend or changes.append:  # what the model sees; the transcript keeps the user's words
                text = "\n\n".join(x for x in (changes.prepend, req.message, changes.append) if x)
                model_user = UserMessage([TextContent(text), *req.images] if req.images else text)
                entry_ids[id(model_user)] = entry_ids.get(id(user), "")
            prompts = [model_user]
        # else: a resumed run continues from its transcript (its own message is in the history)
        compactor = RunCompactor(
            sessions=self.sessions,
            transcript=transcript,
            model=candidates[0],
            active=active,
            translator=translator,
            hooks=hooks,
            entry_ids=entry_ids,
            keep_recent_tokens=cfg.agents.defaults.compaction.keep_recent_tokens,
        )
        d = cfg.agents.defaults
        settings = LoopSettings(
            candidates=candidates,
            system_prompt=changes.system_prompt,
            tools=tools,
            make_tool_context=lambda call_id: self.tool_context(
                key,
                req.run_id,
                call_id,
                ws,
                active.abort,
                skills.read_roots if skills else None,
                policy_key,
                trusted=req.policy_key is None,
            ),
            abort=active.abort,
            emit=stream_tap(self.wiring.raw_stream, req.run_id, translator.handle)
            if self.wiring.raw_stream
            else translator.handle,
            get_steering=active.take_steering,
            get_follow_ups=active.take_follow_ups,
            tool_execution=d.tool_execution,
            max_retries=d.retry.max_retries,
            base_delay_s=d.retry.base_delay_ms / 1000,
            max_delay_s=d.retry.max_delay_ms / 1000,
            sleep=self.sleep,
            on_overflow=lambda h: compactor.compact(h, will_retry=True),
            max_overflow_retries=d.compaction.max_overflow_retries,
            reasoning=req.thinking,
            timeout_s=float(d.timeout_seconds),
            hooks=hooks,
            lazy_tools=cfg.tools.lazy_schemas,
            before_tools=lambda message: write_ahead([message]),
            before_model=lambda messages: write_ahead(messages),
        )
        persisted = {id(m) for m in prompts}

        async def on_turn_end(messages: list[Message]) -> None:
            fresh = [m for m in messages if id(m) not in persisted]
            if fresh:
                rows = await run_on_lane(self._write, transcript, phases, req.run_id, fresh, owners=active.owners)
                for m, row in zip(fresh, rows, strict=True):
                    persisted.add(id(m))
                    if row is not None:
                        entry_ids[id(m)] = row["id"]

        async def write_ahead(messages: list[Message]) -> None:
            await translator.drain()  # earlier turns first: the file keeps the order they happened in
            await on_turn_end(messages)

        translator.on_turn_end = on_turn_end
        active.streaming = True
        result = await run_agent_loop(history, prompts, settings)
        await translator.drain()
        await on_turn_end(result.new_messages)  # anything not yet written (e.g. an aborted turn)
        active.streaming = False
        outcome = await self._end(
            req,
            active,
            translator,
            ctx,
            hooks,
            final=result.final,
            model_ref=result.model_ref,
            messages=result.new_messages,
            phases=phases,
        )
        if outcome.status == "ok" and d.compaction.enabled:
            window = candidates[0].info.context_window
            tokens = compaction.context_tokens(result.history)
            if await claim_memory_flush(
                self.sessions, key, d.compaction, tokens=tokens, window=window, trigger=req.trigger
            ):
                flush = RunRequest(
                    run_id=f"memory-flush-{req.run_id}",
                    session_key=key,
                    message=flush_prompt(),
                    trigger=MEMORY_FLUSH_TRIGGER,
                    queue_mode="followup",
                    origin={"kind": "memory-flush", "after": req.run_id},
                )
                self.spawn(self.submit(flush))
                return outcome  # the flush turn runs next and compacts after writing its notes
            if compaction.should_compact(tokens, window, d.compaction.reserve_tokens_floor):
                try:
                    await compactor.compact(result.history, will_retry=False)
                except HomarusError as exc:
                    log.warning("threshold compaction of %s failed: %s", key, exc.message)
        return outcome

    async def _end(
        self,
        req: RunRequest,
        active: ActiveRun,
        translator: EventTranslator,
        ctx: ev.HookContext,
        hooks: RuntimeHooks,
        *,
        final: AssistantMessage | None = None,
        model_ref: str = "",
        error: str | None = None,
        messages: list[Message] | None = None,
        phases: RunPhases | None = None,
    ) -> RunOutcome:
        """Close the run: outcome, session entry, delivery hooks, lifecycle event, agent_end."""
        if error is not None:
            outcome = failed_outcome(req, active, error)
        else:
            outcome = run_outcome(req, active, final, model_ref, self._config().agents.defaults.timeout_seconds)
        deliver_here = phases is not None and not req.external_delivery
        if deliver_here and phases is not None and outcome.status == "ok" and outcome.text and not outcome.silent:
            to = req.channel or "webchat"
            content = await phases.sending(to, outcome.text)
            if content is None:
                outcome.silent = True  # a plugin cancelled the delivery
            else:
                outcome.text = content
            hooks.fire(
                "message_sent",
                ev.MessageSentEvent(to, outcome.text, content is not None, session_key=ctx.session_key, context=ctx),
            )
        await self.sessions.aupdate_entry(req.session_key, entry_changes(outcome, final))
        translator.lifecycle_end(outcome)
        hooks.fire(
            "agent_end",
            ev.AgentEndEvent(
                req.run_id,
                outcome.status == "ok",
                [m.to_json() for m in messages or []],
                outcome.error,
                outcome.ended_at - outcome.started_at,
                context=ctx,
            ),
        )
        return outcome

    def _load(
        self, req: RunRequest, active: ActiveRun, cfg: HomarusConfig, ws: Path, skill_dirs: Any
    ) -> tuple[SessionRef, list[Message], list[str], list[dict[str, Any]], list[Any], ResumePoint, SkillsPrompt | None]:
        """The start record, then the session entry (marked running), workspace, history, pending
        injections, bootstrap files, the skills section, and for a resumed run where it stood (its
        interrupted tool calls closed as aborted first)."""
        if self.wiring.on_run_start is not None:
            try:
                self.wiring.on_run_start(req.run_id, req.joined)
            except Exception as exc:  # not recorded as started: it must not run (a crash would repeat it)
                log.exception("could not record the start of run %s", req.run_id)
                raise RuntimeFailure(f"could not record the run start: {type(exc).__name__}") from None
        running = {**(req.session_fields or {}), "status": "running", "startedAt": active.started_at}
        running["abortedLastRun"] = None
        ref = self.sessions.ensure(req.session_key, update=running)
        workspace.ensure_workspace(ws)
        transcript = self.sessions.transcript_for(ref)
        point = close_interrupted(transcript, req.run_id, None) if req.resume else ResumePoint()
        history, ids = load_history(transcript)
        injections = self._drain_injections(req.session_key.canonical)
        files = setup.bootstrap_files(cfg, req.session_key, ws)
        skills = setup.skills_prompt(cfg, req.session_key, ws, self.state_dir, skill_dirs, ("read",))
        return ref, history, ids, injections, files, point, skills

    async def _bootstrap(self, key: SessionKey, ws: Path, files: list[Any]) -> list[Any]:
        """The bootstrap files, after the ``agent:bootstrap`` operator hooks saw (and maybe changed) them."""
        if self.wiring.bootstrap_hook is None:
            return files
        context: dict[str, Any] = {"bootstrap_files": files, "workspace": str(ws)}
        event: dict[str, Any] = {
            "type": "agent",
            "action": "bootstrap",
            "sessionKey": key.canonical,
            "messages": [],
            "context": context,
        }
        await self.wiring.bootstrap_hook(event)
        changed = context["bootstrap_files"]
        if not isinstance(changed, list):
            return files
        return [f for f in changed if hasattr(f, "content") and hasattr(f, "name")]

    def _drain_injections(self, session_key: str) -> list[dict[str, Any]]:
        events = self.wiring.system_events(session_key) if self.wiring.system_events is not None else []
        if self.injections is None:
            return events
        drained = self.injections.drain(session_key)
        return [*events, *(dict(i) if isinstance(i, dict) else dataclasses.asdict(i) for i in drained)]

    def _write(
        self,
        transcript: Transcript,
        phases: RunPhases,
        run_id: str,
        messages: list[Message],
        *,
        owners: dict[int, str] | None = None,
        joined: list[str] | None = None,
    ) -> list[dict[str, Any] | None]:
        """Persist messages through the write hooks in one all-or-nothing append, tagged with the run
        (a steered message with the run it came from, ``owners``; a merged prompt also names the runs
        merged into it, ``joined``): after a crash, ``agents/resume.py`` reads where each run stood.

        Returns, per message, its stored entry or None when a hook withheld it.
        """
        tags: list[tuple[dict[str, Any] | None, str]] = [
            (phases.filter_write(bounded(m.to_json())), (owners or {}).get(id(m), run_id)) for m in messages
        ]
        extra: dict[str, Any] = {"joined": joined} if joined else {}
        entries = [{"type": "message", "message": r, "runId": owner, **extra} for r, owner in tags if r is not None]
        stored = iter(transcript.append_many(entries) if entries else [])
        return [next(stored) if r is not None else None for r, _ in tags]

    def tool_context(
        self,
        key: SessionKey,
        run_id: str,
        call_id: str,
        workspace: Path,
        abort: asyncio.Event,
        skill_roots: frozenset[str] | None = None,
        sandbox_key: SessionKey | None = None,
        *,
        trusted: bool = True,
    ) -> ToolContext:
        """A tool call's context; a sandboxed session's tools see the sandbox's workspace.

        ``skill_roots`` (the real dirs of the skills this run's prompt lists) is lent to the
        file tools as ``services.skills``: ``read`` may open files inside them, nowhere else.
        """
        view = self.wiring.sandbox_for(sandbox_key or key) if self.wiring.sandbox_for is not None else None
        ws = view.root if view is not None else workspace
        services = (
            dataclasses.replace(self.wiring.services, skills=skill_roots) if skill_roots else self.wiring.services
        )
        if self.wiring.memory_for is not None:
            services = dataclasses.replace(services, memory=self.wiring.memory_for(key.agent_id))
        return ToolContext(
            key.canonical, key.agent_id, run_id, call_id, ws, abort, services, sandbox=view, trusted=trusted
        )

    def workspace_dir(self, agent_id: str, cfg: HomarusConfig) -> Path:
        return setup.workspace_dir(agent_id, cfg, self.state_dir)


def _now_ms() -> int:
    return int(time.time() * 1000)


_tasks: set[asyncio.Task[Any]] = set()


def _background(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(coro)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task
