"""One run, from its start record to its outcome: an explicit state machine.

A run goes through these steps, each a method that does its work and names the next one::

    LOAD ─▶ PREPARE ─▶ GATE ─▶ RECORD ─▶ LOOP ─▶ END ─▶ MAINTAIN ─▶ DONE
                        │        │                ▲
                        └────────┴──── (ends) ────┘

* ``LOAD``: in one trip to the file lane, the start record, the session (marked running), the
  history, pending injections, bootstrap files and skills; the hook context; the
  ``message_received`` and ``session_start`` hooks.
* ``PREPARE``: the model chain, the tools this run may use (the sender's policy), the system
  prompt and what plugins change in it; the lifecycle ``start`` event.
* ``GATE``: a plugin may block the run (→ ``END`` with the plugin's replacement text stored).
* ``RECORD``: the user's message into the transcript; a resumed run that had answered before the
  restart, or a reply a plugin claims, ends here (→ ``END``).
* ``LOOP``: the model and tool loop, each turn written as it completes.
* ``END``: the outcome, the session entry, the delivery hooks, the lifecycle ``end`` event.
* ``MAINTAIN``: after a completed loop, a memory flush turn or threshold compaction.

The runtime (``runtime.py``) owns queueing, the run registry and the timeout; this module owns
what happens inside one run.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from homarus.agents import compaction, setup, workspace
from homarus.agents.compactor import RunCompactor
from homarus.agents.history import EntryIds, load_history
from homarus.agents.hook_bridge import RunPhases, RuntimeHooks
from homarus.agents.loop import LoopResult, LoopSettings, run_agent_loop
from homarus.agents.memory_flush import MEMORY_FLUSH_TRIGGER, claim_memory_flush, flush_prompt
from homarus.agents.outcome import bounded, entry_changes, failed_outcome, model_ref_of, run_outcome
from homarus.agents.raw_stream import stream_tap
from homarus.agents.request import RunRequest, request_content
from homarus.agents.resume import ResumePoint, close_interrupted
from homarus.audit.trail import RunAudit
from homarus.errors import HomarusError, RuntimeFailure
from homarus.io_lane import run_on_lane
from homarus.messages import AssistantMessage, Message, TextContent, UserMessage
from homarus.plugins import events as ev
from homarus.tools.base import tool_schema_tool

if TYPE_CHECKING:
    from pathlib import Path

    from homarus.agents.hook_bridge import ApprovalFn, PromptChanges
    from homarus.agents.runs import ActiveRun, RunOutcome
    from homarus.agents.stream import EventTranslator
    from homarus.agents.wiring import RuntimeWiring
    from homarus.config.schema import HomarusConfig
    from homarus.plugins.runner import HookRunner
    from homarus.providers.registry import ModelRegistry, ResolvedModel
    from homarus.sessions.backend import TranscriptLog
    from homarus.sessions.manager import SessionManager, SessionRef
    from homarus.skills.prompt import SkillsPrompt
    from homarus.tools.base import Tool, ToolRegistry

    #: what a run's first trip to the lane brings back (see :meth:`Turn._load_files`)
    Loaded = tuple[
        SessionRef,
        list[Message],
        list[str],
        list[dict[str, Any]],
        list[Any],
        ResumePoint,
        SkillsPrompt | None,
        tuple[UserMessage, dict[str, Any] | None] | None,
    ]

__all__ = ["Step", "Turn", "TurnHost"]

log = logging.getLogger("homarus.agents")


class TurnHost(Protocol):
    """What a run uses of its runtime (``runtime.AgentRuntime``)."""

    state_dir: Path
    wiring: RuntimeWiring
    sessions: SessionManager
    models: ModelRegistry
    tools: ToolRegistry
    hooks: HookRunner
    approve: ApprovalFn | None
    injections: Any
    spawn: Callable[[Coroutine[Any, Any, Any]], Any]
    sleep: Callable[[float], Any]

    def config(self) -> HomarusConfig: ...
    async def submit(self, req: RunRequest) -> RunOutcome: ...


class Step(enum.Enum):
    LOAD = "load"
    PREPARE = "prepare"
    GATE = "gate"
    RECORD = "record"
    LOOP = "loop"
    END = "end"
    MAINTAIN = "maintain"
    DONE = "done"


@dataclass(slots=True)
class Ending:
    """How the run ends, as the step that ended it says."""

    final: AssistantMessage | None = None
    model_ref: str = ""
    error: str | None = None
    messages: list[Message] | None = None
    #: the reply is delivered by this run (``message_sending``/``message_sent``), not by a channel
    deliver: bool = False


class Turn:
    """One run's state as it moves through the steps (see the module docstring)."""

    def __init__(
        self, rt: TurnHost, req: RunRequest, active: ActiveRun, translator: EventTranslator, cfg: HomarusConfig
    ) -> None:
        self.rt, self.req, self.active, self.translator, self.cfg = rt, req, active, translator, cfg
        self.key = req.session_key
        self.ws = setup.workspace_dir(self.key.agent_id, cfg, rt.state_dir)
        self.ending = Ending()
        self.result: LoopResult | None = None
        self.outcome: RunOutcome | None = None
        self.steps: dict[Step, Callable[[], Awaitable[Step]]] = {
            Step.LOAD: self.load,
            Step.PREPARE: self.prepare,
            Step.GATE: self.gate,
            Step.RECORD: self.record,
            Step.LOOP: self.loop,
            Step.END: self.end,
            Step.MAINTAIN: self.maintain,
        }

    async def run(self) -> RunOutcome:
        step = Step.LOAD
        try:
            while step is not Step.DONE:
                step = await self.steps[step]()
        finally:
            await self._sync_transcript()  # a run that failed after its message
        assert self.outcome is not None  # END always sets it
        return self.outcome

    # -- LOAD ---------------------------------------------------------------------------------------
    async def load(self) -> Step:
        req, key = self.req, self.key
        # all the file work a run needs before the model, in one trip to a worker thread; the run's
        # message too when no plugin may withhold it or change how it is written (a gate, a write
        # hook): one trip less before the model is asked
        hooks = self.rt.hooks
        record_now = not req.resume and not hooks.has("before_agent_run") and not hooks.has("before_message_write")
        loaded = await run_on_lane(self._load_files, self.rt.wiring.skill_dirs, record_now)
        self.ref, self.history, self.ids, self.injections, self.files, self.point, self.skills, self.recorded = loaded
        self.ctx = ev.HookContext(
            agent_id=key.agent_id,
            session_key=key.canonical,
            session_id=self.ref.entry.session_id,
            run_id=req.run_id,
            trigger=req.trigger,
        )
        audit = self._audit() if self.rt.wiring.audit is not None else None
        self.active.audit = audit
        rt = self.rt
        self.hooks = RuntimeHooks(
            rt.hooks,
            self.ctx,
            rt.spawn,
            abort=self.active.abort,
            approve=rt.approve,
            audit=audit,
            usage=self.active.model_usage if rt.wiring.on_run_usage is not None else None,
        )
        self.phases = RunPhases(self.hooks)
        if not req.external_delivery:  # a chat channel fires it per message, with its own context
            self.hooks.fire(
                "message_received",
                lambda: ev.MessageReceivedEvent(
                    req.message, channel=req.channel, session_key=key.canonical, run_id=req.run_id, context=self.ctx
                ),
            )
        if self.ref.created:
            self.hooks.fire(
                "session_start",
                lambda: ev.SessionStartEvent(self.ref.entry.session_id, key.canonical, context=self.ctx),
            )
        return Step.PREPARE

    def _load_files(self, skill_dirs: Any, record_now: bool) -> Loaded:
        """The start record, then the session entry (marked running), workspace, history, pending
        injections, bootstrap files, the skills section, for a resumed run where it stood (its
        interrupted tool calls closed as aborted first), and with ``record_now`` the run's message
        written (unsynced, as :meth:`record` would) after the history was read."""
        req, cfg, wiring = self.req, self.cfg, self.rt.wiring
        if wiring.on_run_start is not None:
            try:
                wiring.on_run_start(req.run_id, req.joined)
            except Exception as exc:  # not recorded as started: it must not run (a crash would repeat it)
                log.exception("could not record the start of run %s", req.run_id)
                raise RuntimeFailure(f"could not record the run start: {type(exc).__name__}") from None
        running = {**(req.session_fields or {}), "status": "running", "startedAt": self.active.started_at}
        running["abortedLastRun"] = None
        # status and times only: a power cut may lose them (never a message), and the end of the
        # run writes them again; one fsync less before the model is asked
        ref = self.rt.sessions.ensure(req.session_key, update=running, synced=False)
        workspace.ensure_workspace(self.ws)
        transcript = self.rt.sessions.transcript_for(ref)
        point = close_interrupted(transcript, req.run_id, None) if req.resume else ResumePoint()
        history, ids = load_history(transcript)
        injections = self._drain_injections()
        files = setup.bootstrap_files(cfg, req.session_key, self.ws)
        skills = setup.skills_prompt(cfg, req.session_key, self.ws, self.rt.state_dir, skill_dirs, ("read",))
        recorded = None
        if record_now:
            user = UserMessage(request_content(req))
            recorded = user, write_messages(transcript, _as_is, req.run_id, [user], None, req.joined, synced=False)[0]
        return ref, history, ids, injections, files, point, skills, recorded

    def _drain_injections(self) -> list[dict[str, Any]]:
        key, wiring = self.key.canonical, self.rt.wiring
        events = wiring.system_events(key) if wiring.system_events is not None else []
        if self.rt.injections is None:
            return events
        drained = self.rt.injections.drain(key)
        return [*events, *(dict(i) if isinstance(i, dict) else dataclasses.asdict(i) for i in drained)]

    def _audit(self) -> RunAudit:
        assert self.rt.wiring.audit is not None
        req, key = self.req, self.key
        audit = RunAudit(self.rt.wiring.audit, req.run_id, key.canonical, key.agent_id)
        audit.run_start(trigger=req.trigger, channel=req.channel, origin=req.origin, model=req.model)
        return audit

    # -- PREPARE ------------------------------------------------------------------------------------
    async def prepare(self) -> Step:
        rt, req, key, cfg = self.rt, self.req, self.key, self.cfg
        override = await self.phases.resolve_model(req.message)
        self.override = override
        self.transcript: TranscriptLog = rt.sessions.transcript_for(self.ref)
        self.entry_ids = EntryIds(self.history, self.ids)
        prepare = rt.wiring.tool_prepare  # starts lazy tool servers (MCP) for this agent
        hidden: set[str] = await prepare(key.agent_id) if prepare is not None else set()
        tools = {t.name: t for t in rt.tools.tools() if t.name not in hidden}
        candidates = setup.model_chain(rt.models, cfg, key, req.model or override, self.ref.entry.model_override)
        self.policy_key = req.policy_key or key
        if rt.wiring.tool_filter is not None:
            allowed = rt.wiring.tool_filter(self.policy_key, candidates[0].info.provider, candidates[0].info.id)
            tools = {n: t for n, t in tools.items() if n in allowed}
        if req.policy_key is not None:  # deny by default: no filter wired means no tools
            untrusted = rt.wiring.untrusted_filter
            kept = untrusted(req, set(tools)) if untrusted is not None else set()
            tools = {n: t for n, t in tools.items() if n in kept}
        lazy = cfg.tools.lazy_schemas or (cfg.tools.deferred_schemas and any(t.deferred for t in tools.values()))
        if lazy and tools:
            schema_tool = tool_schema_tool(tools)
            tools = {**tools, schema_tool.name: schema_tool}
        files = await self._bootstrap(self.files)
        if "read" not in tools:
            self.skills = None  # a listed skill could not be opened
        base_prompt = setup.system_prompt(
            cfg,
            key,
            self.ws,
            list(tools),
            candidates[0].info.ref,
            channel=req.channel,
            extra=req.extra_system_prompt,
            thinking=req.thinking,
            files=files,
            skills=self.skills.text if self.skills else None,
        )
        needs_history = any(
            rt.hooks.has(h)
            for h in ("agent_turn_prepare", "before_prompt_build", "before_agent_start", "before_agent_run")
        )
        self.history_json = [m.to_json() for m in self.history] if needs_history else []  # only when a hook reads it
        changes = await self.phases.prompt_changes(req.message, self.history_json, self.injections, base_prompt)
        if changes.model_override and not (req.model or override):
            candidates = setup.model_chain(rt.models, cfg, key, changes.model_override, None)
        if changes.tools_allow is not None:
            tools = {n: t for n, t in tools.items() if n in changes.tools_allow}
        self.changes: PromptChanges = changes
        self.candidates: list[ResolvedModel] = candidates
        self.run_tools: dict[str, Tool] = tools
        self.translator.lifecycle_start(self.active.started_at)
        return Step.GATE

    async def _bootstrap(self, files: list[Any]) -> list[Any]:
        """The bootstrap files, after the ``agent:bootstrap`` operator hooks saw (and maybe changed) them."""
        hook = self.rt.wiring.bootstrap_hook
        if hook is None:
            return files
        context: dict[str, Any] = {"bootstrap_files": files, "workspace": str(self.ws)}
        event: dict[str, Any] = {
            "type": "agent",
            "action": "bootstrap",
            "sessionKey": self.key.canonical,
            "messages": [],
            "context": context,
        }
        await hook(event)
        changed = context["bootstrap_files"]
        if not isinstance(changed, list):
            return files
        return [f for f in changed if hasattr(f, "content") and hasattr(f, "name")]

    # -- GATE ---------------------------------------------------------------------------------------
    async def gate(self) -> Step:
        req = self.req
        blocked = await self.phases.gate(req.message, self.changes.system_prompt, self.history_json, req.channel)
        if blocked is None:
            return Step.RECORD
        # a blocked run keeps only the plugin's replacement text, never the original prompt
        stored = UserMessage(blocked.message or "[message withheld by a plugin]")
        await self._write([stored])
        self.ending = Ending(error=f"run blocked: {blocked.reason}")
        return Step.END

    # -- RECORD -------------------------------------------------------------------------------------
    async def record(self) -> Step:
        req, point = self.req, self.point
        self.prompts: list[Message] = []
        if point.final is not None:  # it had answered before the restart: only the bookkeeping is left
            self.ending = Ending(final=point.final, model_ref=model_ref_of(point.final))
            return Step.END
        if point.started:
            return Step.LOOP  # a resumed run continues from its transcript (its own message is in the history)
        # not fsynced before the model is asked (the reply's append, or the end of the run, syncs
        # the file): if power fails meanwhile the run journal, synced, still has the run, and the
        # run resumed after the restart writes the message again when the transcript lacks it
        if self.recorded is not None:  # written in the first trip already
            user, written = self.recorded
        else:
            user = UserMessage(request_content(req))
            written = (await self._write([user], joined=req.joined, synced=False))[0]
        if written is not None:
            self.entry_ids[user] = written["id"]
        claimed = await self.phases.claim_reply(req.message)
        if claimed is not None:
            reply = AssistantMessage(
                [TextContent(claimed.reply or "")], api="plugin", provider="plugin", model="before_agent_reply"
            )
            await self._write([reply])
            self.ending = Ending(final=reply, model_ref="plugin")
            return Step.END
        model_user = user
        changes = self.changes
        if changes.prepend or changes.append:  # what the model sees; the transcript keeps the user's words
            text = "\n\n".join(x for x in (changes.prepend, req.message, changes.append) if x)
            model_user = UserMessage([TextContent(text), *req.images] if req.images else text)
            self.entry_ids[model_user] = self.entry_ids.get(user)
        self.prompts = [model_user]
        return Step.LOOP

    # -- LOOP ---------------------------------------------------------------------------------------
    async def loop(self) -> Step:
        rt, req, key, active, translator = self.rt, self.req, self.key, self.active, self.translator
        d = self.cfg.agents.defaults
        self.compactor = RunCompactor(
            sessions=rt.sessions,
            transcript=self.transcript,
            model=self.candidates[0],
            active=active,
            translator=translator,
            hooks=self.hooks,
            entry_ids=self.entry_ids,
            keep_recent_tokens=d.compaction.keep_recent_tokens,
        )
        skills, policy_key = self.skills, self.policy_key
        settings = LoopSettings(
            candidates=self.candidates,
            system_prompt=self.changes.system_prompt,
            tools=self.run_tools,
            make_tool_context=lambda call_id: rt.wiring.tool_context(
                key,
                req.run_id,
                call_id,
                self.ws,
                active.abort,
                skills.read_roots if skills else None,
                policy_key,
                trusted=req.policy_key is None,
            ),
            abort=active.abort,
            emit=stream_tap(rt.wiring.raw_stream, req.run_id, translator.handle)
            if rt.wiring.raw_stream
            else translator.handle,
            get_steering=active.take_steering,
            get_follow_ups=active.take_follow_ups,
            tool_execution=d.tool_execution,
            max_retries=d.retry.max_retries,
            base_delay_s=d.retry.base_delay_ms / 1000,
            max_delay_s=d.retry.max_delay_ms / 1000,
            sleep=rt.sleep,
            on_overflow=lambda h: self.compactor.compact(h, will_retry=True),
            max_overflow_retries=d.compaction.max_overflow_retries,
            reasoning=req.thinking,
            timeout_s=float(d.timeout_seconds),
            hooks=self.hooks,
            lazy_tools=self.cfg.tools.lazy_schemas,
            defer_tools=self.cfg.tools.deferred_schemas,
            before_tools=lambda message: write_ahead([message]),
            before_model=lambda messages: write_ahead(messages),
            wire_cache=self.transcript.derived,
        )
        persisted = {id(m) for m in self.prompts}

        async def on_turn_end(messages: list[Message]) -> None:
            fresh = [m for m in messages if id(m) not in persisted]
            if fresh:
                rows = await self._write(fresh, owners=active.owners)
                for m, row in zip(fresh, rows, strict=True):
                    persisted.add(id(m))
                    if row is not None:
                        self.entry_ids[m] = row["id"]

        async def write_ahead(messages: list[Message]) -> None:
            await translator.drain()  # earlier turns first: the file keeps the order they happened in
            await on_turn_end(messages)

        translator.on_turn_end = on_turn_end
        active.streaming = True
        result = await run_agent_loop(self.history, self.prompts, settings)
        await translator.drain()
        await on_turn_end(result.new_messages)  # anything not yet written (e.g. an aborted turn)
        active.streaming = False
        self.result = result
        self.ending = Ending(final=result.final, model_ref=result.model_ref, messages=result.new_messages, deliver=True)
        return Step.END

    # -- END ----------------------------------------------------------------------------------------
    async def end(self) -> Step:
        """Close the run: outcome, session entry, delivery hooks, lifecycle event, agent_end."""
        req, active, ending, hooks, ctx = self.req, self.active, self.ending, self.hooks, self.ctx
        if ending.error is not None:
            outcome = failed_outcome(req, active, ending.error)
        else:
            timeout = self.rt.config().agents.defaults.timeout_seconds
            outcome = run_outcome(req, active, ending.final, ending.model_ref, timeout)
        deliver_here = ending.deliver and not req.external_delivery
        if deliver_here and outcome.status == "ok" and outcome.text and not outcome.silent:
            to = req.channel or "webchat"
            content = await self.phases.sending(to, outcome.text)
            if content is None:
                outcome.silent = True  # a plugin cancelled the delivery
            else:
                outcome.text = content
            sent = content is not None
            hooks.fire(
                "message_sent",
                lambda: ev.MessageSentEvent(to, outcome.text, sent, session_key=ctx.session_key, context=ctx),
            )
        await self._sync_transcript()  # what was said is durable before the run is reported done
        if req.on_end is not None:
            req.on_end(outcome)
        # the run's status and token counts: lost at a power cut at worst (the transcript, synced,
        # holds what was said), so not synced before the answer goes out
        await self.rt.sessions.aupdate_entry(req.session_key, entry_changes(outcome, ending.final), synced=False)
        self.translator.lifecycle_end(outcome)
        hooks.fire(
            "agent_end",
            lambda: ev.AgentEndEvent(
                req.run_id,
                outcome.status == "ok",
                [m.to_json() for m in ending.messages or []],
                outcome.error,
                outcome.ended_at - outcome.started_at,
                context=ctx,
            ),
        )
        self.outcome = outcome
        return Step.MAINTAIN if self.result is not None else Step.DONE

    # -- MAINTAIN -----------------------------------------------------------------------------------
    async def maintain(self) -> Step:
        d, req, key, result = self.cfg.agents.defaults, self.req, self.key, self.result
        assert self.outcome is not None and result is not None
        if self.outcome.status != "ok" or not d.compaction.enabled:
            return Step.DONE
        window = self.candidates[0].info.context_window
        tokens = compaction.context_tokens(result.history)
        if await claim_memory_flush(
            self.rt.sessions, key, d.compaction, tokens=tokens, window=window, trigger=req.trigger
        ):
            flush = RunRequest(
                run_id=f"memory-flush-{req.run_id}",
                session_key=key,
                message=flush_prompt(),
                trigger=MEMORY_FLUSH_TRIGGER,
                queue_mode="followup",
                origin={"kind": "memory-flush", "after": req.run_id},
            )
            self.rt.spawn(self.rt.submit(flush))
            return Step.DONE  # the flush turn runs next and compacts after writing its notes
        if compaction.should_compact(tokens, window, d.compaction.reserve_tokens_floor):
            try:
                await self.compactor.compact(result.history, will_retry=False)
            except HomarusError as exc:
                log.warning("threshold compaction of %s failed: %s", key, exc.message)
        return Step.DONE

    # -- the transcript -----------------------------------------------------------------------------
    async def _sync_transcript(self) -> None:
        """Make the run's unsynced message durable; nothing (no trip to a worker) after a synced
        append, the usual case once a reply was written."""
        transcript: TranscriptLog | None = self.__dict__.get("transcript")
        if transcript is not None and transcript.unsynced:
            await run_on_lane(transcript.sync)

    async def _write(
        self,
        messages: list[Message],
        *,
        owners: dict[int, str] | None = None,
        joined: list[str] | None = None,
        synced: bool = True,
    ) -> list[dict[str, Any] | None]:
        return await run_on_lane(
            write_messages, self.transcript, self.phases.filter_write, self.req.run_id, messages, owners, joined, synced
        )


def _as_is(message: dict[str, Any]) -> dict[str, Any] | None:
    return message


def write_messages(
    transcript: TranscriptLog,
    filter_write: Callable[[dict[str, Any]], dict[str, Any] | None],
    run_id: str,
    messages: list[Message],
    owners: dict[int, str] | None = None,
    joined: list[str] | None = None,
    synced: bool = True,
) -> list[dict[str, Any] | None]:
    """Persist messages through the write hooks in one all-or-nothing append, tagged with the run
    (a steered message with the run it came from, ``owners``; a merged prompt also names the runs
    merged into it, ``joined``): after a crash, ``agents/resume.py`` reads where each run stood.

    Returns, per message, its stored entry or None when a hook withheld it.
    """
    tags: list[tuple[dict[str, Any] | None, str]] = [
        (filter_write(bounded(m.to_json())), (owners or {}).get(id(m), run_id)) for m in messages
    ]
    extra: dict[str, Any] = {"joined": joined} if joined else {}
    entries = [{"type": "message", "message": r, "runId": owner, **extra} for r, owner in tags if r is not None]
    stored = iter(transcript.append_many(entries, synced=synced) if entries else [])
    return [next(stored) if r is not None else None for r, _ in tags]
