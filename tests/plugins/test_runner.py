"""HookRunner: ordering, concurrency, isolation, results, timeouts, failure policy, bookkeeping."""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import warnings
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

import pytest

from homarus.plugins import events as ev
from homarus.plugins import hookspecs
from homarus.plugins.runner import HookRegistration, HookRunner

Handler = Callable[[Any, ev.HookContext], Any]


def add(
    runner: HookRunner,
    plugin: str,
    hook: str,
    handler: Handler,
    *,
    priority: int = 0,
    timeout_ms: int | None = None,
    matcher: frozenset[str] | None = None,
    plugin_config: dict[str, Any] | None = None,
) -> HookRegistration:
    return runner.add(
        HookRegistration(
            plugin,
            hook,
            handler,
            priority=priority,
            timeout_ms=timeout_ms,
            matcher=matcher,
            plugin_config=plugin_config or {},
        )
    )


def recorder(log: list[str], name: str, result: Any = None) -> Handler:
    """A sync handler that records its name and returns ``result``."""

    def handler(event: Any, ctx: ev.HookContext) -> Any:
        log.append(name)
        return result

    return handler


def tool_event(tool: str = "exec", params: dict[str, Any] | None = None) -> ev.BeforeToolCallEvent:
    return ev.BeforeToolCallEvent(tool, params if params is not None else {"cmd": "ls"}, run_id="r1")


class Slow:
    """An async handler that waits for ``release`` forever (unless released), recording how it ended."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.ended = asyncio.Event()
        self.state: list[str] = []

    async def __call__(self, event: Any, ctx: ev.HookContext) -> Any:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.state.append("cancelled")
            raise
        finally:
            self.ended.set()
        self.state.append("finished")
        return None

    async def finish(self) -> None:
        """Release the handler and wait until it has really ended (so no task is left pending)."""
        self.release.set()
        async with asyncio.timeout(1):
            await self.ended.wait()


# -- registration, ordering, has, remove_plugin ----------------------------------------------------
async def test_higher_priority_runs_first_and_ties_keep_registration_order() -> None:
    runner = HookRunner()
    log: list[str] = []
    for name, priority in (("low", -5), ("tie1", 10), ("mid", 0), ("tie2", 10), ("high", 100), ("tie3", 10)):
        add(runner, name, "before_model_resolve", recorder(log, name), priority=priority)
    await runner.modify("before_model_resolve", ev.BeforeModelResolveEvent("hi"))
    assert log == ["high", "tie1", "tie2", "tie3", "mid", "low"]
    assert [r.plugin_id for r in runner.handlers("before_model_resolve")] == log


async def test_add_stamps_increasing_order_and_rejects_unknown_hooks() -> None:
    runner = HookRunner()
    first = add(runner, "p", "agent_end", recorder([], "x"))
    second = add(runner, "p", "message_received", recorder([], "y"))
    assert 0 < first.order < second.order
    with pytest.raises(ValueError, match="unknown hook 'no_such_hook'"):
        add(runner, "p", "no_such_hook", recorder([], "z"))
    assert not runner.has("no_such_hook")


async def test_has_and_remove_plugin() -> None:
    runner = HookRunner()
    assert not runner.has("message_received")
    add(runner, "a", "message_received", recorder([], "a"))
    add(runner, "a", "before_model_resolve", recorder([], "a"))
    add(runner, "b", "before_model_resolve", recorder([], "b"))
    assert runner.has("message_received") and runner.has("before_model_resolve")
    assert not runner.has("agent_end")

    runner.remove_plugin("a")
    assert not runner.has("message_received")
    assert [r.plugin_id for r in runner.handlers("before_model_resolve")] == ["b"]
    runner.remove_plugin("missing")  # no-op
    runner.remove_plugin("b")
    assert not runner.has("before_model_resolve")
    assert await runner.void("message_received", ev.MessageReceivedEvent("hi")) == []
    outcome = await runner.modify("before_model_resolve", ev.BeforeModelResolveEvent("hi"))
    assert outcome.result == ev.BeforeModelResolveResult() and outcome.decided_by is None


async def test_handlers_filter_by_matcher_only_when_a_tool_name_is_given() -> None:
    runner = HookRunner()
    add(runner, "any", "after_tool_call", recorder([], "any"))
    add(runner, "execonly", "after_tool_call", recorder([], "e"), matcher=frozenset({"exec"}))
    assert [r.plugin_id for r in runner.handlers("after_tool_call", "exec")] == ["any", "execonly"]
    assert [r.plugin_id for r in runner.handlers("after_tool_call", "read")] == ["any"]
    assert [r.plugin_id for r in runner.handlers("after_tool_call")] == ["any", "execonly"]


async def test_void_hook_matcher_filters_by_tool_name() -> None:
    runner = HookRunner()
    log: list[str] = []
    add(runner, "execonly", "after_tool_call", recorder(log, "execonly"), matcher=frozenset({"exec"}))
    add(runner, "any", "after_tool_call", recorder(log, "any"))
    await runner.void("after_tool_call", ev.AfterToolCallEvent("read", {}), tool_name="read")
    assert log == ["any"]
    await runner.void("after_tool_call", ev.AfterToolCallEvent("exec", {}), tool_name="exec")
    assert sorted(log) == ["any", "any", "execonly"]


# -- concurrency -----------------------------------------------------------------------------------
async def test_void_handlers_run_concurrently() -> None:
    """Each handler waits for the other's event: only concurrent dispatch lets both finish."""
    runner = HookRunner()
    a_in, b_in = asyncio.Event(), asyncio.Event()
    done: list[str] = []

    async def a(event: Any, ctx: ev.HookContext) -> None:
        a_in.set()
        await b_in.wait()
        done.append("a")

    async def b(event: Any, ctx: ev.HookContext) -> None:
        b_in.set()
        await a_in.wait()
        done.append("b")

    add(runner, "a", "message_received", a, priority=10)
    add(runner, "b", "message_received", b)
    async with asyncio.timeout(2):
        errors = await runner.void("message_received", ev.MessageReceivedEvent("hi"))
    assert errors == []
    assert sorted(done) == ["a", "b"]


async def test_modifying_handlers_run_one_at_a_time_in_priority_order() -> None:
    runner = HookRunner()
    log: list[str] = []

    def step(name: str) -> Handler:
        async def handler(event: Any, ctx: ev.HookContext) -> dict[str, Any]:
            log.append(f"{name}:start")
            for _ in range(3):  # yield to the loop: a concurrent runner would interleave here
                await asyncio.sleep(0)
            log.append(f"{name}:end")
            return {"prepend_context": name}

        return handler

    add(runner, "c", "agent_turn_prepare", step("c"), priority=1)
    add(runner, "a", "agent_turn_prepare", step("a"), priority=3)
    add(runner, "b", "agent_turn_prepare", step("b"), priority=2)
    outcome = await runner.modify("agent_turn_prepare", ev.AgentTurnPrepareEvent("hi"))
    assert log == ["a:start", "a:end", "b:start", "b:end", "c:start", "c:end"]
    assert outcome.result.prepend_context == "a\n\nb\n\nc"


# -- isolation: per-handler context, the caller's event untouched ----------------------------------
async def test_each_handler_sees_its_own_plugin_config_and_the_event_is_not_mutated() -> None:
    runner = HookRunner()
    seen: dict[str, tuple[Any, ...]] = {}

    def observer(event: ev.AgentTurnPrepareEvent, ctx: ev.HookContext) -> dict[str, Any]:
        seen[ctx.plugin_id] = (
            event.context.plugin_id,
            event.context.plugin_config,
            ctx.plugin_config,
            event.context.run_id,
            ctx.session_key,
            event.context is ctx,
        )
        event.prompt = f"rewritten by {ctx.plugin_id}"  # on its own copy only
        event.context = ev.HookContext(plugin_id="forged")
        return {"append_context": event.prompt}

    add(runner, "alpha", "agent_turn_prepare", observer, priority=2, plugin_config={"key": "a"})
    add(runner, "beta", "agent_turn_prepare", observer, priority=1, plugin_config={"key": "b"})
    context = ev.HookContext(run_id="run-1", session_key="agent:main:main")
    event = ev.AgentTurnPrepareEvent("original", context=context)
    outcome = await runner.modify("agent_turn_prepare", event)

    assert seen["alpha"] == ("alpha", {"key": "a"}, {"key": "a"}, "run-1", "agent:main:main", True)
    assert seen["beta"] == ("beta", {"key": "b"}, {"key": "b"}, "run-1", "agent:main:main", True)
    # the caller's event: same prompt, same context object, no plugin id or config injected
    assert event.prompt == "original"
    assert event.context is context
    assert context.plugin_id == "" and context.plugin_config == {}
    assert outcome.result.append_context == "rewritten by alpha\n\nrewritten by beta"


async def test_void_handlers_each_see_their_own_plugin_config() -> None:
    runner = HookRunner()
    seen: dict[str, dict[str, Any]] = {}

    async def observer(event: ev.AgentEndEvent, ctx: ev.HookContext) -> None:
        await asyncio.sleep(0)
        assert event.context.plugin_config is ctx.plugin_config
        seen[ctx.plugin_id] = ctx.plugin_config

    for i in range(3):
        add(runner, f"p{i}", "agent_end", observer, plugin_config={"n": i})
    event = ev.AgentEndEvent("run", True)
    assert await runner.void("agent_end", event) == []
    assert seen == {"p0": {"n": 0}, "p1": {"n": 1}, "p2": {"n": 2}}
    assert event.context == ev.HookContext()


async def test_sync_hook_handlers_see_their_own_config_and_the_event_is_not_mutated() -> None:
    runner = HookRunner()
    seen: list[tuple[str, Any, Any]] = []

    def observer(event: ev.BeforeMessageWriteEvent, ctx: ev.HookContext) -> None:
        seen.append((ctx.plugin_id, ctx.plugin_config, event.context.plugin_config))
        event.message = {"role": "forged"}

    add(runner, "a", "before_message_write", observer, priority=1, plugin_config={"a": 1})
    add(runner, "b", "before_message_write", observer, plugin_config={"b": 2})
    event = ev.BeforeMessageWriteEvent({"role": "user"})
    assert runner.sync("before_message_write", event) is None
    assert seen == [("a", {"a": 1}, {"a": 1}), ("b", {"b": 2}, {"b": 2})]
    assert event.message == {"role": "user"} and event.context == ev.HookContext()


# -- handler kinds and result shapes ---------------------------------------------------------------
async def test_async_and_sync_handlers_both_work() -> None:
    runner = HookRunner()

    async def async_handler(event: Any, ctx: ev.HookContext) -> ev.AgentTurnPrepareResult:
        await asyncio.sleep(0)
        return ev.AgentTurnPrepareResult(prepend_context="async")

    def sync_handler(event: Any, ctx: ev.HookContext) -> dict[str, Any]:
        return {"prepend_context": "sync"}

    add(runner, "a", "agent_turn_prepare", async_handler, priority=1)
    add(runner, "s", "agent_turn_prepare", sync_handler)
    outcome = await runner.modify("agent_turn_prepare", ev.AgentTurnPrepareEvent("hi"))
    assert outcome.result.prepend_context == "async\n\nsync"
    assert outcome.errors == []


async def test_dict_results_with_snake_case_keys_work() -> None:
    runner = HookRunner()
    add(runner, "p", "before_prompt_build", recorder([], "p", {"system_prompt": "S", "tools_allow": ["read"]}))
    outcome = await runner.modify("before_prompt_build", ev.BeforePromptBuildEvent("hi"))
    assert outcome.result.system_prompt == "S" and outcome.result.tools_allow == ["read"]


async def test_unknown_dict_keys_skip_the_handler_on_fail_open_hooks() -> None:
    runner = HookRunner()
    log: list[str] = []
    add(runner, "camel", "agent_turn_prepare", recorder(log, "camel", {"prependContext": "x"}), priority=3)
    add(runner, "wrongtype", "agent_turn_prepare", recorder(log, "wrongtype", "just a string"), priority=2)
    add(runner, "good", "agent_turn_prepare", recorder(log, "good", {"prepend_context": "ok"}), priority=1)
    outcome = await runner.modify("agent_turn_prepare", ev.AgentTurnPrepareEvent("hi"))
    assert log == ["camel", "wrongtype", "good"]
    assert outcome.result.prepend_context == "ok"
    assert outcome.decided_by is None
    assert len(outcome.errors) == 2
    assert outcome.errors[0].startswith("camel: ") and "prependContext" in outcome.errors[0]
    assert outcome.errors[1].startswith("wrongtype: ") and "str" in outcome.errors[1]


@pytest.mark.parametrize(
    ("hook", "event", "blocked"),
    [
        ("before_tool_call", tool_event(), lambda r: r.block is True),
        ("before_agent_run", ev.BeforeAgentRunEvent("hi"), lambda r: r.outcome == "block"),
        ("before_install", ev.BeforeInstallEvent("plugin", "x", "/tmp/x"), lambda r: r.block is True),
    ],
)
async def test_unknown_dict_keys_block_on_fail_closed_hooks(
    hook: str, event: Any, blocked: Callable[[Any], bool]
) -> None:
    runner = HookRunner()
    log: list[str] = []
    add(runner, "typo", hook, recorder(log, "typo", {"blockk": True}), priority=1)
    add(runner, "later", hook, recorder(log, "later"))
    outcome = await runner.modify(hook, event)
    assert blocked(outcome.result)
    assert outcome.decided_by == "typo"
    assert log == ["typo"]  # terminal: the remaining handlers are not asked
    assert len(outcome.errors) == 1 and "blockk" in outcome.errors[0]


# -- timeouts --------------------------------------------------------------------------------------
async def test_timeout_on_a_fail_open_hook_skips_the_handler_and_does_not_cancel_it() -> None:
    runner = HookRunner()
    slow = Slow()
    add(runner, "slow", "before_prompt_build", slow, priority=2, timeout_ms=50)
    add(runner, "fast", "before_prompt_build", recorder([], "fast", {"append_context": "fast"}), priority=1)
    try:
        outcome = await runner.modify("before_prompt_build", ev.BeforePromptBuildEvent("hi"))
        assert outcome.result.append_context == "fast"
        assert outcome.decided_by is None
        assert outcome.errors == ["slow: timed out after 50 ms"]
        assert slow.state == []  # still running: not cancelled, only no longer waited for
        assert not slow.ended.is_set()
    finally:
        await slow.finish()
    assert slow.state == ["finished"]
    assert runner.calls[("before_prompt_build", "slow")] == 1


async def test_timeout_on_before_tool_call_blocks_with_the_hook_and_plugin_named() -> None:
    runner = HookRunner()
    slow = Slow()
    log: list[str] = []
    add(runner, "slowguard", "before_tool_call", slow, priority=5, timeout_ms=50)
    add(runner, "later", "before_tool_call", recorder(log, "later"))
    try:
        outcome = await runner.modify("before_tool_call", tool_event(), tool_name="exec")
        result: ev.BeforeToolCallResult = outcome.result
        assert result.block is True
        assert result.block_reason is not None
        assert "before_tool_call hook" in result.block_reason and "slowguard" in result.block_reason
        assert "timed out after 50 ms" in result.block_reason
        assert outcome.decided_by == "slowguard"
        assert log == []
    finally:
        await slow.finish()
    assert slow.state == ["finished"]


async def test_timeout_on_before_agent_run_blocks() -> None:
    runner = HookRunner()
    slow = Slow()
    add(runner, "gate", "before_agent_run", slow, timeout_ms=50)
    try:
        outcome = await runner.modify("before_agent_run", ev.BeforeAgentRunEvent("hi"))
        assert outcome.result.outcome == "block"
        assert "before_agent_run hook from gate" in (outcome.result.reason or "")
        assert outcome.decided_by == "gate"
    finally:
        await slow.finish()
    assert slow.state == ["finished"]


async def test_timeout_on_a_void_hook_is_returned_and_others_complete() -> None:
    runner = HookRunner()
    slow = Slow()
    log: list[str] = []
    add(runner, "slow", "message_sent", slow, timeout_ms=50)
    add(runner, "quick", "message_sent", recorder(log, "quick"))
    try:
        errors = await runner.void("message_sent", ev.MessageSentEvent("me", "hi", True))
        assert errors == ["slow: timed out after 50 ms"]
        assert log == ["quick"]
        assert slow.state == []
    finally:
        await slow.finish()
    assert slow.state == ["finished"]


async def test_the_hook_default_timeout_applies_and_a_registration_timeout_overrides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = hookspecs.HOOKS["before_model_resolve"]
    assert spec.default_timeout_ms is None
    monkeypatch.setitem(hookspecs.HOOKS, "before_model_resolve", replace(spec, default_timeout_ms=30))
    runner = HookRunner()
    slow = Slow()
    add(runner, "slow", "before_model_resolve", slow)  # no timeout of its own: the default applies
    try:
        outcome = await runner.modify("before_model_resolve", ev.BeforeModelResolveEvent("hi"))
        assert outcome.errors == ["slow: timed out after 30 ms"]
    finally:
        await slow.finish()

    runner = HookRunner()
    slow = Slow()
    add(runner, "patient", "before_model_resolve", slow, timeout_ms=60_000)

    async def release_later() -> None:
        await slow.started.wait()
        await asyncio.sleep(0.06)  # longer than the hook default: only the registration's limit applies
        slow.release.set()

    releaser = asyncio.create_task(release_later())
    outcome = await runner.modify("before_model_resolve", ev.BeforeModelResolveEvent("hi"))
    await releaser
    assert outcome.errors == []
    assert slow.state == ["finished"]


async def test_a_straggler_that_fails_after_its_timeout_is_logged_with_the_plugin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner()
    release = asyncio.Event()
    ended = asyncio.Event()

    async def late_failure(event: Any, ctx: ev.HookContext) -> None:
        try:
            await release.wait()
            raise RuntimeError("late boom")
        finally:
            ended.set()

    add(runner, "late", "agent_turn_prepare", late_failure, timeout_ms=20)
    outcome = await runner.modify("agent_turn_prepare", ev.AgentTurnPrepareEvent("hi"))
    assert outcome.errors == ["late: timed out after 20 ms"]
    with caplog.at_level(logging.WARNING, logger="homarus.hooks"):
        release.set()
        await ended.wait()
        for _ in range(3):  # the done callback runs on a later loop iteration
            await asyncio.sleep(0)
    assert any("late" in r.getMessage() and "late boom" in r.getMessage() for r in caplog.records)


async def test_a_cancelled_caller_does_not_orphan_the_handler_task() -> None:
    """The handler keeps running after the caller is cancelled, and the runner keeps it referenced."""
    runner = HookRunner()
    refs: list[weakref.ref[asyncio.Task[Any]]] = []
    waiter: list[asyncio.Future[None]] = []

    async def handler(event: Any, ctx: ev.HookContext) -> None:
        task = asyncio.current_task()
        assert task is not None
        refs.append(weakref.ref(task))
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter.append(fut)
        await fut

    add(runner, "p", "agent_turn_prepare", handler)

    async def cancel_a_caller() -> None:  # in its own task, so no frame of ours keeps the cancelled call alive
        caller = asyncio.create_task(runner.modify("agent_turn_prepare", ev.AgentTurnPrepareEvent("hi")))
        while not refs:
            await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller

    await asyncio.create_task(cancel_a_caller())
    fut = waiter.pop()
    fut_ref = weakref.ref(fut)
    del fut
    gc.collect()
    task = refs[0]()
    assert task is not None and not task.done()  # kept alive by the runner, not collected mid-flight
    target = fut_ref()
    assert target is not None
    target.set_result(None)
    await task
    assert task.done() and not task.cancelled()


# -- errors ----------------------------------------------------------------------------------------
async def test_a_raising_void_handler_does_not_stop_the_others_and_is_returned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner()
    log: list[str] = []

    async def boom(event: Any, ctx: ev.HookContext) -> None:
        raise RuntimeError("kaboom")

    def sync_boom(event: Any, ctx: ev.HookContext) -> None:
        raise KeyError("sync")

    add(runner, "first", "session_start", recorder(log, "first"), priority=5)
    add(runner, "bad", "session_start", boom, priority=3)
    add(runner, "worse", "session_start", sync_boom, priority=2)
    add(runner, "last", "session_start", recorder(log, "last"))
    with caplog.at_level(logging.WARNING, logger="homarus.hooks"):
        errors = await runner.void("session_start", ev.SessionStartEvent("s1"))
    assert sorted(log) == ["first", "last"]
    assert errors == ["bad: kaboom", "worse: 'sync'"]
    assert any("session_start handler from bad failed" in r.getMessage() for r in caplog.records)


async def test_a_raising_handler_on_a_fail_open_hook_is_skipped() -> None:
    runner = HookRunner()

    def boom(event: Any, ctx: ev.HookContext) -> None:
        raise RuntimeError("nope")

    add(runner, "a", "message_sending", recorder([], "a", {"content": "A"}), priority=3)
    add(runner, "bad", "message_sending", boom, priority=2)
    add(runner, "c", "message_sending", recorder([], "c", {"metadata": {"k": 1}}), priority=1)
    outcome = await runner.modify("message_sending", ev.MessageSendingEvent("me", "orig"))
    assert outcome.result.content == "A" and outcome.result.metadata == {"k": 1}
    assert outcome.errors == ["bad: nope"]
    assert outcome.decided_by is None


@pytest.mark.parametrize(
    ("hook", "event"),
    [
        ("before_tool_call", tool_event()),
        ("before_agent_run", ev.BeforeAgentRunEvent("hi")),
        ("before_install", ev.BeforeInstallEvent("skill", "s", "/tmp/s")),
    ],
)
async def test_a_raising_handler_on_a_fail_closed_hook_blocks(hook: str, event: Any) -> None:
    runner = HookRunner()
    log: list[str] = []

    async def boom(event: Any, ctx: ev.HookContext) -> None:
        raise RuntimeError("exploded")

    add(runner, "ok", hook, recorder(log, "ok"), priority=2)
    add(runner, "bad", hook, boom, priority=1)
    add(runner, "never", hook, recorder(log, "never"))
    outcome = await runner.modify(hook, event)
    reason = getattr(outcome.result, "block_reason", None) or outcome.result.reason
    assert f"{hook} hook from bad failed: exploded" in reason
    assert getattr(outcome.result, "block", None) is True or outcome.result.outcome == "block"
    assert outcome.decided_by == "bad"
    assert outcome.errors == ["bad: exploded"]
    assert log == ["ok"]


# -- claim hooks -----------------------------------------------------------------------------------
async def test_claim_first_handled_wins() -> None:
    runner = HookRunner()
    log: list[str] = []

    def raising(event: Any, ctx: ev.HookContext) -> None:
        log.append("raising")
        raise RuntimeError("broken claimer")

    add(runner, "declines", "before_agent_reply", recorder(log, "declines", {"handled": False}), priority=5)
    add(runner, "raising", "before_agent_reply", raising, priority=4)
    add(runner, "silent", "before_agent_reply", recorder(log, "silent"), priority=3)
    add(runner, "winner", "before_agent_reply", recorder(log, "winner", {"handled": True, "reply": "W"}), priority=2)
    add(runner, "loser", "before_agent_reply", recorder(log, "loser", {"handled": True, "reply": "L"}), priority=1)
    result, plugin = await runner.claim("before_agent_reply", ev.BeforeAgentReplyEvent("hi"))
    assert plugin == "winner"
    assert result == ev.BeforeAgentReplyResult(handled=True, reply="W")
    assert log == ["declines", "raising", "silent", "winner"]


async def test_claim_returns_none_when_nobody_claims() -> None:
    runner = HookRunner()
    assert await runner.claim("before_agent_reply", ev.BeforeAgentReplyEvent("hi")) == (None, None)
    add(runner, "no", "before_agent_reply", recorder([], "no", ev.BeforeAgentReplyResult(handled=False)))
    assert await runner.claim("before_agent_reply", ev.BeforeAgentReplyEvent("hi")) == (None, None)


# -- sync hooks ------------------------------------------------------------------------------------
async def test_tool_result_persist_is_chained() -> None:
    runner = HookRunner()
    seen: list[dict[str, Any]] = []

    def tagger(tag: str) -> Handler:
        def handler(event: ev.ToolResultPersistEvent, ctx: ev.HookContext) -> dict[str, Any]:
            seen.append(event.message)
            return {"message": {**event.message, "tags": [*event.message.get("tags", []), tag]}}

        return handler

    add(runner, "a", "tool_result_persist", tagger("a"), priority=2)
    add(runner, "b", "tool_result_persist", tagger("b"), priority=1)
    original = {"role": "toolResult", "text": "out"}
    result = runner.sync("tool_result_persist", ev.ToolResultPersistEvent(original, "exec", "c1"))
    assert isinstance(result, ev.ToolResultPersistResult)
    assert result.message == {"role": "toolResult", "text": "out", "tags": ["a", "b"]}
    assert seen == [original, {"role": "toolResult", "text": "out", "tags": ["a"]}]
    assert original == {"role": "toolResult", "text": "out"}


async def test_a_later_empty_sync_result_keeps_the_earlier_rewrite() -> None:
    """``{}`` from a later handler is "no change": the next handler and the caller see the rewrite."""
    runner = HookRunner()
    seen: list[dict[str, Any]] = []

    def observe(result: Any) -> Handler:
        def handler(event: ev.ToolResultPersistEvent, ctx: ev.HookContext) -> Any:
            seen.append(event.message)
            return result

        return handler

    add(runner, "rewrite", "tool_result_persist", recorder([], "r", {"message": {"v": 1}}), priority=3)
    add(runner, "empty", "tool_result_persist", observe({}), priority=2)
    add(runner, "dataclass", "tool_result_persist", observe(ev.ToolResultPersistResult()), priority=1)
    add(runner, "none", "tool_result_persist", observe(None))
    result = runner.sync("tool_result_persist", ev.ToolResultPersistEvent({"v": 0}))
    assert result == ev.ToolResultPersistResult(message={"v": 1})
    assert seen == [{"v": 1}, {"v": 1}, {"v": 1}]

    runner = HookRunner()
    add(runner, "rewrite", "before_message_write", recorder([], "r", {"message": {"v": 2}}), priority=1)
    add(runner, "allow", "before_message_write", recorder([], "a", {"block": False}))
    result = runner.sync("before_message_write", ev.BeforeMessageWriteEvent({"v": 0}))
    assert result == ev.BeforeMessageWriteResult(block=False, message={"v": 2})


async def test_before_message_write_block_returns_immediately() -> None:
    runner = HookRunner()
    log: list[str] = []
    add(runner, "rewrite", "before_message_write", recorder(log, "rewrite", {"message": {"x": 1}}), priority=3)
    add(runner, "blocker", "before_message_write", recorder(log, "blocker", {"block": True}), priority=2)
    add(runner, "never", "before_message_write", recorder(log, "never", {"message": {"y": 2}}), priority=1)
    result = runner.sync("before_message_write", ev.BeforeMessageWriteEvent({"role": "user"}))
    assert isinstance(result, ev.BeforeMessageWriteResult) and result.block is True
    assert log == ["rewrite", "blocker"]
    assert ("before_message_write", "never") not in runner.calls


async def test_sync_hook_errors_are_skipped() -> None:
    runner = HookRunner()

    def boom(event: Any, ctx: ev.HookContext) -> None:
        raise RuntimeError("sync failure")

    add(runner, "boom", "before_message_write", boom, priority=3)
    add(runner, "typo", "before_message_write", recorder([], "t", {"blocked": True}), priority=2)
    add(runner, "ok", "before_message_write", recorder([], "ok", {"message": {"ok": True}}), priority=1)
    result = runner.sync("before_message_write", ev.BeforeMessageWriteEvent({}))
    assert result == ev.BeforeMessageWriteResult(message={"ok": True})
    assert runner.calls[("before_message_write", "boom")] == 1


async def test_an_async_handler_on_a_sync_hook_is_ignored_and_its_coroutine_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner()
    coros: list[Coroutine[Any, Any, Any]] = []
    ran: list[str] = []

    async def async_rewrite(event: Any, ctx: ev.HookContext) -> dict[str, Any]:
        ran.append("body")  # never reached: the coroutine is closed before it starts
        return {"message": {"from": "async"}}

    def wrapped(event: Any, ctx: ev.HookContext) -> Coroutine[Any, Any, Any]:
        coro = async_rewrite(event, ctx)
        coros.append(coro)
        return coro

    add(runner, "asyncplugin", "tool_result_persist", wrapped, priority=1)
    add(runner, "syncplugin", "tool_result_persist", recorder([], "s", {"message": {"from": "sync"}}))
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, logger="homarus.hooks"):
        warnings.simplefilter("always")
        result = runner.sync("tool_result_persist", ev.ToolResultPersistEvent({"from": "caller"}))
        del wrapped
        gc.collect()
    assert result == ev.ToolResultPersistResult(message={"from": "sync"})
    assert ran == []
    assert len(coros) == 1 and inspect.getcoroutinestate(coros[0]) == inspect.CORO_CLOSED
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert any(
        "tool_result_persist handler from asyncplugin returned an awaitable" in r.getMessage() for r in caplog.records
    )


async def test_sync_with_no_handlers_returns_none() -> None:
    runner = HookRunner()
    assert runner.sync("before_message_write", ev.BeforeMessageWriteEvent({})) is None


# -- bookkeeping -----------------------------------------------------------------------------------
async def test_calls_count_every_invocation_per_hook_and_plugin() -> None:
    runner = HookRunner()

    def boom(event: Any, ctx: ev.HookContext) -> None:
        raise RuntimeError("x")

    add(runner, "a", "message_received", recorder([], "a"))
    add(runner, "a", "before_tool_call", recorder([], "a"), priority=3)
    add(runner, "b", "before_tool_call", recorder([], "b", {"block": True}), priority=2)
    add(runner, "c", "before_tool_call", recorder([], "c"), priority=1)  # after a terminal block: not called
    add(runner, "m", "before_tool_call", recorder([], "m"), priority=9, matcher=frozenset({"read"}))
    add(runner, "boom", "agent_end", boom)
    for _ in range(3):
        await runner.void("message_received", ev.MessageReceivedEvent("hi"))
    await runner.modify("before_tool_call", tool_event("exec"), tool_name="exec")
    await runner.void("agent_end", ev.AgentEndEvent("r", True))
    assert runner.calls == {
        ("message_received", "a"): 3,
        ("before_tool_call", "a"): 1,
        ("before_tool_call", "b"): 1,
        ("agent_end", "boom"): 1,
    }


async def test_trace_logs_each_call(caplog: pytest.LogCaptureFixture) -> None:
    runner = HookRunner(trace=True)
    add(runner, "tracer", "message_received", recorder([], "t"))
    with caplog.at_level(logging.INFO, logger="homarus.hooks"):
        await runner.void("message_received", ev.MessageReceivedEvent("hi"))
    assert any("message_received → tracer" in r.getMessage() for r in caplog.records)


async def test_a_terminal_decision_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    runner = HookRunner()
    add(runner, "guard", "before_tool_call", recorder([], "g", {"block": True}), priority=7)
    with caplog.at_level(logging.INFO, logger="homarus.hooks"):
        await runner.modify("before_tool_call", tool_event())
    assert any(
        "before_tool_call decided by guard (priority=7); skipping remaining handlers" in r.getMessage()
        for r in caplog.records
    )
