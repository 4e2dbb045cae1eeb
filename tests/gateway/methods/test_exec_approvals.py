"""exec.approval.* over a real socket; the module is wired in by the test (app.py does not yet)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from homarus.gateway.services import exec_approvals
from homarus.security.approvals import ApprovalManager
from homarus.security.exec_approvals_file import approvals_path
from tests.conftest import TEST_TOKEN, RunningGateway
from tests.wsclient import Client, open_client

_ids = itertools.count(1)
APPROVER = ["operator.approvals"]
REQUEST = {"command": "ls -la", "sessionKey": "agent:main:main", "runId": "run-1", "agentId": "main"}


async def _client(gw: RunningGateway, scopes: list[str] | None = None, **overrides: Any) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN, scopes, **overrides))["ok"]
    return client


async def _send(client: Client, method: str, params: dict[str, Any]) -> str:
    rid = f"x{next(_ids)}"
    await client.send({"type": "req", "id": rid, "method": method, "params": params})
    return rid


@pytest.fixture
async def manager(gw: RunningGateway) -> ApprovalManager:
    """The gateway installs the exec approval manager at construction."""
    return gw.gateway.exec_approvals


async def test_request_event_resolve_and_wait(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    requester = await _client(gw, APPROVER)
    rid = await _send(requester, "exec.approval.request", {**REQUEST, "twoPhase": True})
    first = (await requester.response(rid))["payload"]
    assert first["status"] == "accepted"
    assert first["expiresAtMs"] - first["createdAtMs"] == 1_800_000
    approval_id = first["id"]
    ev = (await approver.event("exec.approval.requested"))["payload"]
    assert ev["id"] == approval_id and ev["request"]["command"] == "ls -la"
    assert ev["request"]["allowAlwaysPatterns"]
    listed = await approver.request("exec.approval.list")
    assert listed["payload"] == [ev]
    got = (await approver.request("exec.approval.get", {"id": approval_id}))["payload"]
    assert got["commandText"] == "ls -la" and got["allowedDecisions"] == ["allow-once", "allow-always", "deny"]

    wait_rid = await _send(requester, "exec.approval.waitDecision", {"id": approval_id, "command": "ls -la"})
    res = await approver.request("exec.approval.resolve", {"id": approval_id[:8], "decision": "allow-once"})
    assert res["ok"] and res["payload"] == {"ok": True}, res
    resolved = (await approver.event("exec.approval.resolved"))["payload"]
    assert resolved["id"] == approval_id and resolved["decision"] == "allow-once"
    final = (await requester.response(rid))["payload"]
    assert final["decision"] == "allow-once"
    waited = await requester.response(wait_rid)
    assert waited["payload"]["decision"] == "allow-once"
    again = await approver.request("exec.approval.resolve", {"id": approval_id, "decision": "deny"})
    assert again["error"]["message"] == "unknown or expired approval id"
    assert again["error"]["details"] == {"reason": "APPROVAL_NOT_FOUND"}
    reused = await requester.request("exec.approval.request", {**REQUEST, "id": approval_id, "command": "rm -rf /"})
    assert "already resolved" in reused["error"]["message"]


async def test_timeout_answers_null(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    requester = await _client(gw, APPROVER)
    res = await requester.request("exec.approval.request", {**REQUEST, "timeoutMs": 50})
    assert res["ok"] and res["payload"]["decision"] is None
    ev = (await approver.event("exec.approval.resolved"))["payload"]
    assert ev["decision"] is None and ev["id"] == res["payload"]["id"]


async def test_replay_with_other_command_or_connection_refused(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    requester = await _client(gw, APPROVER)
    rid = await _send(requester, "exec.approval.request", {**REQUEST, "command": "git status", "twoPhase": True})
    approval_id = (await requester.response(rid))["payload"]["id"]
    bad = await requester.request("exec.approval.waitDecision", {"id": approval_id, "command": "git push --force"})
    assert bad["error"]["message"] == "approval mismatch"
    bad = await requester.request("exec.approval.waitDecision", {"id": approval_id, "sessionKey": "agent:x:main"})
    assert bad["error"]["message"] == "approval mismatch"
    other = await approver.request("exec.approval.waitDecision", {"id": approval_id})
    assert other["error"]["message"] == "approval mismatch"
    dup = await requester.request("exec.approval.request", {**REQUEST, "id": approval_id})
    assert dup["error"]["message"] == "approval id already pending"
    await approver.request("exec.approval.resolve", {"id": approval_id, "decision": "allow-once"})
    assert (await requester.response(rid))["payload"]["decision"] == "allow-once"
    with pytest.raises(Exception, match="approval mismatch"):
        exec_approvals.authorize(
            manager,
            approval_id,
            command="git push --force",
            agent_id="main",
            session_key="agent:main:main",
            run_id="run-1",
        )


async def test_allow_always_persists_patterns(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    requester = await _client(gw, APPROVER)
    rid = await _send(requester, "exec.approval.request", {**REQUEST, "command": "ls | wc -l", "twoPhase": True})
    approval_id = (await requester.response(rid))["payload"]["id"]
    await approver.request("exec.approval.resolve", {"id": approval_id, "decision": "allow-always"})
    assert (await requester.response(rid))["payload"]["decision"] == "allow-always"
    data = json.loads(Path(approvals_path(gw.paths.state_dir)).read_text())
    assert [e["pattern"] for e in data["allowlist"]] == ["/usr/bin/ls", "/usr/bin/wc"]


async def test_errors(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    await _client(gw, APPROVER)
    missing = await approver.request("exec.approval.request", {"sessionKey": "s"})
    assert missing["error"]["message"] == "command is required"
    blank = await approver.request("exec.approval.request", {"command": "   "})
    assert blank["error"]["message"] == "command is required"
    reserved = await approver.request("exec.approval.request", {**REQUEST, "id": "plugin:x"})
    assert "reserved" in reserved["error"]["message"]
    invalid = await approver.request("exec.approval.resolve", {"id": "x", "decision": "maybe"})
    assert invalid["error"]["message"] == "invalid decision"
    rids = [await _send(approver, "exec.approval.request", {**REQUEST, "id": f"abc-{i}"}) for i in range(2)]
    await approver.event("exec.approval.requested")
    await approver.event("exec.approval.requested")
    amb = await approver.request("exec.approval.resolve", {"id": "abc", "decision": "deny"})
    assert amb["error"]["message"] == "ambiguous approval id prefix; use the full id"
    shell = await approver.request("exec.approval.request", {**REQUEST, "command": "bash -c x", "twoPhase": True})
    sid = shell["payload"]["id"]
    unavailable = await approver.request("exec.approval.resolve", {"id": sid, "decision": "allow-always"})
    assert unavailable["error"]["details"]["reason"] == "APPROVAL_ALLOW_ALWAYS_UNAVAILABLE"
    for approval_id in ("abc-0", "abc-1", sid):
        await approver.request("exec.approval.resolve", {"id": approval_id, "decision": "deny"})
    for rid in rids:
        assert (await approver.response(rid))["payload"]["decision"] == "deny"


async def test_no_approver_expires_immediately(gw: RunningGateway, manager: ApprovalManager) -> None:
    requester = await _client(gw, APPROVER)
    res = await requester.request("exec.approval.request", {**REQUEST, "twoPhase": True})
    assert res["ok"] and res["payload"]["decision"] is None and "status" not in res["payload"]


async def test_scope_enforcement(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    reader = await _client(gw, ["operator.read", "operator.write"])
    for method, params in (
        ("exec.approval.request", REQUEST),
        ("exec.approval.get", {"id": "x"}),
        ("exec.approval.list", {}),
        ("exec.approval.waitDecision", {"id": "x"}),
        ("exec.approval.resolve", {"id": "x", "decision": "deny"}),
    ):
        res = await reader.request(method, params)
        assert res["error"]["message"] == "missing scope: operator.approvals", (method, res)
    rid = await _send(approver, "exec.approval.request", {**REQUEST, "timeoutMs": 100})
    await approver.response(rid)
    assert not [e for e in reader.events if e["event"].startswith("exec.approval.")]
