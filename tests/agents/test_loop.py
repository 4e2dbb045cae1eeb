"""Golden event sequences of the double loop, driven by the scripted provider (no sockets, no sleeps)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

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
from homarus.agents.loop import SKIPPED_TEXT, LoopSettings, run_agent_loop
from homarus.messages import AssistantMessage, Message, ModelInfo, ToolResultMessage, UserMessage
from homarus.providers.registry import ResolvedModel
from homarus.providers.scripted import Expect, Fail, Gate, Reply, ScriptedProvider
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function


def _model(provider: ScriptedProvider, name: str = "m1") -> ResolvedModel:
    return ResolvedModel(ModelInfo("test", name, "scripted", context_window=10_000), provider)


def _tools(log: list[str], gates: dict[str, asyncio.Event] | None = None) -> dict[str, Tool]:
    async def echo(ctx: ToolContext, text: str) -> str:
        """Echo the text back."""
        log.append(f"echo:{text}")
        gate = (gates or {}).get(text)
        if gate is not None:
            await gate.wait()
        return f"echo {text}"

    async def boom(ctx: ToolContext) -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    return {t.name: t for t in (tool_from_function(echo), tool_from_function(boom))}


def _settings(
    provider: ScriptedProvider | list[ResolvedModel], events: list[LoopEvent], tools: dict[str, Tool], **kw: Any
) -> LoopSettings:
    candidates = provider if isinstance(provider, list) else [_model(provider)]
    sleeps: list[float] = kw.pop("sleeps", [])

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return LoopSettings(
        candidates=candidates,
        system_prompt="sys",
        tools=tools,
        make_tool_context=lambda cid: ToolContext("agent:main:main", "main", "r1", cid, Path(".")),
        abort=kw.pop("abort", asyncio.Event()),
        emit=events.append,
        sleep=fake_sleep,
        **kw,
    )


def _shape(events: list[LoopEvent]) -> list[str]:
    out: list[str] = []
    for e in events:
        if isinstance(e, MessageUpdate):
            if out and out[-1] == "update":
                continue
            out.append("update")
        elif isinstance(e, MessageStart | MessageEnd):
            out.append(f"{type(e).__name__}({e.message.role})")
        elif isinstance(e, ToolStart | ToolEnd):
            out.append(f"{type(e).__name__}({e.name})")
        else:
            out.append(type(e).__name__)
    return out


async def test_plain_reply() -> None:
    events: list[LoopEvent] = []
    provider = ScriptedProvider([Reply("Hello there, friend!")])
    result = await run_agent_loop([], [UserMessage("hi")], _settings(provider, events, {}))
    assert _shape(events) == [
        "AgentStart",
        "TurnStart",
        "MessageStart(user)",
        "MessageEnd(user)",
        "MessageStart(assistant)",
        "update",
        "MessageEnd(assistant)",
        "TurnEnd",
        "AgentEnd",
    ]
    assert result.final is not None and result.final.text == "Hello there, friend!"
    assert [m.role for m in result.new_messages] == ["user", "assistant"]
    assert isinstance(events[0], AgentStart) and isinstance(events[-1], AgentEnd)


async def test_one_tool_call_then_answer() -> None:
    events: list[LoopEvent] = []
    log: list[str] = []
    provider = ScriptedProvider([Reply("", tool_calls=[("echo", {"text": "a"})]), Reply("done")])
    result = await run_agent_loop([], [UserMessage("go")], _settings(provider, events, _tools(log)))
    assert _shape(events) == [
        "AgentStart",
        "TurnStart",
        "MessageStart(user)",
        "MessageEnd(user)",
        "MessageStart(assistant)",
        "update",
        "MessageEnd(assistant)",
        "ToolStart(echo)",
        "ToolEnd(echo)",
        "MessageStart(toolResult)",
        "MessageEnd(toolResult)",
        "TurnEnd",
        "TurnStart",
        "MessageStart(assistant)",
        "update",
        "MessageEnd(assistant)",
        "TurnEnd",
        "AgentEnd",
    ]
    assert log == ["echo:a"]
    roles = [m.role for m in result.new_messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    second_request = provider.requests[1]
    last = second_request.messages[-1]
    assert isinstance(last, ToolResultMessage) and last.text == "echo a" and last.tool_call_id == "call_0001"


async def test_parallel_calls_results_in_model_order() -> None:
    events: list[LoopEvent] = []
    log: list[str] = []
    gates = {"slow": asyncio.Event()}
    provider = ScriptedProvider(
        [
            Reply("", tool_calls=[("echo", {"text": "slow"}), ("echo", {"text": "fast"}), ("nope", {}), ("boom", {})]),
            Reply("ok"),
        ]
    )

    async def release() -> None:
        while "echo:fast" not in log:
            await asyncio.sleep(0)
        gates["slow"].set()

    releaser = asyncio.create_task(release())
    result = await run_agent_loop([], [UserMessage("go")], _settings(provider, events, _tools(log, gates)))
    await releaser
    assert log == ["echo:slow", "echo:fast"]  # both ran concurrently: fast started while slow waited
    results = [m for m in result.new_messages if isinstance(m, ToolResultMessage)]
    assert [r.text for r in results] == ["echo slow", "echo fast", "Tool nope not found", "RuntimeError: kaboom"]
    assert [r.is_error for r in results] == [False, False, True, True]
    ends = [e.name for e in events if isinstance(e, ToolEnd)]
    assert ends == ["nope", "echo", "echo", "boom"]  # prepare-time failure first, then source order


async def test_steering_skips_remaining_calls() -> None:
    events: list[LoopEvent] = []
    log: list[str] = []
    queued: list[UserMessage] = []
    provider = ScriptedProvider(
        [
            Reply("", tool_calls=[("echo", {"text": "one"}), ("echo", {"text": "two"})]),
            Expect(lambda ctx: _assert_last_user(ctx.messages, "stop that"), Reply("ok, stopping")),
        ]
    )
    tools = _tools(log)
    original = tools["echo"].execute

    async def steer_after_first(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        queued.append(UserMessage("stop that"))
        return await original(ctx, args)

    tools["echo"] = Tool("echo", "Echo", tools["echo"].parameters, steer_after_first)

    def take() -> list[UserMessage]:
        out = list(queued)
        queued.clear()
        return out

    s = _settings(provider, events, tools, tool_execution="sequential", get_steering=take)
    result = await run_agent_loop([], [UserMessage("go")], s)
    results = [m for m in result.new_messages if isinstance(m, ToolResultMessage)]
    assert [r.text for r in results] == ["echo one", SKIPPED_TEXT]
    assert results[1].is_error
    assert log == ["echo:one"]
    assert [m.role for m in result.new_messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
        "assistant",
    ]
    assert result.final is not None and result.final.text == "ok, stopping"


def _assert_last_user(messages: list[Message], text: str) -> None:
    last = messages[-1]
    assert isinstance(last, UserMessage) and last.text == text


async def test_follow_up_runs_after_the_turn() -> None:
    events: list[LoopEvent] = []
    follow = [UserMessage("and then?")]
    provider = ScriptedProvider([Reply("first"), Reply("second")])

    def take() -> list[UserMessage]:
        out = list(follow)
        follow.clear()
        return out

    result = await run_agent_loop([], [UserMessage("hi")], _settings(provider, events, {}, get_follow_ups=take))
    assert [m.role for m in result.new_messages] == ["user", "assistant", "user", "assistant"]
    assert sum(isinstance(e, TurnStart) for e in events) == 2


async def test_abort_mid_stream_keeps_partial_text() -> None:
    events: list[LoopEvent] = []
    abort = asyncio.Event()
    go = asyncio.Event()
    provider = ScriptedProvider([Gate(go, Reply("never sent"))])
    task = asyncio.create_task(run_agent_loop([], [UserMessage("hi")], _settings(provider, events, {}, abort=abort)))
    gate = provider.steps[0] if provider.steps else None
    del gate
    while not any(isinstance(e, TurnStart) for e in events):
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    abort.set()
    result = await asyncio.wait_for(task, 5)
    assert result.final is not None and result.final.stop_reason == "aborted"
    assert isinstance(events[-1], AgentEnd) and isinstance(events[-2], TurnEnd)


async def test_abort_during_tool_call() -> None:
    events: list[LoopEvent] = []
    abort = asyncio.Event()
    gates = {"wait": asyncio.Event()}  # never released: only the abort ends the tool
    log: list[str] = []
    provider = ScriptedProvider([Reply("", tool_calls=[("echo", {"text": "wait"})])])
    s = _settings(provider, events, _tools(log, gates), abort=abort)
    task = asyncio.create_task(run_agent_loop([], [UserMessage("go")], s))
    while "echo:wait" not in log:
        await asyncio.sleep(0)
    abort.set()
    result = await asyncio.wait_for(task, 5)
    results = [m for m in result.new_messages if isinstance(m, ToolResultMessage)]
    assert [r.text for r in results] == ["Aborted."] and results[0].is_error
    assert result.final is not None and result.final.stop_reason == "aborted"
    assert len(provider.requests) == 1  # no further model call after the abort


async def test_retry_then_success_with_backoff() -> None:
    events: list[LoopEvent] = []
    sleeps: list[float] = []
    provider = ScriptedProvider(
        [Fail("rate limit exceeded", status=429), Fail("503 service unavailable", status=503), Reply("finally")]
    )
    result = await run_agent_loop([], [UserMessage("hi")], _settings(provider, events, {}, sleeps=sleeps))
    assert result.final is not None and result.final.text == "finally"
    assert sleeps == [2.0, 4.0]
    retries = [e for e in events if isinstance(e, Retry)]
    assert [(r.attempt, r.delay_ms) for r in retries] == [(1, 2000), (2, 4000)]
    assert [m.role for m in result.new_messages] == ["user", "assistant"]  # failed attempts are not kept


async def test_non_retryable_error_falls_back_to_next_model() -> None:
    events: list[LoopEvent] = []
    first = ScriptedProvider([Fail("invalid api key", status=401)])
    second = ScriptedProvider([Reply("from the fallback")])
    candidates = [_model(first, "primary"), _model(second, "backup")]
    result = await run_agent_loop([], [UserMessage("hi")], _settings(candidates, events, {}))
    assert result.final is not None and result.final.text == "from the fallback"
    assert result.model_ref == "test/backup"
    fallbacks = [e for e in events if isinstance(e, Fallback)]
    assert [(f.from_model, f.to_model) for f in fallbacks] == [("test/primary", "test/backup")]


async def test_exhausted_retries_end_with_error_message() -> None:
    events: list[LoopEvent] = []
    provider = ScriptedProvider([Fail("overloaded", status=529)] * 4)
    result = await run_agent_loop([], [UserMessage("hi")], _settings(provider, events, {}))
    assert result.final is not None and result.final.stop_reason == "error"
    assert result.final.error_message == "overloaded"
    assert len(provider.requests) == 4  # one try + 3 retries


async def test_overflow_compacts_then_retries() -> None:
    events: list[LoopEvent] = []
    provider = ScriptedProvider(
        [Fail("prompt is too long: 213462 tokens > 200000 maximum", status=400), Reply("fits now")]
    )
    calls: list[int] = []

    async def on_overflow(history: list[Message]) -> list[Message]:
        calls.append(len(history))
        return [UserMessage("summary of before"), *history[-1:]]

    history: list[Message] = [UserMessage("old"), AssistantMessage(), UserMessage("older")]
    result = await run_agent_loop(
        history, [UserMessage("hi")], _settings(provider, events, {}, on_overflow=on_overflow)
    )
    assert calls == [4]
    assert result.final is not None and result.final.text == "fits now"
    assert isinstance(result.history[0], UserMessage) and result.history[0].text == "summary of before"
    assert provider.requests[1].messages[0].role == "user"


async def test_invalid_tool_arguments_become_an_error_result() -> None:
    events: list[LoopEvent] = []
    log: list[str] = []
    provider = ScriptedProvider(
        [
            Reply("", tool_calls=[("echo", {}), ("echo", {"wrong": 1})], raw_arguments=['{"text": ', '{"wrong": 1}']),
            Reply("sorry"),
        ]
    )
    result = await run_agent_loop([], [UserMessage("go")], _settings(provider, events, _tools(log)))
    results = [m for m in result.new_messages if isinstance(m, ToolResultMessage)]
    assert results[0].is_error and results[0].text.startswith("Invalid arguments for echo: invalid JSON")
    assert results[1].is_error and "invalid arguments for echo" in results[1].text
    assert log == []


async def test_lazy_tool_schemas_send_names_only_until_asked() -> None:
    from homarus.tools.base import tool_schema_tool

    events: list[LoopEvent] = []
    log: list[str] = []
    tools = _tools(log)
    tools["tool_schema"] = tool_schema_tool(dict(tools))
    provider = ScriptedProvider(
        [
            Reply("", tool_calls=[("tool_schema", {"names": ["echo"]})]),
            Reply("", tool_calls=[("echo", {"text": "x"})]),
            Reply("done"),
        ]
    )
    s = _settings(provider, events, tools, lazy_tools=True)
    result = await run_agent_loop([], [UserMessage("go")], s)
    sent = {t.name: t for t in provider.requests[0].tools}
    assert sent["echo"].parameters == {"type": "object"}  # any object: the real schema is a call away
    assert "properties" in sent["tool_schema"].parameters
    schema_result = next(m for m in result.new_messages if isinstance(m, ToolResultMessage))
    assert '"text"' in schema_result.text and log == ["echo:x"]
