"""ScriptedProvider: replies, tool calls, failures, gates, expectations, responders, script exhaustion."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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
    ToolResultMessage,
    Usage,
    UserMessage,
)
from homarus.providers.scripted import Expect, Fail, Gate, Reply, Responder, ScriptedProvider, steps_from_json

MODEL = ModelInfo("test", "scripted", "scripted")
ECHO_MODEL = ModelInfo("homarus", "echo", "scripted")


def ctx(text: str = "hi") -> Context:
    return Context("sys", [UserMessage(text)])


async def run(p: ScriptedProvider, context: Context | None = None, **opts: Any) -> list[StreamEvent]:
    return [e async for e in p.stream(MODEL, context or ctx(), StreamOptions(**opts))]


def final(events: list[StreamEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, Done | StreamError)
    return last.message


async def test_reply_text_in_chunks_with_estimated_usage() -> None:
    p = ScriptedProvider([Reply("hello world")], chunk=4)
    request = ctx()
    events = await run(p, request)
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["hell", "o wo", "rld"]
    msg = final(events)
    assert isinstance(events[-1], Done) and msg.stop_reason == "stop" and msg.text == "hello world"
    assert (msg.api, msg.provider, msg.model) == ("scripted", "test", "scripted")
    assert msg.usage.input > 0 and msg.usage.output == 4 and msg.usage.total_tokens == msg.usage.input + 4
    assert p.requests == [request]


async def test_thinking_text_and_tool_calls_with_deterministic_ids() -> None:
    p = ScriptedProvider(
        [
            Reply("ok", thinking="hmm", tool_calls=[("read", {"path": "a"}), ("ls", {})]),
            Reply(tool_calls=[("read", {"path": "b"})]),
        ],
        chunk=100,
    )
    first = await run(p)
    assert first == [
        ThinkingDelta(0, "hmm"),
        TextDelta(1, "ok"),
        ToolCallStart(2, "call_0001", "read"),
        ToolCallDelta(2, '{"path": "a"}'),
        ToolCallEnd(2, ToolCall("call_0001", "read", {"path": "a"})),
        ToolCallStart(3, "call_0002", "ls"),
        ToolCallDelta(3, "{}"),
        ToolCallEnd(3, ToolCall("call_0002", "ls", {})),
        Done(final(first)),
    ]
    msg = final(first)
    assert msg.stop_reason == "toolUse"
    assert msg.content[:2] == [ThinkingContent("hmm"), TextContent("ok")]
    second = final(await run(p))
    assert [c.id for c in second.tool_calls] == ["call_0003"]  # ids keep counting across requests


async def test_raw_broken_arguments_give_parse_error() -> None:
    p = ScriptedProvider([Reply(tool_calls=[("read", {}), ("ls", {}), ("x", {})], raw_arguments=["{bad", "[]", " "])])
    calls = final(await run(p)).tool_calls
    assert calls[0].arguments == {} and calls[0].parse_error and calls[0].parse_error.startswith("invalid JSON")
    assert calls[1].parse_error == "tool arguments must be a JSON object"
    assert calls[2].parse_error is None and calls[2].arguments == {}


async def test_explicit_usage_and_length_stop() -> None:
    p = ScriptedProvider([Reply("cut", stop="length", usage=Usage(100, 7, 3))])
    msg = final(await run(p))
    assert msg.stop_reason == "length"
    assert (msg.usage.input, msg.usage.output, msg.usage.cache_read, msg.usage.total_tokens) == (100, 7, 3, 110)


async def test_fail() -> None:
    p = ScriptedProvider([Fail("rate limit exceeded", 429, 1.5)])
    (event,) = await run(p)
    assert isinstance(event, StreamError) and (event.status, event.retry_after_s) == (429, 1.5)
    assert event.message.stop_reason == "error" and event.message.error_message == "rate limit exceeded"


async def test_gate_holds_the_reply_until_released() -> None:
    gate = Gate(asyncio.Event(), Reply("released"))
    p = ScriptedProvider([gate])
    task = asyncio.create_task(run(p))
    await asyncio.wait_for(gate.reached.wait(), 1)
    assert not task.done()
    gate.event.set()
    assert final(await asyncio.wait_for(task, 1)).text == "released"


async def test_gate_then_abort() -> None:
    gate = Gate(asyncio.Event(), Reply("never"))
    abort = asyncio.Event()
    p = ScriptedProvider([gate])
    task = asyncio.create_task(run(p, abort=abort))
    await asyncio.wait_for(gate.reached.wait(), 1)
    abort.set()
    (event,) = await asyncio.wait_for(task, 1)
    assert isinstance(event, StreamError) and event.message.stop_reason == "aborted"


async def test_abort_mid_text() -> None:
    abort = asyncio.Event()
    p = ScriptedProvider([Reply("abcdefgh")], chunk=2)
    events: list[StreamEvent] = []
    async for event in p.stream(MODEL, ctx(), StreamOptions(abort=abort)):
        events.append(event)
        abort.set()
    assert events[0] == TextDelta(0, "ab")
    msg = final(events)
    assert len(events) == 2 and msg.stop_reason == "aborted" and msg.text == "ab"


async def test_expect_checks_the_request_then_plays_its_step() -> None:
    seen: list[str] = []

    def check(context: Context) -> None:
        last = context.messages[-1]
        assert isinstance(last, ToolResultMessage) and last.tool_call_id == "call_0001"
        seen.append(last.tool_call_id)

    p = ScriptedProvider([Expect(check, Reply("done"))])
    result = Context("", [ToolResultMessage("call_0001", "read", [TextContent("x")])])
    assert final(await run(p, result)).text == "done" and seen == ["call_0001"]
    p.push(Expect(check, Reply("never")))
    with pytest.raises(AssertionError):
        await run(p, ctx())


async def test_responder_computes_the_reply() -> None:
    def respond(context: Context) -> Reply | Fail:
        last = context.messages[-1]
        if isinstance(last, UserMessage):
            return Reply(last.text.upper())
        return Fail("no user message")

    p = ScriptedProvider([Responder(respond), Responder(respond)])
    assert final(await run(p, ctx("shout"))).text == "SHOUT"
    tool_ctx = Context("", [ToolResultMessage("c", "t", [])])
    assert final(await run(p, tool_ctx)).error_message == "no user message"


async def test_then_error_is_the_default() -> None:
    p = ScriptedProvider([Reply("one")])
    await run(p)
    (event,) = await run(p)
    assert isinstance(event, StreamError)
    assert event.message.error_message == "scripted provider: the script has no step left"


async def test_then_echo() -> None:
    p = ScriptedProvider(then="echo")
    assert final(await run(p, ctx("say this"))).text == "say this"
    text = final([e async for e in p.stream(ECHO_MODEL, ctx("x"), StreamOptions())]).text
    assert text.startswith("(No model is configured yet") and text.endswith("You said: x")


async def test_then_repeat() -> None:
    p = ScriptedProvider([Reply("again")], then="repeat")
    assert [final(await run(p)).text for _ in range(3)] == ["again"] * 3
    empty = ScriptedProvider(then="repeat")  # nothing to repeat yet
    assert isinstance((await run(empty))[-1], StreamError)


async def test_push_appends_steps() -> None:
    p = ScriptedProvider()
    p.push(Reply("a"), Reply("b"))
    assert [final(await run(p)).text for _ in range(2)] == ["a", "b"]


async def test_steps_from_json() -> None:
    steps = steps_from_json(
        [
            {"reply": "hi", "thinking": "t", "usage": {"input": 5, "output": 2}},
            {"toolCalls": [{"name": "read", "arguments": {"path": "a"}}, {"name": "ls"}]},
            {"reply": "cut", "stop": "length"},
            {"fail": "overloaded", "status": 529, "retryAfter": 2},
            {"echo": True},
        ]
    )
    p = ScriptedProvider(steps)
    first = final(await run(p))
    assert first.text == "hi" and first.content[0] == ThinkingContent("t")
    assert (first.usage.input, first.usage.output) == (5, 2)
    second = final(await run(p))
    assert [(c.name, c.arguments) for c in second.tool_calls] == [("read", {"path": "a"}), ("ls", {})]
    assert final(await run(p)).stop_reason == "length"
    fail = (await run(p))[-1]
    assert isinstance(fail, StreamError) and (fail.status, fail.retry_after_s) == (529, 2)
    assert final(await run(p, ctx("echo me"))).text == "echo me"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (["not an object"], "script step 0 must be an object"),
        ([{"reply": "ok"}, {"unknown": 1}], "script step 1: expected one of reply, toolCalls, fail, echo"),
        ([{"echo": False}], "script step 0: expected one of"),
    ],
)
def test_steps_from_json_bad_shapes(raw: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        steps_from_json(raw)


def test_steps_from_json_tool_call_without_name() -> None:
    with pytest.raises(ValueError):
        steps_from_json([{"toolCalls": [{"arguments": {}}]}])


async def test_the_requests_kept_are_bounded_newest_last() -> None:
    """Each request holds a whole prompt: a gateway answering with the built-in echo model for
    months keeps only the latest few (the registry's), a test's provider the latest thousand."""
    p = ScriptedProvider(then="echo", max_requests=5)
    for i in range(12):
        await run(p, ctx(f"m{i}"))
    assert [c.messages[0].text for c in p.requests] == [f"m{i}" for i in range(7, 12)]
    assert ScriptedProvider().max_requests == 1000


def test_the_builtin_echo_provider_keeps_a_few_requests() -> None:
    from homarus.config.models import ModelsConfig
    from homarus.providers.registry import ECHO_KEPT_REQUESTS, ModelRegistry

    echo = ModelRegistry(ModelsConfig()).resolve("homarus/echo").provider
    assert isinstance(echo, ScriptedProvider) and echo.max_requests == ECHO_KEPT_REQUESTS <= 16
