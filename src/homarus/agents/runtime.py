"""Runs: a message in a session becomes a loop over the model and tools, persisted and streamed.

Each run is double-enqueued (its session's lane, then a global lane), resolves its model chain,
builds the system prompt from the workspace, replays the transcript, runs the loop, writes every
turn to the transcript as it completes, and reports events with a per-run ``seq``. A message for
a session that is already running is handled by the queue mode (steer, followup, collect,
interrupt).
"""

from __future__ import annotations

import asyncio
import logging
import platform
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from homarus.agents import compaction, prompt, workspace
from homarus.agents.events import LoopEvent
from homarus.agents.history import load_history, persist_messages, previous_summary
from homarus.agents.loop import LoopSettings, run_agent_loop
from homarus.agents.runs import ActiveRun, RunOutcome, RunRegistry
from homarus.agents.stream import EventTranslator
from homarus.config.schema import HomarusConfig
from homarus.errors import HomarusError, InvalidRequest, Unavailable
from homarus.messages import Context, Done, ImageContent, Message, StreamError, StreamOptions, TextContent, UserMessage
from homarus.providers.registry import BUILTIN_MODEL, ModelRegistry, ResolvedModel
from homarus.queue.lanes import LaneQueue
from homarus.sessions.keys import SessionKey
from homarus.sessions.manager import SessionManager, SessionRef
from homarus.tools.base import Tool, ToolContext, ToolRegistry

__all__ = ["AgentRuntime", "QueueMode", "RunRequest"]

log = logging.getLogger("homarus.agents")
QueueMode = Literal["steer", "followup", "collect", "interrupt"]
EventSink = Callable[[dict[str, Any]], None]


@dataclass(kw_only=True)
class RunRequest:
    run_id: str
    session_key: SessionKey
    message: str
    images: list[ImageContent] = field(default_factory=list)
    model: str | None = None
    thinking: str | None = None
    timeout_s: float | None = None
    lane: str = "main"
    extra_system_prompt: str | None = None
    channel: str | None = None
    queue_mode: QueueMode | None = None


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
        services: dict[str, Any] | None = None,
    ) -> None:
        self._config = config
        self.sessions = sessions
        self.models = models
        self.tools = tools
        self.lanes = lanes
        self.state_dir = state_dir
        self.on_event = on_event
        self.services = services or {}
        self.runs = RunRegistry()
        self._collect: dict[str, tuple[list[str], asyncio.Future[RunOutcome]]] = {}
        self.sleep: Callable[[float], Any] = asyncio.sleep

    # -- submission and queue modes -------------------------------------------------------------
    async def submit(self, req: RunRequest) -> RunOutcome:
        """Run ``req`` now, or fold it into the session's running work per the queue mode."""
        cfg = self._config()
        mode = req.queue_mode or cfg.messages.queue.mode
        key = req.session_key.canonical
        active = self.runs.for_session(key)
        if active is None:
            return await self.run(req)
        if mode == "interrupt":
            self.abort(key, origin="interrupt")
            self.lanes.clear(f"session:{key}")
            return await self.run(req)
        if mode == "steer" and not active.compacting and not active.abort.is_set():
            active.steering.append(UserMessage(_content(req)))
            self.runs.alias(req.run_id, active)
            return await asyncio.shield(active.done)
        waiting = next((s.waiting for s in self.lanes.stats() if s.lane == f"session:{key}"), 0)
        if waiting >= cfg.messages.queue.cap and cfg.messages.queue.drop == "new":
            raise Unavailable(f"session queue is full ({waiting} waiting); message dropped", retryable=True)
        if mode == "collect":
            return await self._collect_into(req)
        return await self.run(req)

    async def _collect_into(self, req: RunRequest) -> RunOutcome:
        key = req.session_key.canonical
        pending = self._collect.get(key)
        if pending is not None:
            pending[0].append(req.message)
            return await asyncio.shield(pending[1])
        texts = [req.message]
        future: asyncio.Future[RunOutcome] = asyncio.get_running_loop().create_future()
        self._collect[key] = (texts, future)

        async def merged() -> RunOutcome:
            self._collect.pop(key, None)  # messages arriving from now on start a new batch
            parts = ["[Queued messages while agent was busy]"]
            for i, text in enumerate(texts, 1):
                parts += ["---", f"Queued #{i}", text]
            merged_req = RunRequest(**{**req.__dict__, "message": "\n".join(parts) if len(texts) > 1 else texts[0]})
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

    def steer(self, session_key: str, text: str) -> bool:
        run = self.runs.for_session(session_key)
        if run is None or run.compacting or run.abort.is_set():
            return False
        run.steering.append(UserMessage(text))
        return True

    # -- one run --------------------------------------------------------------------------------
    async def _execute(self, req: RunRequest) -> RunOutcome:
        cfg = self._config()
        key = req.session_key
        active = ActiveRun(req.run_id, key.canonical)
        self.runs.start(active)
        translator = EventTranslator(req.run_id, key.canonical, self.on_event, verbose=False)
        timeout = req.timeout_s or float(cfg.agents.defaults.timeout_seconds)
        timer = asyncio.get_running_loop().call_later(timeout, self._time_out, active)
        try:
            outcome = await self._run_loop(req, active, translator, cfg)
        except HomarusError as exc:
            outcome = self._failed(req, active, exc.message)
            translator.lifecycle_error(exc.message)
        except Exception as exc:  # a bug must still end the run visibly, never hang its waiters
            log.exception("run %s failed", req.run_id)
            outcome = self._failed(req, active, f"internal error: {type(exc).__name__}")
            translator.lifecycle_error(outcome.error or "error")
        finally:
            timer.cancel()
            self.runs.end(active)
        if not active.done.done():
            active.done.set_result(outcome)
        return outcome

    def _time_out(self, active: ActiveRun) -> None:
        active.timed_out = True
        active.abort_origin = "timeout"
        active.abort.set()

    def _failed(self, req: RunRequest, active: ActiveRun, error: str) -> RunOutcome:
        return RunOutcome(
            req.run_id,
            req.session_key.canonical,
            "error",
            started_at=active.started_at,
            ended_at=_now_ms(),
            stop_reason="error",
            error=error,
        )

    async def _run_loop(
        self, req: RunRequest, active: ActiveRun, translator: EventTranslator, cfg: HomarusConfig
    ) -> RunOutcome:
        ref = await asyncio.to_thread(self.sessions.ensure, req.session_key)
        candidates = self._candidates(req, ref, cfg)
        transcript = self.sessions.transcript_for(ref)
        ws = self.workspace_dir(req.session_key.agent_id, cfg)
        history, ids = await asyncio.to_thread(self._prepare, transcript, ws)
        tools = {t.name: t for t in self.tools.tools()}
        system_prompt = self._system_prompt(req, cfg, ws, list(tools.values()), candidates[0].info.ref)
        entry_ids: dict[int, str] = {id(m): i for m, i in zip(history, ids, strict=True) if i}
        await asyncio.to_thread(
            self.sessions.update_entry,
            req.session_key,
            {"status": "running", "startedAt": active.started_at, "abortedLastRun": None},
        )
        user = UserMessage(_content(req))
        written = await asyncio.to_thread(persist_messages, transcript, [user])
        entry_ids[id(user)] = written[0]["id"]
        translator.lifecycle_start(active.started_at)
        active.streaming = True

        def emit(event: LoopEvent) -> None:
            translator.handle(event)

        settings = LoopSettings(
            candidates=candidates,
            system_prompt=system_prompt,
            tools=tools,
            make_tool_context=lambda call_id: ToolContext(
                req.session_key.canonical,
                req.session_key.agent_id,
                req.run_id,
                call_id,
                ws,
                active.abort,
                self.services,
            ),
            abort=active.abort,
            emit=emit,
            get_steering=active.take_steering,
            get_follow_ups=active.take_follow_ups,
            tool_execution=cfg.agents.defaults.tool_execution,
            max_retries=cfg.agents.defaults.retry.max_retries,
            base_delay_s=cfg.agents.defaults.retry.base_delay_ms / 1000,
            max_delay_s=cfg.agents.defaults.retry.max_delay_ms / 1000,
            sleep=self.sleep,
            on_overflow=lambda h: self._compact(h, active, translator, candidates[0], transcript, entry_ids, cfg, True),
            max_overflow_retries=cfg.agents.defaults.compaction.max_overflow_retries,
            reasoning=req.thinking,
            timeout_s=float(cfg.agents.defaults.timeout_seconds),
        )
        persisted = {id(user)}

        async def on_turn_end(messages: list[Message]) -> None:
            fresh = [m for m in messages if id(m) not in persisted]
            if fresh:
                rows = await asyncio.to_thread(persist_messages, transcript, fresh)
                for m, row in zip(fresh, rows, strict=True):
                    persisted.add(id(m))
                    entry_ids[id(m)] = row["id"]

        translator.on_turn_end = on_turn_end
        result = await run_agent_loop(history, [user], settings)
        await translator.drain()
        await on_turn_end(result.new_messages)  # anything not yet written (e.g. an aborted turn)
        active.streaming = False
        outcome = self._outcome(req, active, result.final, result.model_ref)
        await asyncio.to_thread(self._finish_entry, req.session_key, outcome, result.final)
        translator.lifecycle_end(outcome)
        if outcome.status == "ok" and cfg.agents.defaults.compaction.enabled:
            window = candidates[0].info.context_window
            reserve = cfg.agents.defaults.compaction.reserve_tokens_floor
            if compaction.should_compact(compaction.context_tokens(result.history), window, reserve):
                try:
                    await self._compact(
                        result.history, active, translator, candidates[0], transcript, entry_ids, cfg, False
                    )
                except HomarusError as exc:
                    log.warning("threshold compaction of %s failed: %s", req.session_key, exc.message)
        return outcome

    def _prepare(self, transcript: Any, ws: Path) -> tuple[list[Message], list[str]]:
        workspace.ensure_workspace(ws)
        return load_history(transcript)

    def workspace_dir(self, agent_id: str, cfg: HomarusConfig) -> Path:
        entry = next((a for a in cfg.agents.list if a.id == agent_id), None)
        raw = (entry.workspace if entry and entry.workspace else None) or cfg.agents.defaults.workspace
        if raw:
            return Path(raw).expanduser()
        return self.state_dir / ("workspace" if agent_id == cfg.agents.default_id else f"workspace-{agent_id}")

    def _system_prompt(self, req: RunRequest, cfg: HomarusConfig, ws: Path, tools: list[Tool], model_ref: str) -> str:
        d = cfg.agents.defaults
        files = workspace.load_bootstrap_files(
            ws,
            max_chars=d.bootstrap_max_chars,
            total_max_chars=d.bootstrap_total_max_chars,
            subagent=req.session_key.kind == "subagent",
        )
        entry = next((a for a in cfg.agents.list if a.id == req.session_key.agent_id), None)
        return prompt.build_system_prompt(
            prompt.PromptInputs(
                agent_name=(entry.name if entry and entry.name else req.session_key.agent_id),
                tools=[t.spec for t in tools],
                workspace=ws,
                bootstrap=files,
                timezone=d.user_timezone,
                model_ref=model_ref,
                channel=req.channel,
                mode="minimal" if req.session_key.kind == "subagent" else "full",
                extra_system_prompt=req.extra_system_prompt,
                host=socket.gethostname(),
                os_name=platform.system(),
                thinking=req.thinking,
            )
        )

    def _candidates(self, req: RunRequest, ref: SessionRef, cfg: HomarusConfig) -> list[ResolvedModel]:
        agent = next((a for a in cfg.agents.list if a.id == req.session_key.agent_id), None)
        choice = agent.model if agent and agent.model else cfg.agents.defaults.model
        primary = req.model or ref.entry.model_override or choice.primary or BUILTIN_MODEL
        refs = [primary, *choice.fallbacks]
        if choice.primary and choice.primary not in refs:
            refs.append(choice.primary)
        seen: list[str] = []
        for r in refs:
            if r not in seen:
                seen.append(r)
        resolved = []
        for i, r in enumerate(seen):
            try:
                resolved.append(self.models.resolve(r))
            except InvalidRequest:
                if i == 0:
                    raise
                log.warning("skipping unresolvable fallback model %s", r)
        return resolved

    def _outcome(self, req: RunRequest, active: ActiveRun, final: Any, model_ref: str) -> RunOutcome:
        ended = _now_ms()
        text = final.text if final is not None else ""
        stop = final.stop_reason if final is not None else "stop"
        usage = final.usage.to_json() if final is not None else {}
        if active.timed_out:
            status: Any = "timeout"
        elif stop == "aborted" or active.abort.is_set():
            status = "aborted"
        elif stop == "error":
            status = "error"
        else:
            status = "ok"
        silent = prompt.strip_silent(text) is None if text else False
        error = final.error_message if final is not None and status in ("error", "timeout") else None
        if status == "timeout":
            error = f"run timed out after {req.timeout_s or self._config().agents.defaults.timeout_seconds}s"
        return RunOutcome(
            req.run_id,
            req.session_key.canonical,
            status,
            text,
            active.started_at,
            ended,
            stop,
            error,
            model_ref,
            usage,
            silent,
        )

    def _finish_entry(self, key: SessionKey, outcome: RunOutcome, final: Any) -> None:
        status = {"ok": "done", "error": "failed", "timeout": "timeout", "aborted": "killed"}[outcome.status]
        changes: dict[str, Any] = {
            "status": status,
            "endedAt": outcome.ended_at,
            "runtimeMs": outcome.ended_at - outcome.started_at,
            "abortedLastRun": True if outcome.status in ("aborted", "timeout") else None,
        }
        if final is not None and final.usage.total_tokens:
            changes.update(
                inputTokens=final.usage.input,
                outputTokens=final.usage.output,
                totalTokens=final.usage.total_tokens,
                model=final.model,
                modelProvider=final.provider,
            )
        self.sessions.update_entry(key, changes)

    async def _compact(
        self,
        history: list[Message],
        active: ActiveRun,
        translator: EventTranslator,
        model: ResolvedModel,
        transcript: Any,
        entry_ids: dict[int, str],
        cfg: HomarusConfig,
        will_retry: bool,
    ) -> list[Message] | None:
        active.compacting = True
        translator.compaction("start", will_retry)
        try:
            previous = await asyncio.to_thread(previous_summary, transcript)
            result = await compaction.compact(
                history,
                previous_summary=previous,
                keep_recent_tokens=cfg.agents.defaults.compaction.keep_recent_tokens,
                summarize=lambda system, text: self._summarize(model, system, text, active.abort),
            )
            if result is None:
                return None
            kept = history[result.first_kept_index]
            first_kept = entry_ids.get(id(kept))
            if not first_kept:
                return None  # the cut would keep a message we never stored: cannot describe it
            await asyncio.to_thread(
                transcript.append,
                {
                    "type": "compaction",
                    "summary": result.summary,
                    "firstKeptEntryId": first_kept,
                    "tokensBefore": result.tokens_before,
                },
            )
            await asyncio.to_thread(self._count_compaction, active.session_key)
            return [compaction.summary_message(result.summary), *history[result.first_kept_index :]]
        finally:
            active.compacting = False
            translator.compaction("end", will_retry)

    def _count_compaction(self, session_key: str) -> None:
        key = self.sessions.resolve_key(session_key)
        ref = self.sessions.get(key)
        if ref is not None:
            self.sessions.update_entry(key, {"compactionCount": (ref.entry.compaction_count or 0) + 1})

    async def _summarize(self, model: ResolvedModel, system: str, text: str, abort: asyncio.Event) -> str:
        context = Context(system, [UserMessage(text)], [])
        options = StreamOptions(api_key=model.api_key, abort=abort)
        final = None
        async for event in model.provider.stream(model.info, context, options):
            if isinstance(event, Done):
                final = event.message
            elif isinstance(event, StreamError):
                raise Unavailable(f"summarizing for compaction failed: {event.message.error_message}")
        return final.text if final is not None else ""


def _content(req: RunRequest) -> str | list[TextContent | ImageContent]:
    if not req.images:
        return req.message
    return [TextContent(req.message), *req.images]


def _now_ms() -> int:
    return int(time.time() * 1000)


def new_run_id() -> str:
    return str(uuid.uuid4())
