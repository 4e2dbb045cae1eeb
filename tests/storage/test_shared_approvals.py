"""Approvals across two gateways on one real PostgreSQL: a request made on one is shown to an
operator connected to the other, who answers it there; a decision for an approval no gateway has
is refused as on one gateway (``APPROVAL_NOT_FOUND``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from homarus.gateway.services import cluster_approvals
from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client


def _config(url: str) -> dict[str, Any]:
    return {"storage": {"backend": "postgres", "postgres": {"url": url}}}


APPROVER = ["operator.approvals"]


async def _client(gw: RunningGateway, scopes: list[str] | None = None) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN, scopes, caps=["tool-events"]) if scopes else await c.handshake(TEST_TOKEN))[
        "ok"
    ]
    return c


async def test_an_approval_asked_on_one_gateway_is_answered_on_the_other(
    tmp_path: Path, pg_url: str, monkeypatch: Any
) -> None:
    monkeypatch.setattr(cluster_approvals, "FORWARD_WAIT_S", 1.0)
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        asker, operator = await _client(a), await _client(b)
        await a.gateway.cluster.notices.listening.wait()  # type: ignore[union-attr]
        await b.gateway.cluster.notices.listening.wait()  # type: ignore[union-attr]
        params = {"title": "Deploy?", "description": "push to prod", "timeoutMs": 20_000}
        await asker.send({"type": "req", "id": "ask", "method": "plugin.approval.request", "params": params})
        requested = await operator.event("plugin.approval.requested", timeout=10)  # shown on b
        approval_id = requested["payload"]["id"]
        assert requested["payload"]["request"]["title"] == "Deploy?"
        answer = await operator.request("plugin.approval.resolve", {"id": approval_id, "decision": "allow-once"})
        assert answer["ok"], answer
        decided = await asker.response("ask", timeout=10)
        assert decided["ok"] and decided["payload"]["decision"] == "allow-once", decided
        resolved = await operator.event("plugin.approval.resolved", timeout=10)
        assert resolved["payload"]["id"] == approval_id and resolved["payload"]["decision"] == "allow-once"
        nowhere = await operator.request("plugin.approval.resolve", {"id": "plugin:nope", "decision": "deny"})
        assert nowhere["ok"] is False and nowhere["error"]["details"]["reason"] == "APPROVAL_NOT_FOUND", nowhere
        again = await operator.request("plugin.approval.resolve", {"id": approval_id, "decision": "deny"})
        assert again["ok"] is False  # decided already: nobody has it pending


def _exec_config(url: str) -> dict[str, Any]:
    return {
        **_config(url),
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}}},
        "tools": {"exec": {"security": "allowlist", "allowlist": ["ls"], "ask": "on-miss"}},
    }


async def _start(runner: Client, key: str) -> None:
    await runner.send({"type": "req", "id": key, "method": "agent", "params": {"message": "go", "idempotencyKey": key}})
    assert (await runner.response(key))["ok"]  # accepted


async def _exec_result(runner: Client, key: str) -> dict[str, Any]:
    assert (await runner.response(key, timeout=30))["ok"]
    results = [
        e["payload"]["data"]
        for e in runner.events
        if e["event"] == "agent" and e["payload"]["stream"] == "tool" and e["payload"]["data"]["phase"] == "result"
    ]
    last: dict[str, Any] = results[-1]
    return last


async def test_an_allow_always_granted_on_one_gateway_holds_on_the_other(tmp_path: Path, pg_url: str) -> None:
    with (
        run_gateway(tmp_path / "a", config=_exec_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_exec_config(pg_url)) as b,
    ):
        for gw in (a, b):
            replies = [Reply("", tool_calls=[("exec", {"command": "touch ran"})]), Reply("done")]
            gw.gateway.models.overrides["test"] = ScriptedProvider(replies)
        runner_a, operator = await _client(a, ["operator.write", "operator.read"]), await _client(a, APPROVER)
        await _start(runner_a, "k1")
        event = await operator.event("exec.approval.requested", timeout=10)
        await operator.request("exec.approval.resolve", {"id": event["payload"]["id"], "decision": "allow-always"})
        assert not (await _exec_result(runner_a, "k1"))["isError"]
        # stored once for the cluster, nothing in either state directory
        for gw in (a, b):
            assert not (gw.paths.state_dir / "exec-approvals.json").exists()
        shown = (await (await _client(b)).request("exec.approvals.get", {}))["payload"]  # asked on b
        assert shown["exists"] and shown["path"].startswith("postgresql://127.0.0.1:") and "@" not in shown["path"]
        assert shown["file"]["agents"]["*"]["allowlist"] == [{"pattern": os.path.realpath("/usr/bin/touch")}]

        # the same command on the other gateway runs without asking anyone
        runner_b, watcher = await _client(b, ["operator.write", "operator.read"]), await _client(b, APPROVER)
        await _start(runner_b, "k2")
        result = await _exec_result(runner_b, "k2")
        assert not result["isError"] and result["result"].startswith("Exit code: 0"), result
        assert not [e for e in watcher.events + operator.events if e["event"] == "exec.approval.requested"]
