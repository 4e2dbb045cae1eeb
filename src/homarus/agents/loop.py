"""The double loop: model turn → tool calls → results → repeat; follow-ups restart it.

    AgentStart
    ┌ OUTER (follow-ups) ────────────────────────────────────────────────────────┐
    │ ┌ INNER (while the model calls tools or steering messages wait) ─────────┐ │
    │ │ TurnStart → pending user messages → model stream (retries, fallback,   │ │
    │ │ overflow compaction) → tool calls (parallel or sequential; steering    │ │
    │ │ skips the rest) → TurnEnd                                              │ │
    │ └────────────────────────────────────────────────────────────────────────┘ │
    └────────────────────────────────────────────────────────────────────────────┘
    AgentEnd

Every tool call gets exactly one result, in the model's order. An errored or aborted model turn
ends the run. The loop never raises for model or tool failures; they become messages.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from homarus.agents.events import (
    AgentEnd,
    AgentStart,
    Fallback,
    LoopEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    Retry,
    ToolEnd,
    ToolStart,
    TurnEnd,
    TurnStart,
)
from homarus.agents.replay import repair_for_replay
from homarus.errors import HomarusError
from homarus.messages import (
    AssistantMessage,
    Context,
    Done,
    Message,
    StreamError,
    StreamOptions,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCall,
    ToolCallEnd,
    ToolCallStart,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from homarus.providers.classify import is_context_overflow, is_retryable
from homarus.providers.registry import ResolvedModel
from homarus.tasks import cancel_and_wait
from homarus.tools.base import Tool, ToolContext, ToolResult

__all__ = ["NO_HOOKS", "SKIPPED_TEXT", "LoopHooks", "LoopResult", "LoopSettings", "run_agent_loop"]

SKIPPED_TEXT = "Skipped due to queued user message."
_call_ids = itertools.count(1)
ABORTED_TEXT = "Aborted."
MAX_RESULT_CHARS = 100_000  # what the model sees of one tool result


class LoopHooks:
    """Extension points the loop calls at each step; the runtime binds them to the plugin hooks.

    The defaults do nothing, so the loop runs the same with or without plugins.
    """

    async def before_tool(self, call: ToolCall) -> ToolCall | str:
        """The call to run (possibly with rewritten arguments), or a reason to block it."""
        return call

    def after_tool(self, call: ToolCall, result: ToolResultMessage, duration_ms: int) -> None:
        """A tool finished (fire-and-forget)."""

    def tool_refused(self, call: ToolCall, reason: str) -> None:
        """The loop refused a call before any hook saw it (unknown or disallowed tool, bad arguments)."""

    def model_call_started(self, call_id: str, model: ResolvedModel, context: Context) -> None:
        """A provider request is about to be sent (fire-and-forget)."""

    def model_call_ended(self, call_id: str, model: ResolvedModel, message: AssistantMessage, ms: int) -> None:
        """A provider request finished (fire-and-forget)."""

    async def before_finalize(self, message: AssistantMessage) -> list[UserMessage]:
        """Messages that send the run round once more instead of finishing (revision), or []."""
        return []


NO_HOOKS = LoopHooks()


@dataclass(kw_only=True)
class LoopSettings:
    candidates: list[ResolvedModel]
    system_prompt: str
    tools: Mapping[str, Tool]
    make_tool_context: Callable[[str], ToolContext]
    abort: asyncio.Event
    emit: Callable[[LoopEvent], None]
    get_steering: Callable[[], list[UserMessage]] = lambda: []
    get_follow_ups: Callable[[], list[UserMessage]] = lambda: []
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    max_retries: int = 3
    base_delay_s: float = 2.0
    max_delay_s: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    #: compacts the history after a context overflow; returns the new history or None if it cannot
    on_overflow: Callable[[list[Message]], Awaitable[list[Message] | None]] | None = None
    max_overflow_retries: int = 3
    hooks: LoopHooks = NO_HOOKS
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning: str | None = None
    timeout_s: float = 600.0
    #: send only names + one line per tool; the model asks ``tool_schema`` for the full parameters
    lazy_tools: bool = False
    #: describe the tools marked ``deferred`` lazily (the others in full)
    defer_tools: bool = False
    #: awaited before a turn's tool calls run (the runtime writes the calls down first, so a crash
    #: in the middle of a tool can be recognised afterwards and the call is never run again)
    before_tools: Callable[[AssistantMessage], Awaitable[None]] | None = None
    #: awaited with the messages a turn adds (steered or follow-up messages) before its model call:
    #: the runtime writes them down first, so a crash while the model thinks loses none of them
    before_model: Callable[[list[Message]], Awaitable[None]] | None = None
    #: the session's ``Context.cache`` (kept with its cached transcript view)
    wire_cache: dict[str, Any] | None = None


@dataclass
class LoopResult:
    new_messages: list[Message] = field(default_factory=list)
    final: AssistantMessage | None = None
    model_ref: str = ""
    #: the history as it stands at the end (replaced when a compaction happened)
    history: list[Message] = field(default_factory=list)

    @property
    def stop_reason(self) -> str:
        return self.final.stop_reason if self.final else "stop"


async def run_agent_loop(history: list[Message], prompts: list[Message], s: LoopSettings) -> LoopResult:
    """Run until the model stops calling tools and nothing is queued; ``history`` is extended in place."""
    result = LoopResult(history=history)
    active = 0  # index into candidates: a fallback sticks for the rest of the run
    s.emit(AgentStart())
    s.emit(TurnStart())

    def add(message: Message) -> None:
        s.emit(MessageStart(message))
        s.emit(MessageEnd(message))
        result.history.append(message)
        result.new_messages.append(message)

    for prompt in prompts:
        add(prompt)
    pending: list[Message] = list(s.get_steering())
    first = True
    while True:
        has_tools = True
        while has_tools or pending:
            if not first:
                s.emit(TurnStart())
            first = False
            for message in pending:
                add(message)
            if pending and s.before_model is not None:
                await s.before_model(pending)
            pending = []
            message, active = await _model_turn(result, s, active)
            result.final = message
            result.model_ref = s.candidates[active].info.ref
            result.history.append(message)
            result.new_messages.append(message)
            if message.stop_reason in ("error", "aborted"):
                s.emit(TurnEnd(message, []))
                s.emit(AgentEnd(result.new_messages))
                return result
            calls = message.tool_calls
            has_tools = bool(calls)
            results: list[ToolResultMessage] = []
            steering: list[UserMessage] = []
            if calls:
                if s.before_tools is not None:
                    await s.before_tools(message)
                results, steering = await _run_tools(calls, s)
                for r in results:
                    result.history.append(r)
                    result.new_messages.append(r)
            s.emit(TurnEnd(message, results))
            if s.abort.is_set():
                result.final = _aborted_marker(message)
                s.emit(AgentEnd(result.new_messages))
                return result
            pending = list(steering) or list(s.get_steering())
        follow = s.get_follow_ups()
        if not follow and result.final is not None:
            follow = await s.hooks.before_finalize(result.final)
        if not follow:
            break
        pending = list(follow)
    s.emit(AgentEnd(result.new_messages))
    return result


def _aborted_marker(message: AssistantMessage) -> AssistantMessage:
    """The run was aborted after this turn's tools: report it as aborted without a new message."""
    return AssistantMessage(
        content=[],
        api=message.api,
        provider=message.provider,
        model=message.model,
        stop_reason="aborted",
        error_message="aborted",
    )


# -- one model turn: stream, retries, overflow compaction, fallback --------------------------------
async def _model_turn(result: LoopResult, s: LoopSettings, active: int) -> tuple[AssistantMessage, int]:
    retries = 0
    overflows = 0
    while True:
        resolved = s.candidates[active]
        message, status, retry_after = await _stream(resolved, result.history, s)
        if message.stop_reason != "error" or s.abort.is_set():
            if s.abort.is_set() and message.stop_reason != "aborted":
                message.stop_reason, message.error_message = "aborted", "aborted"
            s.emit(MessageEnd(message))
            return message, active
        error = message.error_message or "unknown error"
        overflow = is_context_overflow(
            error,
            status,
            stop_reason=message.stop_reason,
            input_tokens=message.usage.input,
            context_window=resolved.info.context_window,
        )
        if overflow and s.on_overflow is not None and overflows < s.max_overflow_retries:
            overflows += 1
            compacted = await s.on_overflow(result.history)
            if compacted is not None:
                result.history[:] = compacted
                continue
        if not overflow and is_retryable(error, status) and retries < s.max_retries:
            delay = s.base_delay_s * (2**retries)
            if retry_after is not None:
                if retry_after > s.max_delay_s:
                    s.emit(MessageEnd(message))
                    return message, active  # the provider asks for longer than we will wait: fail fast
                delay = max(delay, retry_after)
            retries += 1
            s.emit(Retry(retries, s.max_retries, int(delay * 1000), error))
            await _sleep_unless_aborted(s, delay)  # if aborted, the next stream ends at once as aborted
            continue
        if active + 1 < len(s.candidates) and not overflow:
            s.emit(Fallback(resolved.info.ref, s.candidates[active + 1].info.ref, error))
            active += 1
            retries = 0
            continue
        s.emit(MessageEnd(message))
        return message, active


async def _sleep_unless_aborted(s: LoopSettings, delay: float) -> bool:
    sleeper = asyncio.ensure_future(s.sleep(delay))
    aborter = asyncio.ensure_future(s.abort.wait())
    done, pending = await asyncio.wait({sleeper, aborter}, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return sleeper in done


async def _stream(
    resolved: ResolvedModel, history: list[Message], s: LoopSettings
) -> tuple[AssistantMessage, int | None, float | None]:
    info = resolved.info
    context = Context(s.system_prompt, repair_for_replay(history, s.wire_cache), _specs(s), s.wire_cache)
    options = StreamOptions(
        api_key=resolved.api_key,
        max_tokens=s.max_tokens or info.max_tokens,
        temperature=s.temperature,
        reasoning=s.reasoning,
        abort=s.abort,
        timeout_s=s.timeout_s,
    )
    partial = AssistantMessage(api=info.api, provider=info.provider, model=info.id)
    blocks: dict[int, TextContent | ThinkingContent | ToolCall] = {}
    started = False
    call_id = f"mc_{next(_call_ids)}"
    t0 = time.monotonic()
    s.hooks.model_call_started(call_id, resolved, context)
    async for event in resolved.provider.stream(info, context, options):
        if isinstance(event, Done | StreamError):
            final = event.message
            if not started:
                s.emit(MessageStart(final))
            s.hooks.model_call_ended(call_id, resolved, final, int((time.monotonic() - t0) * 1000))
            if isinstance(event, StreamError):
                return final, event.status, event.retry_after_s
            return final, None, None
        if not started:
            s.emit(MessageStart(partial))
            started = True
        _apply(partial, blocks, event)
        s.emit(MessageUpdate(partial, event))
    # a provider that ends without a terminal event broke its contract: treat as an error
    partial.stop_reason, partial.error_message = "error", "provider stream ended without a final event"
    s.hooks.model_call_ended(call_id, resolved, partial, int((time.monotonic() - t0) * 1000))
    if not started:
        s.emit(MessageStart(partial))
    return partial, None, None


#: a lazily described tool takes any object (JSON Schema allows other properties unless told not to)
LAZY_PARAMETERS: dict[str, object] = {"type": "object"}


def _specs(s: LoopSettings) -> list[ToolSpec]:
    """What the model is told of each tool: in full, or (lazily) its name and first sentence with
    free-form parameters, the real ones a ``tool_schema`` call away (the call is still validated)."""
    if not s.lazy_tools and not s.defer_tools:
        return [t.spec for t in s.tools.values()]
    out = []
    for tool in s.tools.values():
        if tool.name == "tool_schema" or not (s.lazy_tools or tool.deferred):
            out.append(tool.spec)
        else:
            summary = tool.summary or tool.description.split("\n", 1)[0].split(". ", 1)[0]
            out.append(ToolSpec(tool.name, summary, LAZY_PARAMETERS))  # tool_schema says how to get the rest
    return out


def _apply(
    partial: AssistantMessage, blocks: dict[int, TextContent | ThinkingContent | ToolCall], event: object
) -> None:
    if isinstance(event, TextDelta):
        block = blocks.get(event.index)
        if not isinstance(block, TextContent):
            block = blocks[event.index] = TextContent("")
            partial.content.append(block)
        block.text += event.delta
    elif isinstance(event, ThinkingDelta):
        thinking = blocks.get(event.index)
        if not isinstance(thinking, ThinkingContent):
            thinking = blocks[event.index] = ThinkingContent("")
            partial.content.append(thinking)
        thinking.thinking += event.delta
    elif isinstance(event, ToolCallStart):
        call = blocks[event.index] = ToolCall(event.id, event.name, {})
        partial.content.append(call)
    elif isinstance(event, ToolCallEnd):
        old = blocks.get(event.index)
        blocks[event.index] = event.tool_call
        partial.content = [event.tool_call if b is old else b for b in partial.content]


# -- tools --------------------------------------------------------------------------------------------
def _error_result(call: ToolCall, text: str) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, [TextContent(text)], is_error=True)


async def _prepare(call: ToolCall, s: LoopSettings) -> tuple[Tool, ToolCall] | ToolResultMessage:
    tool = s.tools.get(call.name)
    if tool is None:
        s.hooks.tool_refused(call, "blocked:policy")
        return _error_result(call, f"Tool {call.name} not found")
    if call.parse_error:
        s.hooks.tool_refused(call, "invalid-arguments")
        return _error_result(call, f"Invalid arguments for {call.name}: {call.parse_error}")
    decided = await s.hooks.before_tool(call)
    if isinstance(decided, str):
        return _error_result(call, decided or "Tool execution was blocked")
    return tool, decided


async def _execute(tool: Tool, call: ToolCall, s: LoopSettings) -> ToolResultMessage:
    ctx = s.make_tool_context(call.id)
    try:
        outcome: ToolResult = await tool.execute(ctx, call.arguments)
    except asyncio.CancelledError:
        raise
    except HomarusError as exc:
        return _error_result(call, exc.message)
    except Exception as exc:  # a tool failing is a result for the model, not a crash of the run
        return _error_result(call, f"{type(exc).__name__}: {exc}")
    content = list(outcome.content)
    for i, block in enumerate(content):
        if isinstance(block, TextContent) and len(block.text) > MAX_RESULT_CHARS:
            cut = len(block.text) - MAX_RESULT_CHARS
            content[i] = TextContent(block.text[:MAX_RESULT_CHARS] + f"\n[... {cut} more characters truncated]")
    return ToolResultMessage(call.id, call.name, content, outcome.is_error, outcome.details)


def _finish(call: ToolCall, result: ToolResultMessage, started: float, s: LoopSettings) -> ToolResultMessage:
    duration = int((time.monotonic() - started) * 1000)
    s.hooks.after_tool(call, result, duration)
    s.emit(ToolEnd(call.id, call.name, result, duration))
    s.emit(MessageStart(result))
    s.emit(MessageEnd(result))
    return result


async def _run_tools(calls: list[ToolCall], s: LoopSettings) -> tuple[list[ToolResultMessage], list[UserMessage]]:
    results: dict[str, ToolResultMessage] = {}
    steering: list[UserMessage] = []
    launched: list[tuple[ToolCall, Tool, float]] = []

    def skip_rest(start: int) -> None:
        for call in calls[start:]:
            s.emit(ToolStart(call.id, call.name, call.arguments))
            results[call.id] = _finish(call, _error_result(call, SKIPPED_TEXT), time.monotonic(), s)

    for i, call in enumerate(calls):
        if s.abort.is_set():
            for rest in calls[i:]:
                s.emit(ToolStart(rest.id, rest.name, rest.arguments))
                results[rest.id] = _finish(rest, _error_result(rest, ABORTED_TEXT), time.monotonic(), s)
            break
        s.emit(ToolStart(call.id, call.name, call.arguments))
        started = time.monotonic()
        prepared = await _prepare(call, s)
        if isinstance(prepared, ToolResultMessage):
            results[call.id] = _finish(call, prepared, started, s)
        elif s.tool_execution == "sequential":
            tool, effective = prepared
            results[call.id] = _finish(effective, await _guarded(tool, effective, s), started, s)
        else:
            launched.append((prepared[1], prepared[0], started))
        steering = s.get_steering()
        if steering:
            skip_rest(i + 1)
            break
    if launched:
        tasks = [asyncio.ensure_future(_guarded(tool, call, s)) for call, tool, _ in launched]
        outcomes = await asyncio.gather(*tasks)
        for (call, _tool, started), outcome in zip(launched, outcomes, strict=True):
            results[call.id] = _finish(call, outcome, started, s)
        if not steering:
            steering = s.get_steering()
    return [results[c.id] for c in calls if c.id in results], steering


async def _guarded(tool: Tool, call: ToolCall, s: LoopSettings) -> ToolResultMessage:
    """Run a tool, but give up on it (with an error result) as soon as the run is aborted."""
    runner = asyncio.ensure_future(_execute(tool, call, s))
    aborter = asyncio.ensure_future(s.abort.wait())
    done, _ = await asyncio.wait({runner, aborter}, return_when=asyncio.FIRST_COMPLETED)
    if runner in done:
        aborter.cancel()
        return runner.result()
    await cancel_and_wait(runner)  # what the tool raises while cancelled is moot: the abort is the answer
    return _error_result(call, ABORTED_TEXT)
