"""A model's host `exec` that misses the allowlist waits for an operator over the gateway.

Real gateway, real sockets, the scripted model: the model asks for ``touch ran``; an operator
client receives ``exec.approval.requested`` and answers; the command runs (or not) on the host.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

RUNNER = ["operator.write", "operator.read"]  # may run agents, may not approve
APPROVER = ["operator.approvals"]


def _config(**exec_cfg: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}}},
        "tools": {"exec": {"security": "allowlist", "allowlist": ["ls"], "ask": "on-miss", **exec_cfg}},
    }


@asynccontextmanager
async def _gateway(tmp_path: Path, **exec_cfg: Any) -> AsyncIterator[RunningGateway]:
    with run_gateway(tmp_path, config=_config(**exec_cfg)) as gw:
        yield gw


def _script(gw: RunningGateway, *commands: str) -> None:
    replies: list[Reply] = []
    for command in commands:
        replies += [Reply("", tool_calls=[("exec", {"command": command})]), Reply("done")]
    gw.gateway.models.overrides["test"] = ScriptedProvider(replies)


async def _client(gw: RunningGateway, scopes: list[str]) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN, scopes, caps=["tool-events"]))["ok"]
    return client


async def _start(runner: Client, key: str) -> None:
    params = {"message": "go", "idempotencyKey": key}
    await runner.send({"type": "req", "id": key, "method": "agent", "params": params})
    assert (await runner.response(key))["ok"]  # accepted


async def _result(runner: Client, key: str) -> dict[str, Any]:
    assert (await runner.response(key, timeout=30))["ok"]
    results = [
        e["payload"]["data"]
        for e in runner.events
        if e["event"] == "agent" and e["payload"]["stream"] == "tool" and e["payload"]["data"]["phase"] == "result"
    ]
    runner.events.clear()
    last: dict[str, Any] = results[-1]
    return last


def _workspace_files(gw: RunningGateway) -> Iterator[str]:
    for root, _, files in os.walk(gw.paths.state_dir):
        yield from (os.path.join(root, f) for f in files if f == "ran")


async def test_request_event_allow_once_runs(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as gw:
        _script(gw, "touch ran")
        runner, operator = await _client(gw, RUNNER), await _client(gw, APPROVER)
        await _start(runner, "k1")
        event = await operator.event("exec.approval.requested", timeout=10)
        request = event["payload"]["request"]
        assert request["command"] == "touch ran" and request["host"] == "gateway"
        assert request["sessionKey"] == "agent:main:main" and request["allowAlwaysPatterns"]
        assert not list(_workspace_files(gw))  # nothing ran before the decision
        res = await operator.request("exec.approval.resolve", {"id": event["payload"]["id"], "decision": "allow-once"})
        assert res["ok"], res
        result = await _result(runner, "k1")
        assert result["isError"] is False and result["result"].startswith("Exit code: 0"), result
        assert len(list(_workspace_files(gw))) == 1
        resolved = await operator.event("exec.approval.resolved")
        assert resolved["payload"]["decision"] == "allow-once"


async def test_deny_and_allow_always(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as gw:
        _script(gw, "touch ran", "touch ran", "touch ran")
        runner, operator = await _client(gw, RUNNER), await _client(gw, APPROVER)
        await _start(runner, "k1")
        event = await operator.event("exec.approval.requested", timeout=10)
        await operator.request("exec.approval.resolve", {"id": event["payload"]["id"], "decision": "deny"})
        denied = await _result(runner, "k1")
        assert denied["isError"] and "denied this command" in denied["result"]
        assert not list(_workspace_files(gw))

        await _start(runner, "k2")
        event = await operator.event("exec.approval.requested", timeout=10)
        await operator.request("exec.approval.resolve", {"id": event["payload"]["id"], "decision": "allow-always"})
        assert not (await _result(runner, "k2"))["isError"]
        stored = json.loads((gw.paths.state_dir / "exec-approvals.json").read_text())
        assert [p["pattern"] for p in stored["allowlist"]] == [os.path.realpath("/usr/bin/touch")]
        assert oct((gw.paths.state_dir / "exec-approvals.json").stat().st_mode & 0o777) == "0o600"

        operator.events.clear()
        await _start(runner, "k3")  # remembered: runs without asking
        assert not (await _result(runner, "k3"))["isError"]
        assert not [e for e in operator.events if e["event"] == "exec.approval.requested"]


async def test_no_operator_connected_falls_back_to_deny(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as gw:
        _script(gw, "touch ran")
        runner = await _client(gw, RUNNER)
        await _start(runner, "k1")
        result = await _result(runner, "k1")
        assert result["isError"] and "no approver is reachable (askFallback=deny)" in result["result"]
        assert not list(_workspace_files(gw))


async def test_timeout_denies(tmp_path: Path) -> None:
    async with _gateway(tmp_path, approvalTimeoutSeconds=1) as gw:
        _script(gw, "touch ran")
        runner, operator = await _client(gw, RUNNER), await _client(gw, APPROVER)
        await _start(runner, "k1")
        event = await operator.event("exec.approval.requested", timeout=10)
        result = await _result(runner, "k1")
        assert result["isError"] and "timed out" in result["result"]
        assert not list(_workspace_files(gw))
        # a late decision finds nothing to resolve
        late = await operator.request("exec.approval.resolve", {"id": event["payload"]["id"], "decision": "allow-once"})
        assert not late["ok"]


async def _chat(client: Client, text: str, key: str) -> str:
    params = {"sessionKey": "agent:main:ops", "message": text, "idempotencyKey": key}
    res = await client.request("chat.send", params)
    assert res["ok"] and res["payload"]["command"] is True, res
    while (event := await client.event("chat"))["payload"]["runId"] != key:
        pass  # command replies are broadcast: skip the ones of other senders
    reply: str = event["payload"]["message"]["content"][0]["text"]
    return reply


async def test_approve_chat_command(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as gw:
        _script(gw, "touch ran")
        runner = await _client(gw, RUNNER)
        operator = await _client(gw, [*APPROVER, "operator.write", "operator.read"])
        assert await _chat(operator, "/approve", "c0") == "No pending approvals."
        await _start(runner, "k1")
        approval_id = (await operator.event("exec.approval.requested", timeout=10))["payload"]["id"]
        # the runner may chat but not approve; a bad verb gets the usage line
        assert "needs the operator.approvals scope" in await _chat(runner, f"/approve {approval_id} allow-once", "c1")
        assert (await _chat(operator, f"/approve {approval_id} maybe", "c2")).startswith("Usage: /approve")
        assert approval_id in await _chat(operator, "/approve", "c3")
        assert "unknown or expired" in await _chat(operator, "/approve nope allow-once", "c4")
        assert await _chat(operator, f"/approve {approval_id[:8]} once", "c5") == f"Approval {approval_id}: allow-once."
        result = await _result(runner, "k1")
        assert result["isError"] is False and len(list(_workspace_files(gw))) == 1
