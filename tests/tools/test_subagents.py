"""`sessions_spawn` / `sessions_send` end to end: real gateway, one scripted model routing by request."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from homarus.messages import (
    Context,
    ModelInfo,
    StreamEvent,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from homarus.plugins import events as ev
from homarus.plugins.runner import HookRegistration
from homarus.providers.scripted import Fail, Reply, Responder, ScriptedProvider
from homarus.sessions.manager import SessionManager
from homarus.sessions.store import SessionStore
from homarus.tools.base import Tool, ToolContext, ToolResult, ToolServices
from homarus.tools.subagents import subagent_tools
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}, "retry": {"maxRetries": 0}}},
}
Route = Callable[[Context], Reply | Fail]


class Router(ScriptedProvider):
    """Answers every request through ``route``; requests of children wait while ``hold`` is clear."""

    def __init__(self, route: Route, hold: threading.Event | None = None) -> None:
        super().__init__([Responder(route)], then="repeat")
        self.hold = hold

    async def stream(self, model: ModelInfo, context: Context, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        if self.hold is not None and _first_user(context).startswith("child"):
            while not self.hold.is_set() and not (options.abort is not None and options.abort.is_set()):
                await asyncio.sleep(0.01)
        async for event in super().stream(model, context, options):
            yield event


def _first_user(context: Context) -> str:
    return next((m.text for m in context.messages if isinstance(m, UserMessage)), "")


def _last_user(context: Context) -> str:
    return next((m.text for m in reversed(context.messages) if isinstance(m, UserMessage)), "")


def _last_result(context: Context) -> ToolResultMessage | None:
    last = context.messages[-1] if context.messages else None
    return last if isinstance(last, ToolResultMessage) else None


def _tool_names(context: Context) -> set[str]:
    return {t.name for t in context.tools}


async def _client(gw: RunningGateway) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN))["ok"]
    return client


async def _agent(c: Client, message: str, idem: str, session_key: str | None = None) -> str:
    params: dict[str, Any] = {"message": message, "idempotencyKey": idem}
    if session_key:
        params["sessionKey"] = session_key
    await c.send({"type": "req", "id": idem, "method": "agent", "params": params})
    assert (await c.response(idem))["payload"]["status"] == "accepted"
    final = await c.response(idem, timeout=10)
    assert final["ok"], final
    return str(final["payload"]["result"]["payloads"][0]["text"])


def _sessions(gw: RunningGateway) -> dict[str, Any]:
    return SessionStore(gw.paths.state_dir / "agents" / "main" / "sessions").read()


def _messages(gw: RunningGateway, key: str = "agent:main:main") -> list[dict[str, Any]]:
    sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
    entry = _sessions(gw)[key]
    lines = [json.loads(x) for x in (sessions / f"{entry['sessionId']}.jsonl").read_text().splitlines()]
    return [x["message"] for x in lines if x.get("type") == "message"]


def _text(message: dict[str, Any]) -> str:
    if isinstance(message["content"], str):
        return message["content"]
    return "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


async def _until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


async def _drain(c: Client) -> None:
    """Read the events runs broadcast meanwhile: a client that stops reading never sees the close frame."""
    assert (await c.request("health"))["ok"]


def _children(gw: RunningGateway) -> list[str]:
    return [k for k in _sessions(gw) if ":subagent:" in k]


def _hooks(gw: RunningGateway) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    for hook in ("subagent_spawned", "subagent_ended"):

        def record(event: Any, _ctx: ev.HookContext, hook: str = hook) -> None:
            seen.append((hook, event))

        gw.gateway.hooks.add(HookRegistration("watcher", hook, record))
    return seen


async def test_spawn_runs_child_on_subagent_lane_and_announces_result(tmp_path: Path) -> None:
    def route(context: Context) -> Reply | Fail:
        if _first_user(context).startswith("child"):  # the child tries to spawn, then answers
            if _last_result(context) is None:
                return Reply("", tool_calls=[("sessions_spawn", {"task": "grandchild"})])
            return Reply("child done")
        if _last_result(context) is not None:
            return Reply("Delegated.")
        last = _last_user(context)
        if last.startswith("[Subagent"):
            return Reply("Relayed: " + last.split("] ", 1)[1].split("\n", 1)[0])
        return Reply("", tool_calls=[("sessions_spawn", {"task": "child task: add 40 and 2", "label": "calc"})])

    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = gw.gateway.models.overrides["test"] = Router(route)
        seen = _hooks(gw)
        c = await _client(gw)
        assert await _agent(c, "please delegate", "r1") == "Delegated."
        await _until(lambda: len(_messages(gw)) >= 6)
        parent = _messages(gw)
        assert [m["role"] for m in parent] == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
        accepted = json.loads(_text(parent[2]))
        assert accepted["status"] == "accepted" and parent[2]["isError"] is False
        child_key = accepted["childSessionKey"]
        assert child_key.startswith("agent:main:main:subagent:") and accepted["label"] == "calc"
        announce = _text(parent[4])
        assert announce.startswith("[Subagent calc finished] child done")
        assert child_key in announce and accepted["runId"] in announce
        assert _text(parent[5]) == "Relayed: child done"
        entry = _sessions(gw)[child_key]
        assert entry["spawnedBy"] == "agent:main:main" and entry["spawnDepth"] == 1
        assert entry["label"] == "calc" and entry["status"] == "done"
        # the child is a leaf: the policy took sessions_spawn away, so its call found no tool
        child = _messages(gw, child_key)
        assert [m["role"] for m in child] == ["user", "assistant", "toolResult", "assistant"]
        assert child[2]["isError"] is True and "not found" in _text(child[2])
        assert _children(gw) == [child_key]  # no grandchild
        child_requests = [r for r in provider.requests if _first_user(r).startswith("child")]
        parent_requests = [r for r in provider.requests if not _first_user(r).startswith("child")]
        assert child_requests and parent_requests
        for request in child_requests:
            assert not _tool_names(request) & {"sessions_spawn", "sessions_send", "sessions_list", "sessions_history"}
            assert "sub-agent" in request.system_prompt
        assert {"sessions_spawn", "sessions_send"} <= _tool_names(parent_requests[0])
        stats = {s.lane: s for s in gw.gateway.lanes.stats()}
        assert stats["subagent"].completed >= 1
        await _until(lambda: len(seen) == 2)
        (h1, spawned), (h2, ended) = seen
        assert (h1, spawned.child_session_key, spawned.run_id) == ("subagent_spawned", child_key, accepted["runId"])
        assert (h2, ended.target_session_key, ended.reason, ended.outcome) == (
            "subagent_ended",
            child_key,
            "subagent-complete",
            "ok",
        )
        await _drain(c)


async def test_max_children_per_session(tmp_path: Path) -> None:
    def route(context: Context) -> Reply | Fail:
        if _last_result(context) is not None:
            return Reply("spawned some")
        if _first_user(context).startswith("child"):
            return Reply("done " + _first_user(context))
        if _last_user(context).startswith("[Subagent"):
            return Reply("noted")
        return Reply("", tool_calls=[("sessions_spawn", {"task": f"child {i}"}) for i in range(6)])

    hold = threading.Event()
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = Router(route, hold)
        c = await _client(gw)
        try:
            assert await _agent(c, "spawn six", "r1") == "spawned some"
            results = [m for m in _messages(gw) if m["role"] == "toolResult"]
            refused = [r for r in results if r["isError"]]
            assert len(results) == 6 and len(refused) == 1
            assert "already has 5 sub-agents running (max 5)" in _text(refused[0])
            assert len(_children(gw)) == 5
        finally:
            hold.set()
        await _until(lambda: sum(_text(m).startswith("[Subagent") for m in _messages(gw) if m["role"] == "user") == 5)
        await _until(lambda: _messages(gw)[-1]["role"] == "assistant")
        await _drain(c)


async def test_failing_child_announces_error(tmp_path: Path) -> None:
    def route(context: Context) -> Reply | Fail:
        if _last_result(context) is not None:
            return Reply("waiting")
        if _first_user(context).startswith("child"):
            return Fail("model exploded", status=400)
        last = _last_user(context)
        if last.startswith("[Subagent"):
            return Reply("Sorry: " + last.split("\n", 1)[0])
        return Reply("", tool_calls=[("sessions_spawn", {"task": "child: fail please", "label": "worker"})])

    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = Router(route)
        seen = _hooks(gw)
        c = await _client(gw)
        assert await _agent(c, "go", "r1") == "waiting"
        await _until(lambda: len(_messages(gw)) >= 6)
        announce = _text(_messages(gw)[4])
        assert announce.startswith("[Subagent worker failed] model exploded")
        assert _text(_messages(gw)[5]) == "Sorry: [Subagent worker failed] model exploded"
        child_key = _children(gw)[0]
        assert _sessions(gw)[child_key]["status"] == "failed"
        await _until(lambda: len(seen) == 2)
        ended = seen[1][1]
        assert (ended.reason, ended.outcome, ended.error) == ("subagent-error", "error", "model exploded")
        await _drain(c)


async def test_sessions_send_returns_reply_and_refuses_own_session(tmp_path: Path) -> None:
    def route(context: Context) -> Reply | Fail:
        result = _last_result(context)
        if result is not None:
            return Reply(f"{'refused' if result.is_error else 'other said'}: {result.text}")
        last = _last_user(context)
        if last == "hello other":
            return Reply("hi, I am other")
        if last == "what is your name?":
            assert "sessions_send" in context.system_prompt  # told who is asking
            return Reply("I am other")
        if last == "ask other":
            return Reply("", tool_calls=[("sessions_send", {"session_key": "other", "message": "what is your name?"})])
        return Reply("", tool_calls=[("sessions_send", {"session_key": "agent:main:main", "message": "echo"})])

    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = Router(route)
        c = await _client(gw)
        assert await _agent(c, "hello other", "r0", session_key="agent:main:other") == "hi, I am other"
        assert await _agent(c, "ask other", "r1") == "other said: I am other"
        other = _messages(gw, "agent:main:other")
        assert [_text(m) for m in other[-2:]] == ["what is your name?", "I am other"]
        reply = await _agent(c, "talk to yourself", "r2")
        assert reply.startswith("refused: error: sessions_send cannot target your own session")
        assert _messages(gw)[-2]["isError"] is True
        assert not any(_text(m) == "echo" for m in _messages(gw))
        await _drain(c)


# -- the tools alone, with a fake runtime -------------------------------------------------------------
class FakeRuntime:
    """Records requests; children wait for ``release``; ``sessions_send`` runs call ``on_send``."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.release = asyncio.Event()
        self.on_send: Callable[[Any], Awaitable[str]] | None = None

    async def submit(self, req: Any) -> Any:
        self.requests.append(req)
        text = "ok"
        if req.trigger == "sessions_send" and self.on_send is not None:
            text = await self.on_send(req)
        elif req.trigger == "sessions_send" or not req.message.startswith("[Subagent"):
            await self.release.wait()
            text = f"did {req.message}"
        return SimpleNamespace(status="ok", text=text, error=None, silent=False)

    def announcements(self) -> list[Any]:
        return [r for r in self.requests if r.message.startswith("[Subagent")]


def _ctx(mgr: SessionManager, rt: FakeRuntime, key: str, run_id: str = "run-0") -> ToolContext:
    return ToolContext(key, "main", run_id, "call-1", mgr.state_dir, services=ToolServices(sessions=mgr, runtime=rt))


async def _call(tools: list[Tool], name: str, ctx: ToolContext, **args: Any) -> ToolResult:
    return await next(t for t in tools if t.name == name).execute(ctx, args)


def _out(result: ToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_spawn_depth_limit_and_nested_spawn_when_allowed(tmp_path: Path) -> None:
    mgr, rt = SessionManager(tmp_path), FakeRuntime()
    ctx = _ctx(mgr, rt, "agent:main:main:subagent:abc")
    refused = await _call(subagent_tools(), "sessions_spawn", ctx, task="x")
    assert refused.is_error and refused.details["status"] == "forbidden"
    assert "sub-agent at depth 1 and the maximum spawn depth is 1" in _out(refused)
    assert rt.requests == []
    tools = subagent_tools(max_spawn_depth=lambda: 2)
    accepted = await _call(tools, "sessions_spawn", ctx, task="dig", label="digger")
    child = accepted.details["childSessionKey"]
    assert not accepted.is_error and child.startswith("agent:main:main:subagent:abc:subagent:")
    entry = mgr.require(mgr.resolve_key(child)).entry
    assert (entry.spawned_by, entry.spawn_depth, entry.label) == ("agent:main:main:subagent:abc", 2, "digger")
    await _until(lambda: len(rt.requests) == 1)
    run = rt.requests[0]
    assert (run.lane, run.trigger, run.session_key.canonical, run.message) == ("subagent", "subagent", child, "dig")
    rt.release.set()
    await _until(lambda: len(rt.announcements()) == 1)
    announce = rt.announcements()[0]
    assert announce.session_key.canonical == "agent:main:main:subagent:abc"
    assert (announce.lane, announce.queue_mode, announce.trigger) == ("subagent", "followup", "subagent")
    assert announce.message.startswith("[Subagent digger finished] did dig")
    other_agent = await _call(tools, "sessions_spawn", ctx, task="x", agent_id="ops")
    assert other_agent.is_error and 'agent "ops" is not allowed' in _out(other_agent)


async def test_children_slots_are_released_after_the_child_ends(tmp_path: Path) -> None:
    mgr, rt = SessionManager(tmp_path), FakeRuntime()
    tools, ctx = subagent_tools(max_children=2), _ctx(mgr, rt, "agent:main:main")
    first = [await _call(tools, "sessions_spawn", ctx, task=f"t{i}") for i in range(2)]
    third = await _call(tools, "sessions_spawn", ctx, task="t2")
    assert third.is_error and "already has 2 sub-agents running (max 2)" in _out(third)
    assert sorted(third.details["running"]) == sorted(r.details["childSessionKey"] for r in first)
    rt.release.set()
    await _until(lambda: len(rt.announcements()) == 2)
    again = await _call(tools, "sessions_spawn", ctx, task="t3")
    assert not again.is_error and again.details["status"] == "accepted"
    assert all(r.lane == "main" for r in rt.announcements())


async def test_sessions_send_rules(tmp_path: Path) -> None:
    mgr, rt = SessionManager(tmp_path), FakeRuntime()
    tools, ctx = subagent_tools(), _ctx(mgr, rt, "agent:main:main")
    mgr.ensure(mgr.resolve_key("agent:main:other"))
    own = await _call(tools, "sessions_send", ctx, session_key="main", message="hi")
    assert own.is_error and "cannot target your own session" in _out(own)
    missing = await _call(tools, "sessions_send", ctx, session_key="nobody", message="hi")
    assert missing.is_error and "session not found: agent:main:nobody" in _out(missing)
    pending = await _call(tools, "sessions_send", ctx, session_key="other", message="hi", timeout_seconds=0)
    assert not pending.is_error and pending.details["status"] == "running" and "still running" in _out(pending)
    rt.release.set()

    async def send_on(req: Any) -> str:  # the reached session tries to send on: refused
        inner = _ctx(mgr, rt, req.session_key.canonical, run_id=req.run_id)
        return _out(await _call(tools, "sessions_send", inner, session_key="main", message="ping"))

    rt.on_send = send_on
    chained = await _call(tools, "sessions_send", ctx, session_key="other", message="relay")
    assert chained.details["status"] == "ok"
    assert _out(chained).startswith("forbidden: a session reached through sessions_send cannot send on")
    assert [r.lane for r in rt.requests] == ["nested", "nested"]
