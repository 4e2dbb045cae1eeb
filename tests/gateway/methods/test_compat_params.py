"""The original's v4 parameters over a real socket: the honoured ones do what they say, an inert one
is accepted and changes nothing (nothing stored), an unsupported one is refused unless harmless."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from homarus.sessions.store import SessionStore
from tests.conftest import RunningGateway
from tests.gateway.methods.test_sessions import _client


async def _ok(c: Any, method: str, params: dict[str, Any]) -> Any:
    res = await c.request(method, params)
    assert res["ok"], res
    return res["payload"]


async def _refused(c: Any, method: str, params: dict[str, Any], needle: str) -> None:
    res = await c.request(method, params)
    assert res["ok"] is False and res["error"]["code"] == "INVALID_REQUEST", res
    assert needle in res["error"]["message"], res["error"]["message"]


async def test_sessions_list_filters_and_paging(gw: RunningGateway) -> None:
    c = await _client(gw)
    for key in ("a", "b", "c", "cron:nightly:run", "subagent:x"):
        await _ok(c, "sessions.create", {"key": key})
    await _ok(c, "sessions.patch", {"key": "b", "pinned": True})
    keys = [r["key"] for r in (await _ok(c, "sessions.list", {}))["sessions"]]
    assert len(keys) == 5
    paged = await _ok(c, "sessions.list", {"offset": 1, "limit": 2, "sortBy": "activity"})
    assert [r["key"] for r in paged["sessions"]] == keys[1:3]
    plain = await _ok(c, "sessions.list", {"excludeCron": True, "excludeSubagents": True, "projectId": "p1"})
    assert sorted(r["key"] for r in plain["sessions"]) == ["agent:main:a", "agent:main:b", "agent:main:c"]
    pinned = await _ok(c, "sessions.list", {"pinned": True})
    assert [r["key"] for r in pinned["sessions"]] == ["agent:main:b"]
    assert (await _ok(c, "sessions.list", {"activeOnly": True}))["sessions"] == []
    await _refused(c, "sessions.list", {"sortBy": "name"}, "sortBy")
    await _refused(c, "sessions.list", {"offset": -1}, "offset")


async def test_sessions_resolve_create_reset_delete(gw: RunningGateway) -> None:
    c = await _client(gw)
    made = await _ok(
        c, "sessions.create", {"key": "work", "displayName": "Work", "thinkingLevel": "low", "idempotencyKey": "i1"}
    )
    assert made["entry"]["displayName"] == "Work" and made["entry"]["thinkingLevel"] == "low"
    retried = await _ok(c, "sessions.create", {"idempotencyKey": "i1"})  # no key: would make a new one
    assert retried["sessionId"] == made["sessionId"] and retried["created"] is False
    sid = made["sessionId"]
    assert (await _ok(c, "sessions.resolve", {"sessionId": sid}))["key"] == "agent:main:work"
    assert (await _ok(c, "sessions.resolve", {"sessionId": "gone", "allowMissing": True}))["key"] is None
    await _refused(c, "sessions.resolve", {"sessionId": "gone"}, "no session with session id")
    await _refused(c, "sessions.reset", {"key": "work", "expectedSessionId": "stale"}, "stale")
    reset = await _ok(c, "sessions.reset", {"key": "work", "agentId": "main", "expectedSessionId": sid})
    await _refused(c, "sessions.delete", {"key": "work", "expectedSessionId": sid}, "replaced")
    new_sid = reset["entry"]["sessionId"]
    assert (await _ok(c, "sessions.delete", {"key": "work", "expectedSessionId": new_sid}))["deleted"] is True
    await _refused(c, "sessions.delete", {"key": "work", "agentId": "ghost"}, "unknown agent")


async def test_unsupported_is_refused_unless_harmless_and_inert_is_not_stored(gw: RunningGateway) -> None:
    c = await _client(gw)
    await _ok(c, "sessions.create", {"key": "s", "fork": False, "attachments": [], "fastMode": True})
    await _refused(c, "sessions.create", {"key": "t", "fork": True}, "fork is not supported")
    await _refused(c, "sessions.create", {"key": "t", "incognito": True}, "incognito is not supported")
    await _refused(c, "sessions.patch", {"key": "s", "execSecurity": "full"}, "execSecurity is not supported")
    await _refused(c, "sessions.patch", {"key": "s", "sandboxMode": "off"}, "sandboxMode")
    await _refused(c, "sessions.patch", {"key": "s", "permissionMode": "full"}, "permissionMode")
    await _ok(c, "sessions.patch", {"key": "s", "statusNote": "busy", "attention": "flag", "label": "Kept"})
    entry = SessionStore(gw.paths.state_dir / "agents/main/sessions").read()["agent:main:s"]
    assert entry["label"] == "Kept" and "statusNote" not in entry and "attention" not in entry
    assert not any(k.startswith("compat") for k in entry)
    await _refused(c, "sessions.patch", {"key": "s", "notAField": 1}, "notAField")  # still closed
    await _refused(
        c, "send", {"to": "x", "message": "hi", "idempotencyKey": "k", "mediaUrl": "http://a/b.png"}, "mediaUrl"
    )
    await _refused(c, "config.patch", {"raw": "{}", "replacePaths": ["agents"]}, "replacePaths")


async def test_wake_agent_and_approval_decisions(tmp_path: Path) -> None:
    from tests.conftest import run_gateway
    from tests.gateway.methods.test_sessions import _client as client_of

    config = {
        "agents": {"list": [{"id": "main", "default": True}, {"id": "ops"}], "defaults": {"heartbeat": {"every": "0m"}}}
    }
    with run_gateway(tmp_path, config=config) as gw:
        c = await client_of(gw, ["operator.admin", "operator.approvals"])
        await _ok(c, "wake", {"text": "ping", "mode": "next-heartbeat", "agentId": "ops"})
        assert gw.gateway.heartbeats.events.pending("agent:ops:main") == 1
        await _refused(c, "wake", {"text": "ping", "agentId": "ghost"}, "unknown agent")
        await _refused(c, "wake", {"text": "ping", "sessionKey": "agent:main:x"}, "sessionKey is not supported")
        approver = await client_of(gw, ["operator.approvals"])
        asked = await c.request(
            "exec.approval.request",
            {"command": "touch f", "twoPhase": True, "timeoutMs": 5000, "unavailableDecisions": ["allow-always"]},
        )
        approval_id = asked["payload"]["id"]
        got = await _ok(approver, "exec.approval.get", {"id": approval_id})
        assert got["allowedDecisions"] == ["allow-once", "deny"]
        await _refused(
            approver,
            "exec.approval.resolve",
            {"id": approval_id, "decision": "allow-once", "grantExpiresInDays": 3},
            "grantExpiresInDays",
        )
        await _ok(approver, "exec.approval.resolve", {"id": approval_id, "decision": "deny", "reviewer": "me"})
