"""A provider that replays a script: for tests, offline demos and the no-key default.

Steps are consumed one per model request. JSON-shaped steps work from the config file::

    {"reply": "text", "thinking": "...", "toolCalls": [{"name": "current_time", "arguments": {}}],
     "stop": "stop", "usage": {"input": 10, "output": 5}}
    {"fail": "rate limit exceeded", "status": 429, "retryAfter": 1.5}
    {"echo": true}                 # reply with the last user text

Python steps add exact control for tests: :class:`Gate` (wait for an ``asyncio.Event`` before
answering, so a test can steer or abort at a precise point), :class:`Responder` (compute the
reply from the request) and :class:`Expect` (assert on the request). When the script runs out,
``then`` decides: ``"error"`` (fail loudly, the default), ``"echo"``, or ``"repeat"`` the last step.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from homarus.messages import (
    AssistantMessage,
    Context,
    Done,
    ModelInfo,
    StreamError,
    StreamEvent,
    StreamOptions,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UserMessage,
)

__all__ = ["Expect", "Fail", "Gate", "Reply", "Responder", "ScriptedProvider", "Step", "steps_from_json"]


@dataclass
class Reply:
    text: str = ""
    thinking: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stop: Literal["stop", "length"] = "stop"
    usage: Usage | None = None
    #: raw argument JSON per call, to test models that send broken arguments
    raw_arguments: list[str] | None = None


@dataclass
class Fail:
    message: str
    status: int | None = None
    retry_after_s: float | None = None


@dataclass
class Gate:
    """Wait for ``event`` (set by the test), then play ``then``; ``reached`` is set on arrival."""

    event: asyncio.Event
    then: Step
    reached: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Responder:
    fn: Callable[[Context], Reply | Fail]


@dataclass
class Expect:
    check: Callable[[Context], None]
    then: Step


@dataclass
class _Echo:
    pass


Step = Reply | Fail | Gate | Responder | Expect | _Echo


def steps_from_json(raw: Iterable[Any]) -> list[Step]:
    """Steps from their JSON form (config files); raises ValueError on an unknown shape."""
    steps: list[Step] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ValueError(f"script step {i} must be an object")
        try:
            steps.append(_step(item, i))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"script step {i} is malformed: {exc!r}") from None
    return steps


def _step(item: dict[str, Any], i: int) -> Step:
    if item.get("echo"):
        return _Echo()
    if "fail" in item:
        return Fail(str(item["fail"]), item.get("status"), item.get("retryAfter"))
    if "reply" in item or "toolCalls" in item:
        calls = [(str(c["name"]), dict(c.get("arguments") or {})) for c in item.get("toolCalls") or []]
        usage = item.get("usage")
        return Reply(
            str(item.get("reply", "")),
            item.get("thinking"),
            calls,
            item.get("stop", "stop"),
            Usage(int(usage.get("input", 0)), int(usage.get("output", 0))) if usage else None,
        )
    raise ValueError(f"script step {i}: expected one of reply, toolCalls, fail, echo")


def _estimate(context: Context) -> int:
    """Prompt tokens as ceil(chars / 4) of the texts (cheap: no serialisation per request)."""
    chars = len(context.system_prompt)
    for message in context.messages:
        content = getattr(message, "content", "")
        if isinstance(content, str):
            chars += len(content)
        else:
            for block in content:
                chars += len(getattr(block, "text", "") or getattr(block, "thinking", "") or "")
                if isinstance(block, ToolCall):
                    chars += len(block.name) + 2 * len(block.arguments)
    return math.ceil(chars / 4)


class ScriptedProvider:
    api = "scripted"

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        then: Literal["error", "echo", "repeat"] = "error",
        chunk: int = 8,
        pace_s: float = 0.0,
        max_requests: int = 1000,
    ) -> None:
        self.steps: deque[Step] = deque(steps)
        self.then = then
        self.chunk = max(1, chunk)
        #: pause between text chunks (0: a loop turn each), to stream like a model over a network
        self.pace_s = pace_s
        #: the latest requests, oldest first (at most ``max_requests``: each holds a whole prompt, and
        #: a gateway answering with the built-in echo model for months must not keep them all)
        self.requests: list[Context] = []
        self.max_requests = max(1, max_requests)
        self._last: Step | None = None
        self._call_ids = 0

    def push(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def _next(self) -> Step | None:
        if self.steps:
            self._last = self.steps.popleft()
            return self._last
        if self.then == "echo":
            return _Echo()
        if self.then == "repeat" and self._last is not None:
            return self._last
        return None

    async def stream(self, model: ModelInfo, context: Context, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        self.requests.append(context)
        if len(self.requests) > self.max_requests:
            del self.requests[: len(self.requests) - self.max_requests]
        base = AssistantMessage(api=self.api, provider=model.provider, model=model.id)
        step = self._next()
        while isinstance(step, Gate | Expect | Responder):
            if isinstance(step, Gate):
                step.reached.set()
                if not await _wait(step.event, options.abort):
                    yield _aborted(base)
                    return
                step = step.then
            elif isinstance(step, Expect):
                step.check(context)
                step = step.then
            else:
                step = step.fn(context)
        if step is None:
            base.stop_reason, base.error_message = "error", "scripted provider: the script has no step left"
            yield StreamError(base)
            return
        if isinstance(step, Fail):
            base.stop_reason, base.error_message = "error", step.message
            yield StreamError(base, step.status, step.retry_after_s)
            return
        if isinstance(step, _Echo):
            last = next((m for m in reversed(context.messages) if isinstance(m, UserMessage)), None)
            step = Reply(_echo_text(last.text if last else "", model))
        async for event in self._play(step, base, context, options):
            yield event

    async def _play(
        self, step: Reply, msg: AssistantMessage, context: Context, options: StreamOptions
    ) -> AsyncIterator[StreamEvent]:
        index = 0
        if step.thinking:
            msg.content.append(ThinkingContent(step.thinking))
            yield ThinkingDelta(index, step.thinking)
            index += 1
        if step.text:
            msg.content.append(TextContent(""))
            block = msg.content[-1]
            assert isinstance(block, TextContent)
            for start in range(0, len(step.text), self.chunk):
                if options.abort is not None and options.abort.is_set():
                    yield _aborted(msg)
                    return
                piece = step.text[start : start + self.chunk]
                block.text += piece
                yield TextDelta(index, piece)
                await asyncio.sleep(self.pace_s)
            index += 1
        for n, (name, args) in enumerate(step.tool_calls):
            self._call_ids += 1
            call_id = f"call_{self._call_ids:04d}"
            raw = step.raw_arguments[n] if step.raw_arguments and n < len(step.raw_arguments) else json.dumps(args)
            yield ToolCallStart(index, call_id, name)
            for start in range(0, len(raw), self.chunk):
                yield ToolCallDelta(index, raw[start : start + self.chunk])
            call = ToolCall.from_arguments(call_id, name, raw)
            msg.content.append(call)
            yield ToolCallEnd(index, call)
            index += 1
        msg.stop_reason = "toolUse" if step.tool_calls else step.stop
        prompt = _estimate(context)
        msg.usage = step.usage or Usage(prompt, math.ceil(len(step.text) / 4) + 1)
        msg.usage.total_tokens = msg.usage.input + msg.usage.output + msg.usage.cache_read
        yield Done(msg)


def _echo_text(text: str, model: ModelInfo) -> str:
    if model.provider == "homarus" and model.id == "echo":
        return (
            "(No model is configured yet: set agents.defaults.model.primary and models.providers in the "
            f"config to talk to a real model.) You said: {text}"
        )
    return text


def _aborted(msg: AssistantMessage) -> StreamError:
    msg.stop_reason, msg.error_message = "aborted", "aborted"
    return StreamError(msg)


async def _wait(event: asyncio.Event, abort: asyncio.Event | None) -> bool:
    """Wait for ``event``; False if ``abort`` fired first."""
    if abort is None:
        await event.wait()
        return True
    waiters = {asyncio.ensure_future(event.wait()), asyncio.ensure_future(abort.wait())}
    _done, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return event.is_set()
