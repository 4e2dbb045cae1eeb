"""Sub-agents and agent-to-agent messages: ``sessions_spawn`` and ``sessions_send``.

``sessions_spawn`` starts a child run in its own session (``agent:<id>:<requester rest>:subagent:<id>``)
on the ``subagent`` lane and returns at once; when the child ends, its reply (or error) is
announced into the requester's session as a follow-up run, so the requester's model sees the
result and answers the user. ``sessions_send`` runs a message in another session of the same
agent and returns its reply (past its timeout: the run id of the run, which keeps going).

Tools may not import the agents layer: the session manager and the runtime come from
``ToolContext.services`` (``sessions``, and ``runtime`` typed by :class:`SubagentHost`), and run
requests are built from the request type the runtime's ``submit`` declares.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass, field, is_dataclass
from types import SimpleNamespace
from typing import Any, get_type_hints

from homarus.errors import HomarusError, InvalidRequest
from homarus.plugins import events as ev
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function

__all__ = ["SubagentState", "announce_text", "make_subagent_tools", "subagent_tools"]

log = logging.getLogger("homarus.tools.subagents")

MAX_ANNOUNCE_CHARS = 20_000
MAX_LABEL_CHARS = 100
MAX_TIMEOUT_S = 86_400

#: a limit fixed at registration, or read at each call (e.g. from the current tool policy)
Limit = int | Callable[[], int]

_VERBS = {"ok": "finished", "error": "failed", "timeout": "timed out", "aborted": "was stopped"}
_STATUS = {
    "ok": "completed successfully",
    "error": "failed",
    "timeout": "timed out",
    "aborted": "stopped before it finished",
}
_ENDED = {  # outcome status -> (reason, outcome) of the subagent_ended hook
    "ok": ("subagent-complete", "ok"),
    "error": ("subagent-error", "error"),
    "timeout": ("subagent-error", "timeout"),
    "aborted": ("subagent-killed", "killed"),
}


@dataclass(slots=True)
class _Child:
    key: str
    run_id: str
    requester: str
    label: str | None
    task: asyncio.Task[Any] | None = None


@dataclass(slots=True)
class _Ended:
    """How a child run ended (from its RunOutcome, or from the exception that ended it)."""

    status: str
    text: str = ""
    error: str | None = None
    silent: bool = False


@dataclass
class SubagentState:
    """Running children per requester session, and runs that ``sessions_send`` started."""

    children: dict[str, dict[str, _Child]] = field(default_factory=dict)
    sent_runs: set[str] = field(default_factory=set)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def running(self, requester: str) -> list[str]:
        return list(self.children.get(requester, {}))

    def add(self, child: _Child) -> None:
        self.children.setdefault(child.requester, {})[child.key] = child

    def remove(self, child: _Child) -> None:
        mine = self.children.get(child.requester, {})
        mine.pop(child.key, None)
        if not mine:
            self.children.pop(child.requester, None)

    def background(self, runtime: Any, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background through the runtime's spawner; we keep a reference too."""
        spawn = getattr(runtime, "spawn", None)
        task: asyncio.Task[Any] = asyncio.ensure_future(spawn(coro) if callable(spawn) else coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task


def subagent_tools(
    *, max_spawn_depth: Limit = 1, max_children: Limit = 5, allow_agents: Collection[str] = ()
) -> list[Tool]:
    """``sessions_spawn`` and ``sessions_send`` sharing one :class:`SubagentState`.

    ``max_spawn_depth``: a session at this sub-agent depth or deeper may not spawn (1: only
    top-level sessions spawn). ``max_children``: running children per requester session.
    ``allow_agents``: other agents a sub-agent may be spawned for (``"*"``: any); the requester's
    own agent is always allowed.
    """
    state = SubagentState()
    allowed_agents = frozenset(a.strip().lower() for a in allow_agents)

    async def sessions_spawn(
        ctx: ToolContext,
        task: str,
        label: str | None = None,
        agent_id: str | None = None,
        model: str | None = None,
        timeout_seconds: int | None = None,
    ) -> ToolResult:
        """Spawn a sub-agent that works on `task` in the background, in its own session.

        Returns at once with the child session key and run id. When the sub-agent finishes, its
        result is announced to this session as a new message: do not poll or wait for it.
        """
        runtime, mgr = _services(ctx)
        text = task.strip()
        if not text:
            return _refused("error", "task must not be empty")
        requester = mgr.resolve_key(ctx.session_key)
        depth = int(requester.subagent_depth)
        limit = _limit(max_spawn_depth)
        if depth >= limit:
            return _refused(
                "forbidden",
                f"sessions_spawn is not allowed here: this session is a sub-agent at depth {depth} "
                f"and the maximum spawn depth is {limit}. Do the task yourself.",
            )
        target = (agent_id or requester.agent_id).strip().lower()
        if target != requester.agent_id and "*" not in allowed_agents and target not in allowed_agents:
            return _refused("forbidden", f'agent "{target}" is not allowed for sub-agents of "{requester.agent_id}"')
        name = (label or "").strip() or None
        if name is not None and len(name) > MAX_LABEL_CHARS:
            return _refused("error", f"label is too long ({len(name)} > {MAX_LABEL_CHARS} characters)")
        if timeout_seconds is not None and not 0 <= timeout_seconds <= MAX_TIMEOUT_S:
            return _refused("error", f"timeout_seconds must be between 0 and {MAX_TIMEOUT_S}")
        if model:
            runtime.models.resolve(model)  # an unknown model is the caller's error, now
        running = state.running(requester.canonical)
        cap = _limit(max_children)
        if len(running) >= cap:
            return _refused(
                "forbidden",
                f"this session already has {len(running)} sub-agents running (max {cap}); their results "
                "will be announced here: wait for them before spawning more.",
                running=running,
            )
        child_key = mgr.resolve_key(f"agent:{target}:{requester.rest}:subagent:{uuid.uuid4().hex[:12]}")
        child = _Child(child_key.canonical, str(uuid.uuid4()), requester.canonical, name)
        state.add(child)  # reserved before the first await: parallel calls see it
        try:
            await asyncio.to_thread(
                mgr.ensure, child_key, label=name, spawnedBy=requester.canonical, spawnDepth=depth + 1
            )
        except BaseException:
            state.remove(child)
            raise
        req = _request(
            runtime,
            run_id=child.run_id,
            session_key=child_key,
            message=text,
            model=model or None,
            timeout_s=float(timeout_seconds) if timeout_seconds else None,
            lane="subagent",
            trigger="subagent",
            queue_mode="followup",
            extra_system_prompt=_child_prompt(requester.canonical, name),
        )
        hook_ctx = ev.HookContext(
            agent_id=requester.agent_id,
            session_key=requester.canonical,
            run_id=ctx.run_id,
            tool_call_id=ctx.tool_call_id,
            trigger="subagent",
        )
        child.task = state.background(runtime, _run_child(runtime, state, child, req, requester, hook_ctx))
        if _hooks(runtime, "subagent_spawned") is not None:
            event = ev.SubagentSpawnedEvent(child.key, target, child.run_id, context=hook_ctx)
            _ = state.background(runtime, _fire(runtime, "subagent_spawned", event))
        result: dict[str, Any] = {"status": "accepted", "childSessionKey": child.key, "runId": child.run_id}
        if name is not None:
            result["label"] = name
        if model:
            result["modelApplied"] = model
        result["note"] = "The sub-agent's result will be announced to this session when it finishes; do not poll."
        return ToolResult.text(json.dumps(result), details=result)

    async def sessions_send(ctx: ToolContext, session_key: str, message: str, timeout_seconds: int = 120) -> ToolResult:
        """Send a message to another session of this agent and return its reply.

        Waits up to `timeout_seconds` (0: do not wait); past it the run keeps going and its run id
        is returned. You cannot send to your own session.
        """
        runtime, mgr = _services(ctx)
        if ctx.run_id in state.sent_runs:
            return _refused("forbidden", "a session reached through sessions_send cannot send on: reply instead")
        target = mgr.resolve_key(session_key, ctx.agent_id)
        if target.canonical == ctx.session_key:
            return _refused("error", "sessions_send cannot target your own session: answer directly instead")
        if not message.strip():
            return _refused("error", "message must not be empty")
        if not 0 <= timeout_seconds <= MAX_TIMEOUT_S:
            return _refused("error", f"timeout_seconds must be between 0 and {MAX_TIMEOUT_S}")
        if await asyncio.to_thread(mgr.get, target) is None:
            return _refused("error", f"session not found: {target.canonical} (sessions_list shows the sessions)")
        run_id = str(uuid.uuid4())
        req = _request(
            runtime,
            run_id=run_id,
            session_key=target,
            message=message,
            lane="nested",
            trigger="sessions_send",
            queue_mode="followup",
            extra_system_prompt=(
                f"This message was sent by the agent session {ctx.session_key} (sessions_send); "
                "your reply is returned to it."
            ),
        )
        state.sent_runs.add(run_id)
        task = state.background(runtime, runtime.submit(req))
        task.add_done_callback(lambda _t: state.sent_runs.discard(run_id))
        base: dict[str, Any] = {"sessionKey": target.canonical, "runId": run_id}
        if not await _wait(task, timeout_seconds, ctx.abort):
            info = {**base, "status": "running"}
            note = f"still running in {target.canonical} (run {run_id}); it continues in the background"
            return ToolResult.text(note, details=info)
        ended = _ended(task)
        if ended.status != "ok":
            error = ended.error or ended.status
            info = {**base, "status": ended.status, "error": error}
            text = f"the run in {target.canonical} {_STATUS.get(ended.status, ended.status)}: {error}"
            return ToolResult.text(text, details=info, is_error=True)
        reply = "" if ended.silent else ended.text
        return ToolResult.text(reply or "(no reply)", details={**base, "status": "ok", "reply": reply})

    return [
        tool_from_function(sessions_spawn, summary="Start a sub-agent on a task", deferred=True),
        tool_from_function(sessions_send, summary="Message another session", deferred=True),
    ]


#: the factory under the name the design notes use
make_subagent_tools = subagent_tools


async def _run_child(
    runtime: Any, state: SubagentState, child: _Child, req: Any, requester: Any, hook_ctx: ev.HookContext
) -> None:
    """Run the child, fire ``subagent_ended``, then announce its result to the requester."""
    try:
        outcome = await runtime.submit(req)
        ended = _Ended(outcome.status, outcome.text or "", outcome.error, bool(outcome.silent))
    except Exception as exc:
        log.warning("sub-agent run %s in %s failed: %s", child.run_id, child.key, exc)
        ended = _Ended("error", error=_message(exc))
    finally:
        state.remove(child)
    if _hooks(runtime, "subagent_ended") is not None:
        reason, result = _ENDED.get(ended.status, ("subagent-error", "error"))
        event = ev.SubagentEndedEvent(child.key, reason, result, ended.error, context=hook_ctx)
        await _fire(runtime, "subagent_ended", event)
    if ended.status == "ok" and ended.silent:
        return  # NO_REPLY: the child has nothing to announce
    announce = announce_text(child.label or child.key, child.key, child.run_id, ended)
    lane = "subagent" if requester.subagent_depth > 0 else "main"
    req = _request(
        runtime,
        run_id=str(uuid.uuid4()),
        session_key=requester,
        message=announce,
        lane=lane,
        trigger="subagent",
        queue_mode="followup",
    )
    try:
        await runtime.submit(req)
    except Exception as exc:  # the requester session may be gone or the gateway stopping
        log.warning("could not announce sub-agent %s to %s: %s", child.key, child.requester, _message(exc))


def announce_text(name: str, child_key: str, run_id: str, ended: Any) -> str:
    """The message the requester's model gets when a child ends."""
    status = str(ended.status)
    if status == "ok":
        body = ended.text.strip() or "(the sub-agent gave no reply)"
    else:
        body = ended.error or _STATUS.get(status, status)
        if ended.text:
            body += f"\nLast reply: {ended.text.strip()}"
    if len(body) > MAX_ANNOUNCE_CHARS:
        body = body[:MAX_ANNOUNCE_CHARS] + f"\n[... {len(body) - MAX_ANNOUNCE_CHARS} more characters truncated]"
    return (
        f"[Subagent {name} {_VERBS.get(status, 'ended')}] {body}\n\n"
        f"(Internal message, not from the user: the sub-agent in session {child_key} (run {run_id}) "
        f"{_STATUS.get(status, 'ended')}. Tell the user what it found, in your normal voice.)"
    )


def _child_prompt(requester: str, label: str | None) -> str:
    named = f' "{label}"' if label else ""
    return (
        f"You are a sub-agent{named} spawned by the session {requester} for the task in the user message. "
        "Complete that task and end with a reply that contains the result: it is announced to the "
        "requester, which relays it. Do not address the end user or start unrelated work."
    )


def _services(ctx: ToolContext) -> tuple[Any, Any]:
    runtime = ctx.services.runtime
    mgr = ctx.services.sessions
    if runtime is None or mgr is None:
        raise InvalidRequest("sub-agents are not available to tools in this context")
    return runtime, mgr


def _limit(value: Limit) -> int:
    return int(value() if callable(value) else value)


def _refused(status: str, message: str, **extra: Any) -> ToolResult:
    return ToolResult.text(f"{status}: {message}", details={"status": status, "error": message, **extra}, is_error=True)


_REQUEST_TYPES: dict[type, Callable[..., Any]] = {}


def _request(runtime: Any, **fields: Any) -> Any:
    """A run request of the dataclass the runtime's ``submit`` declares (else a namespace: fakes)."""
    runtime_type = type(runtime)
    make = _REQUEST_TYPES.get(runtime_type)
    if make is None:
        try:
            hint = get_type_hints(runtime_type.submit).get("req")
        except (AttributeError, NameError, TypeError):
            hint = None
        make = _REQUEST_TYPES[runtime_type] = hint if isinstance(hint, type) and is_dataclass(hint) else SimpleNamespace
    return make(**fields)


def _hooks(runtime: Any, name: str) -> Any:
    hooks = getattr(runtime, "hooks", None)
    return hooks if hooks is not None and hooks.has(name) else None


async def _fire(runtime: Any, name: str, event: Any) -> None:
    hooks = _hooks(runtime, name)
    if hooks is not None:
        await hooks.void(name, event)  # handler errors are logged by the runner


async def _wait(task: asyncio.Task[Any], timeout_s: float, abort: asyncio.Event) -> bool:
    """Wait for ``task`` up to ``timeout_s`` or until ``abort``; True if it is done."""
    if timeout_s > 0 and not task.done():
        stop = asyncio.ensure_future(abort.wait())
        try:
            await asyncio.wait({task, stop}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
    return task.done()


def _ended(task: asyncio.Task[Any]) -> _Ended:
    if task.cancelled():
        return _Ended("aborted", error="cancelled")
    exc = task.exception()
    if exc is not None:
        return _Ended("error", error=_message(exc))
    outcome = task.result()
    return _Ended(outcome.status, outcome.text or "", outcome.error, bool(outcome.silent))


def _message(exc: BaseException) -> str:
    if isinstance(exc, HomarusError):
        return exc.message
    return str(exc) or type(exc).__name__
