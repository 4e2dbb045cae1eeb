"""Every run leaves an audit trail: checked field by field for a run with an allowed, a policy-refused,
a hook-blocked and an operator-approved tool call; read back with `logs.tail` and `homarus logs`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from homarus.plugins.runner import HookRegistration
from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import open_client

CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
    "tools": {"exec": {"security": "allowlist", "allowlist": ["ls"], "ask": "on-miss"}},
}
CALLS = [
    ("current_time", {}),
    ("no_such_tool", {}),
    ("write", {"path": "x.txt", "content": "secret", "apiKey": "sk-abcdefghijklmnopqrstuvwx"}),
    ("exec", {"command": "touch ran"}),
]


def _block_writes(event: Any, ctx: Any) -> dict[str, Any] | None:
    return {"block": True, "block_reason": "writes are frozen"} if event.tool_name == "write" else None


async def test_audit_records_every_decision(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("", tool_calls=CALLS), Reply("done")])
        gw.call_soon(lambda: gw.gateway.hooks.add(HookRegistration("guard", "before_tool_call", _block_writes)))
        runner = await open_client(gw.url)
        assert (
            await runner.handshake(
                TEST_TOKEN,
                ["operator.write", "operator.read"],
                client={
                    "id": "homarus-control-ui",
                    "version": "1.0.0",
                    "platform": "linux",
                    "mode": "test",
                    "displayName": "Auditor",
                },
            )
        )["ok"]
        operator = await open_client(gw.url)
        assert (await operator.handshake(TEST_TOKEN, ["operator.approvals"]))["ok"]
        await runner.send(
            {"type": "req", "id": "a", "method": "agent", "params": {"message": "go", "idempotencyKey": "run-a"}}
        )
        assert (await runner.response("a"))["ok"]
        approval = await operator.event("exec.approval.requested", timeout=15)
        await operator.request("exec.approval.resolve", {"id": approval["payload"]["id"], "decision": "allow-once"})
        assert (await runner.response("a", timeout=30))["ok"]
        tail = await runner.request("logs.tail", {"runId": "run-a"})
        records = tail["payload"]["records"]
    kinds = [r["type"] for r in records]
    assert kinds[0] == "run.start" and kinds[-1] == "run.end" and kinds.count("model.call") == 2
    start = records[0]
    assert start["sessionKey"] == "agent:main:main" and start["trigger"] == "user" and start["agentId"] == "main"
    assert start["origin"]["clientId"] == "homarus-control-ui" and start["origin"]["displayName"] == "Auditor"
    model = next(r for r in records if r["type"] == "model.call")
    assert model["provider"] == "test" and model["model"] == "m" and model["durationMs"] >= 0 and "usage" in model
    tools = {r["tool"]: r for r in records if r["type"] == "tool.call"}
    assert tools["current_time"]["decision"] == "allowed" and tools["current_time"]["status"] == "ok"
    assert tools["no_such_tool"]["decision"] == "blocked:policy" and tools["no_such_tool"]["status"] == "error"
    write = tools["write"]
    assert write["decision"] == "blocked:hook" and write["by"] == "guard" and write["reason"] == "writes are frozen"
    assert write["args"]["apiKey"] == "[redacted]" and write["args"]["path"] == "x.txt"
    exec_ = tools["exec"]
    assert exec_["decision"] == "approved" and exec_["approval"] == "allow-once" and exec_["status"] == "ok"
    assert exec_["approvalId"] == approval["payload"]["id"]
    assert records[-1]["status"] == "ok" and records[-1]["durationMs"] >= 0
    assert "go" not in json.dumps(records).replace('"go"', "")  # no prompt text beyond the tool args

    env = {**os.environ, "HOMARUS_STATE_DIR": str(gw.paths.state_dir), "HOMARUS_CONFIG": str(gw.paths.config_path)}
    cli = subprocess.run(
        [sys.executable, "-m", "homarus", "logs", "--run", "run-a"], env=env, capture_output=True, text=True, timeout=60
    )
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.splitlines()
    assert lines[0].split()[2] == "run.start" and "by=homarus-control-ui" in lines[0]
    assert any("write blocked:hook by=guard" in line for line in lines)
    as_json = subprocess.run(
        [sys.executable, "-m", "homarus", "logs", "--run", "run-a", "--json", "--limit", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(as_json.stdout)["type"] == "run.end"


async def test_raw_stream_log_is_off_by_default_and_admin_only(tmp_path: Path) -> None:
    config = {**CONFIG, "logging": {"rawStream": True}}
    with run_gateway(tmp_path, config=config) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("hello there")])
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN))["ok"]
        res = await c.request("agent", {"message": "hi", "idempotencyKey": "r1"})
        assert res["ok"]
        assert (await c.request("agent.wait", {"runId": "r1", "timeoutMs": 10_000}, timeout=15))["ok"]
        raw = await c.request("logs.tail", {"log": "raw-stream", "runId": "r1"})
        events = [r["event"] for r in raw["payload"]["records"]]
        assert "TextDelta" in events and events[-1] == "MessageEnd"
        reader = await open_client(gw.url)
        assert (await reader.handshake(TEST_TOKEN, ["operator.read"]))["ok"]
        assert not (await reader.request("logs.tail", {"log": "raw-stream"}))["ok"]
        assert (await reader.request("logs.tail", {"runId": "r1"}))["ok"]
    with run_gateway(tmp_path / "off", config=CONFIG) as gw:
        assert (
            not list((gw.paths.state_dir / "logs").glob("raw-stream-*"))
            if (gw.paths.state_dir / "logs").exists()
            else True
        )
