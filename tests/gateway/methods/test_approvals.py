"""plugin.approval.* over a real socket: events, decisions, two-phase responses, scopes, errors.

The module is wired into every gateway by its composition root (``approvals.install``),
so these tests do not depend on app.py registering it.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from homarus.security.approvals import ApprovalManager
from tests.conftest import TEST_TOKEN, RunningGateway
from tests.wsclient import Client, open_client

_ids = itertools.count(1)
APPROVER = ["operator.approvals"]
READER = ["operator.read"]
REQUEST = {
    "pluginId": "guard",
    "title": "Run a shell command?",
    "description": "rm -rf build/",
    "severity": "warning",
    "toolName": "exec",
    "toolCallId": "call-1",
    "agentId": "main",
    "sessionKey": "agent:main:main",
}


async def _install(gw: RunningGateway) -> ApprovalManager:
    """The gateway installs the plugin approval manager at construction."""
    return gw.gateway.plugin_approvals


async def _client(gw: RunningGateway, scopes: list[str] | None = None, **overrides: Any) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN, scopes, **overrides))["ok"]
    return client


async def _send(client: Client, method: str, params: dict[str, Any]) -> str:
    rid = f"a{next(_ids)}"
    await client.send({"type": "req", "id": rid, "method": method, "params": params})
    return rid


def _named(client_id: str) -> dict[str, Any]:
    return {"id": client_id, "version": "1.0.0", "platform": "linux", "mode": "test"}


@pytest.fixture
async def manager(gw: RunningGateway) -> ApprovalManager:
    return await _install(gw)


async def test_request_event_resolve_and_wait(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER, client={**_named("homarus-control-ui"), "displayName": "Ops Desk"})
    reader = await _client(gw, READER)
    requester = await _client(gw, APPROVER)
    assert "plugin.approval.request" in (approver.hello or {})["features"]["methods"]

    rid = await _send(requester, "plugin.approval.request", {**REQUEST, "timeoutMs": 60_000})
    ev = (await approver.event("plugin.approval.requested"))["payload"]
    approval_id = ev["id"]
    assert approval_id.startswith("plugin:")
    assert ev["request"] == {**REQUEST}
    assert ev["expiresAtMs"] - ev["createdAtMs"] == 60_000

    listed = await approver.request("plugin.approval.list")
    assert listed["payload"] == [ev]

    wait_rid = await _send(approver, "plugin.approval.waitDecision", {"id": approval_id})
    res = await approver.request("plugin.approval.resolve", {"id": approval_id[:15], "decision": "allow-once"})
    assert res["ok"] and res["payload"] == {"ok": True}, res
    resolved = (await approver.event("plugin.approval.resolved"))["payload"]
    assert resolved["id"] == approval_id and resolved["decision"] == "allow-once"
    assert resolved["resolvedBy"] == "Ops Desk" and resolved["request"] == REQUEST and resolved["ts"] > 0

    final = {
        "id": approval_id,
        "decision": "allow-once",
        "createdAtMs": ev["createdAtMs"],
        "expiresAtMs": ev["expiresAtMs"],
    }
    assert (await approver.response(wait_rid))["payload"] == final
    assert (await requester.response(rid))["payload"] == final
    # a late waitDecision still gets the lingering decision; the pending list is empty
    assert (await approver.request("plugin.approval.waitDecision", {"id": approval_id}))["payload"] == final
    assert (await approver.request("plugin.approval.list"))["payload"] == []

    # the read-only client saw neither event (events precede this response on its socket)
    assert (await reader.request("health"))["ok"]
    assert not [e for e in reader.events if e["event"].startswith("plugin.approval.")]


async def test_two_phase_sends_accepted_then_final(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    requester = await _client(gw, APPROVER)
    rid = await _send(requester, "plugin.approval.request", {**REQUEST, "twoPhase": True})
    first = await requester.response(rid)
    p = first["payload"]
    assert first["ok"] and p["status"] == "accepted" and p["id"].startswith("plugin:")
    assert p["expiresAtMs"] - p["createdAtMs"] == 120_000  # the default timeout
    assert (await requester.request("plugin.approval.resolve", {"id": p["id"], "decision": "deny"}))["ok"]
    second = await requester.response(rid)
    assert second["payload"] == {
        "id": p["id"],
        "decision": "deny",
        "createdAtMs": p["createdAtMs"],
        "expiresAtMs": p["expiresAtMs"],
    }
    assert (await approver.event("plugin.approval.resolved"))["payload"]["decision"] == "deny"


async def test_no_approver_expires_immediately(gw: RunningGateway, manager: ApprovalManager) -> None:
    await _client(gw, READER)  # connected, but cannot approve
    requester = await _client(gw, APPROVER)  # the requester itself does not count
    res = await requester.request("plugin.approval.request", {**REQUEST, "twoPhase": True})
    p = res["payload"]
    assert res["ok"] and p["decision"] is None and "status" not in p
    assert (await requester.request("plugin.approval.list"))["payload"] == []
    bad = await requester.request("plugin.approval.resolve", {"id": p["id"], "decision": "allow-once"})
    assert bad["error"]["message"] == "unknown or expired approval id"


async def test_timeout_answers_null_and_tells_operators(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    requester = await _client(gw, APPROVER)
    res = await requester.request("plugin.approval.request", {**REQUEST, "timeoutMs": 50})
    assert res["ok"] and res["payload"]["decision"] is None
    ev = (await approver.event("plugin.approval.resolved"))["payload"]
    assert ev["decision"] is None and ev["resolvedBy"] is None and ev["id"] == res["payload"]["id"]


async def test_allow_always_is_remembered_per_plugin_tool(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    requester = await _client(gw, APPROVER)
    rid = await _send(requester, "plugin.approval.request", REQUEST)
    first = (await approver.event("plugin.approval.requested"))["payload"]
    assert (await approver.request("plugin.approval.resolve", {"id": first["id"], "decision": "allow-always"}))["ok"]
    assert (await requester.response(rid))["payload"]["decision"] == "allow-always"
    again = await requester.request("plugin.approval.request", REQUEST)
    assert again["payload"]["decision"] == "allow-always" and again["payload"]["id"] != first["id"]
    other_tool = await _send(requester, "plugin.approval.request", {**REQUEST, "toolName": "write"})
    second = (await approver.event("plugin.approval.requested"))["payload"]
    assert second["request"]["toolName"] == "write"  # a different tool is asked again
    await approver.request("plugin.approval.resolve", {"id": second["id"], "decision": "deny"})
    assert (await requester.response(other_tool))["payload"]["decision"] == "deny"


async def test_errors_and_validation(gw: RunningGateway, manager: ApprovalManager) -> None:
    approver = await _client(gw, APPROVER)
    requester = await _client(gw, APPROVER)
    rid = await _send(requester, "plugin.approval.request", {**REQUEST, "twoPhase": True})
    approval_id = (await requester.response(rid))["payload"]["id"]

    bad = await approver.request("plugin.approval.resolve", {"id": approval_id, "decision": "maybe"})
    assert bad["error"] == {**bad["error"], "code": "INVALID_REQUEST", "message": "invalid decision"}
    unknown = await approver.request("plugin.approval.resolve", {"id": "plugin:nope", "decision": "deny"})
    assert unknown["error"]["message"] == "unknown or expired approval id"
    assert unknown["error"]["details"] == {"reason": "APPROVAL_NOT_FOUND"}
    gone = await approver.request("plugin.approval.waitDecision", {"id": "plugin:nope"})
    assert gone["error"]["message"] == "approval expired or not found"
    long_title = await approver.request("plugin.approval.request", {**REQUEST, "title": "x" * 81})
    assert long_title["error"]["message"].startswith("invalid plugin.approval.request params: at /title")
    too_long = await approver.request("plugin.approval.request", {**REQUEST, "timeoutMs": 3_600_001})
    assert too_long["error"]["message"].startswith("invalid plugin.approval.request params: at /timeoutMs")
    extra = await approver.request("plugin.approval.request", {**REQUEST, "id": "plugin:mine"})
    assert "unexpected property 'id'" in extra["error"]["message"]

    await approver.request("plugin.approval.resolve", {"id": approval_id, "decision": "deny"})
    assert (await requester.response(rid))["payload"]["decision"] == "deny"


async def test_scope_enforcement(gw: RunningGateway, manager: ApprovalManager) -> None:
    reader = await _client(gw, ["operator.read", "operator.write"])
    for method, params in (
        ("plugin.approval.request", REQUEST),
        ("plugin.approval.list", {}),
        ("plugin.approval.waitDecision", {"id": "plugin:x"}),
        ("plugin.approval.resolve", {"id": "plugin:x", "decision": "deny"}),
    ):
        res = await reader.request(method, params)
        assert res["error"]["message"] == "missing scope: operator.approvals", (method, res)
    admin = await _client(gw, ["operator.admin"])  # admin passes every guard
    assert (await admin.request("plugin.approval.list"))["payload"] == []
