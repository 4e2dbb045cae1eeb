"""Hooks through real runs: decisions, ordering, isolation, timeouts and exactly-once counts."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from homarus.plugins import events as ev
from homarus.plugins.hookspecs import HOOKS
from homarus.plugins.runner import HookRegistration
from homarus.providers.scripted import Reply, ScriptedProvider
from homarus.sessions.store import SessionStore
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}, {"id": "other"}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}}},
}
RUN_HOOKS = (
    "message_received",
    "before_model_resolve",
    "agent_turn_prepare",
    "before_prompt_build",
    "before_agent_start",
    "before_agent_run",
    "before_agent_reply",
    "model_call_started",
    "model_call_ended",
    "llm_input",
    "llm_output",
    "before_tool_call",
    "after_tool_call",
    "tool_result_persist",
    "before_message_write",
    "before_agent_finalize",
    "agent_end",
    "message_sending",
    "message_sent",
)


def _add(gw: RunningGateway, plugin: str, hook: str, handler: Any, **kw: Any) -> None:
    gw.gateway.hooks.add(HookRegistration(plugin, hook, handler, **kw))


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN, caps=["tool-events"]))["ok"]
    return c


async def _agent(c: Client, message: str, idem: str, timeout: float = 15) -> dict[str, Any]:
    await c.send({"type": "req", "id": idem, "method": "agent", "params": {"message": message, "idempotencyKey": idem}})
    first = await c.response(idem)
    assert first["payload"]["status"] == "accepted", first
    return await c.response(idem, timeout=timeout)


def _tool_results(c: Client) -> list[dict[str, Any]]:
    return [
        e["payload"]["data"]
        for e in c.events
        if e["event"] == "agent" and e["payload"]["stream"] == "tool" and e["payload"]["data"]["phase"] == "result"
    ]


def _transcript(gw: RunningGateway) -> list[dict[str, Any]]:
    sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
    entry = SessionStore(sessions).read()["agent:main:main"]
    return [json.loads(x) for x in (sessions / f"{entry['sessionId']}.jsonl").read_text().splitlines()[1:]]


async def test_priority_order_and_blocking_dangerous_params(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[("current_time", {"timezone": "Mars/Olympus"})]), Reply("ok")]
        )
        seen: list[str] = []

        def low(event: ev.BeforeToolCallEvent, ctx: ev.HookContext) -> None:
            seen.append("low")

        def high(event: ev.BeforeToolCallEvent, ctx: ev.HookContext) -> dict[str, Any] | None:
            seen.append("high")
            if event.params.get("timezone", "").startswith("Mars"):
                return {"block": True, "block_reason": "no Mars time allowed"}
            return None

        _add(gw, "p-low", "before_tool_call", low, priority=1)
        _add(gw, "p-high", "before_tool_call", high, priority=10)
        c = await _client(gw)
        assert (await _agent(c, "time on mars?", "b1"))["ok"]
        assert seen == ["high"]  # block is terminal: the lower priority handler is skipped
        results = _tool_results(c)
        assert results[0]["isError"] is True and results[0]["result"] == "no Mars time allowed"


async def test_params_rewrite_reaches_the_tool(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[("current_time", {"timezone": "Nowhere/Land"})]), Reply("ok")]
        )
        _add(gw, "fixer", "before_tool_call", lambda e, c: {"params": {"timezone": "UTC"}})
        c = await _client(gw)
        await _agent(c, "time?", "p1")
        result = _tool_results(c)[0]
        assert result["isError"] is False and "UTC" in result["result"]


async def test_failing_and_hanging_hooks_never_break_a_turn(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[("current_time", {})]), Reply("all good")]
        )
        forever = asyncio.Event()

        def boom(event: Any, ctx: ev.HookContext) -> None:
            raise RuntimeError("plugin bug")

        async def hang(event: Any, ctx: ev.HookContext) -> None:
            await forever.wait()

        for hook in RUN_HOOKS:
            if HOOKS[hook].kind in ("gate", "claim"):
                continue  # gates fail closed (tested below); a failing claimer just does not claim
            if HOOKS[hook].kind == "sync":
                _add(gw, "broken", hook, boom)
            else:
                _add(gw, "broken", hook, boom)
                _add(gw, "stuck", hook, hang, timeout_ms=100)
        c = await _client(gw)
        started = time.monotonic()
        final = await _agent(c, "hi", "f1")
        assert final["ok"] and final["payload"]["result"]["payloads"] == [{"text": "all good"}]
        assert time.monotonic() - started < 5  # modifying hooks waited 100 ms each at most
        gw.call_soon(forever.set)


async def test_before_tool_call_fails_closed(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[("current_time", {})]), Reply("done")]
        )

        async def hang(event: Any, ctx: ev.HookContext) -> None:
            await asyncio.sleep(30)

        _add(gw, "slowpoke", "before_tool_call", hang, timeout_ms=100)
        c = await _client(gw)
        assert (await _agent(c, "time?", "fc"))["ok"]
        result = _tool_results(c)[0]
        assert result["isError"] is True and "before_tool_call hook from slowpoke failed" in result["result"]


async def test_before_agent_run_fails_closed(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = ScriptedProvider([Reply("never")])
        gw.gateway.models.overrides["test"] = provider

        def boom(event: Any, ctx: ev.HookContext) -> None:
            raise RuntimeError("policy engine down")

        _add(gw, "policy", "before_agent_run", boom)
        c = await _client(gw)
        final = await _agent(c, "hi", "fa")
        assert final["ok"] is False and "policy engine down" in final["error"]["message"]
        assert provider.requests == []


async def test_a_gated_run_writes_its_message_only_once_the_gate_let_it_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a gate the run's message is written in its first trip to the lane (one trip less);
    with one, only after the gate decided, and a blocked message is never written."""
    from homarus.agents import turn
    from homarus.io_lane import run_on_lane as real

    trips: list[str] = []

    async def counted(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        trips.append(getattr(fn, "__name__", "?"))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(turn, "run_on_lane", counted)
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("one"), Reply("two")])
        c = await _client(gw)
        assert (await _agent(c, "open words", "g1"))["ok"]
        assert trips == ["_load_files", "write_messages"]  # the message, then the reply

        def gate(event: Any, ctx: ev.HookContext) -> dict[str, Any] | None:
            if "secret" in event.prompt:
                return {"outcome": "block", "reason": "pii", "message": "[withheld]"}
            return None

        _add(gw, "policy", "before_agent_run", gate)
        trips.clear()
        assert (await _agent(c, "more open words", "g2"))["ok"]
        assert trips == ["_load_files", "write_messages", "write_messages"]
        assert (await _agent(c, "the secret is 42", "g3"))["ok"] is False
        users = [e["message"]["content"] for e in _transcript(gw) if e.get("message", {}).get("role") == "user"]
        assert users == ["open words", "more open words", "[withheld]"]


async def test_void_hooks_do_not_delay_the_reply(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("quick")])
        release = asyncio.Event()

        async def slow(event: Any, ctx: ev.HookContext) -> None:
            await release.wait()

        for hook in ("agent_end", "llm_output", "message_received", "message_sent", "model_call_ended"):
            _add(gw, "slow-observer", hook, slow)
        c = await _client(gw)
        started = time.monotonic()
        assert (await _agent(c, "hi", "v1"))["ok"]
        assert time.monotonic() - started < 2
        gw.call_soon(release.set)


async def test_every_hook_fires_exactly_once_per_step(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[("current_time", {}), ("session_status", {})]), Reply("two tools done")]
        )
        counts: Counter[str] = Counter()
        for hook in RUN_HOOKS:

            def count(event: Any, ctx: ev.HookContext, hook: str = hook) -> None:
                counts[hook] += 1

            _add(gw, "counter", hook, count)
        c = await _client(gw)
        assert (await _agent(c, "go", "x1"))["ok"]
        await asyncio.sleep(0.2)  # void hooks run in the background
        expected = {
            "message_received": 1,
            "before_model_resolve": 1,
            "agent_turn_prepare": 1,
            "before_prompt_build": 1,
            "before_agent_start": 1,
            "before_agent_run": 1,
            "before_agent_reply": 1,
            "model_call_started": 2,
            "model_call_ended": 2,
            "llm_input": 2,
            "llm_output": 2,
            "before_tool_call": 2,
            "after_tool_call": 2,
            "tool_result_persist": 2,
            "before_message_write": 5,
            "before_agent_finalize": 1,
            "agent_end": 1,
            "message_sending": 1,
            "message_sent": 1,
        }
        assert dict(counts) == expected


async def test_run_gate_stores_only_the_replacement(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = ScriptedProvider([Reply("never")])
        gw.gateway.models.overrides["test"] = provider
        _add(
            gw,
            "dlp",
            "before_agent_run",
            lambda e, c: (
                {"outcome": "block", "reason": "secret detected", "message": "[redacted by dlp]"}
                if "password" in e.prompt
                else None
            ),
        )
        c = await _client(gw)
        final = await _agent(c, "my password is hunter2", "g1")
        assert final["ok"] is False and "secret detected" in final["error"]["message"]
        assert provider.requests == []
        text = json.dumps(_transcript(gw))
        assert "hunter2" not in text and "[redacted by dlp]" in text


async def test_claim_reply_send_rewrite_and_write_block(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = ScriptedProvider([Reply("model answer with SECRET inside")])
        gw.gateway.models.overrides["test"] = provider
        _add(
            gw,
            "faq",
            "before_agent_reply",
            lambda e, c: {"handled": True, "reply": "Opening hours: 9-5."} if "hours" in e.cleaned_body else None,
        )
        _add(gw, "scrub", "message_sending", lambda e, c: {"content": e.content.replace("SECRET", "[x]")})
        c = await _client(gw)
        claimed = await _agent(c, "what are your hours?", "c1")
        assert claimed["payload"]["result"]["payloads"] == [{"text": "Opening hours: 9-5."}]
        assert provider.requests == []
        normal = await _agent(c, "tell me", "c2")
        assert normal["payload"]["result"]["payloads"] == [{"text": "model answer with [x] inside"}]
        assert "SECRET" in json.dumps(_transcript(gw))  # delivery is rewritten, the record is not


async def test_model_override_and_prompt_context(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = ScriptedProvider([Reply("from other")])
        gw.gateway.models.overrides["test"] = provider
        _add(gw, "router", "before_model_resolve", lambda e, c: {"model_override": "test/other"})
        _add(
            gw,
            "ctx",
            "before_prompt_build",
            lambda e, c: {"prepend_context": "User prefers metric.", "append_system_context": "Be brief."},
        )
        c = await _client(gw)
        final = await _agent(c, "weather?", "m1")
        assert final["payload"]["result"]["meta"]["model"] == "test/other"
        request = provider.requests[0]
        assert request.system_prompt.endswith("Be brief.")
        assert request.messages[-1].text == "User prefers metric.\n\nweather?"
        user_rows = [x for x in _transcript(gw) if x["message"]["role"] == "user"]
        assert user_rows[-1]["message"]["content"] == "weather?"


async def test_finalize_revision_is_bounded(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = ScriptedProvider([Reply("draft 1"), Reply("draft 2"), Reply("draft 3"), Reply("draft 4")])
        gw.gateway.models.overrides["test"] = provider
        _add(gw, "critic", "before_agent_finalize", lambda e, c: {"action": "revise", "reason": "shorter please"})
        c = await _client(gw)
        final = await _agent(c, "write", "r1")
        assert final["payload"]["result"]["payloads"] == [{"text": "draft 3"}]
        assert len(provider.requests) == 3  # the first answer plus at most two revisions


async def _approval_run(tmp_path: Path, decision: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[("current_time", {})]), Reply("finished")]
        )
        _add(
            gw,
            "guard",
            "before_tool_call",
            lambda e, c: {"require_approval": {"title": "Read the clock?", "timeout_ms": 5000}},
        )
        runner = await _client(gw)
        if decision is not None:
            operator = await open_client(gw.url)
            assert (await operator.handshake(TEST_TOKEN, ["operator.approvals"]))["ok"]
        await runner.send(
            {"type": "req", "id": "ap", "method": "agent", "params": {"message": "time?", "idempotencyKey": "ap1"}}
        )
        assert (await runner.response("ap"))["payload"]["status"] == "accepted"
        if decision is not None:
            requested = await operator.event("plugin.approval.requested", timeout=10)
            request = requested["payload"]["request"]
            assert request["toolName"] == "current_time" and request["pluginId"] == "guard"
            assert "params" not in request  # operators see what and who, never the arguments
            res = await operator.request(
                "plugin.approval.resolve", {"id": requested["payload"]["id"], "decision": decision}
            )
            assert res["ok"], res
        final = await runner.response("ap", timeout=15)
        return final, _tool_results(runner)


async def test_require_approval_allow_once_runs_the_tool(tmp_path: Path) -> None:
    final, results = await _approval_run(tmp_path, "allow-once")
    assert final["ok"] and results[0]["isError"] is False


async def test_require_approval_deny_blocks(tmp_path: Path) -> None:
    final, results = await _approval_run(tmp_path, "deny")
    assert final["ok"] and results[0]["isError"] is True and results[0]["result"] == "Denied by user"


async def test_require_approval_without_approvers_is_denied(tmp_path: Path) -> None:
    final, results = await _approval_run(tmp_path, None)
    assert final["ok"] and results[0]["isError"] is True
    assert results[0]["result"] == "Approval timed out; the tool call was denied"
