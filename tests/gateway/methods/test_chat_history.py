"""`chat.history` paging and the fields a chat client reconciles with (the original's Control UI
waits on them before sending its next queued message), and `chat.send`'s v4 parameters."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from homarus.providers.scripted import Gate, Reply
from tests.conftest import run_gateway
from tests.gateway.methods.test_agent_chat import CONFIG, _client, _script
from tests.wsclient import Client


async def _turn(c: Client, text: str, key: str) -> None:
    res = await c.request("chat.send", {"sessionKey": "main", "message": text, "idempotencyKey": key})
    assert res["ok"], res
    waited = await c.request("agent.wait", {"runId": key, "timeoutMs": 10_000}, timeout=15)
    assert waited["payload"]["status"] == "ok"


async def test_history_receipts_session_info_and_paging(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        _script(gw, Reply("one"), Reply("two"), Reply("three"))
        c = await _client(gw)
        for n, key in enumerate(("k1", "k2", "k3")):
            await _turn(c, f"message {n}", key)
        hist = (await c.request("chat.history", {"sessionKey": "main", "inputRunIds": ["k2", "never-sent"]}))["payload"]
        messages = hist["messages"]
        assert [m["__openclaw"]["seq"] for m in messages] == [1, 2, 3, 4, 5, 6]
        assert [m.get("idempotencyKey") for m in messages] == ["k1", None, "k2", None, "k3", None]
        assert all(m["__openclaw"]["id"] for m in messages)
        assert hist["inputReceipts"] == [
            {"runId": "k2", "state": "consumed", "consumedByEventId": messages[2]["__openclaw"]["id"]}
        ]
        info = hist["sessionInfo"]
        assert info["hasActiveRun"] is False and info["activeRunIds"] == [] and info["lastRunId"] == "k3"
        assert info["isMain"] is True and info["sessionId"] == hist["sessionId"]
        assert hist["pendingInputs"] == {"items": [], "total": 0}
        assert hist["totalMessages"] == 6 and hist["hasMore"] is False

        page = (await c.request("chat.history", {"sessionKey": "main", "limit": 2}))["payload"]
        assert page["messages"][0]["content"] == "message 2" and page["hasMore"] is True
        older = (await c.request("chat.history", {"sessionKey": "main", "limit": 2, "cursor": page["nextCursor"]}))[
            "payload"
        ]
        assert [m["__openclaw"]["seq"] for m in older["messages"]] == [3, 4]
        skipped = (await c.request("chat.history", {"sessionKey": "main", "limit": 2, "offset": 2}))["payload"]
        assert [m["__openclaw"]["seq"] for m in skipped["messages"]] == [3, 4]
        upto = messages[1]["__openclaw"]["id"]
        until = (await c.request("chat.history", {"sessionKey": "main", "messageId": upto}))["payload"]
        assert [m["__openclaw"]["seq"] for m in until["messages"]] == [1, 2]
        stale = (await c.request("chat.history", {"sessionKey": "main", "sessionId": "an-old-one"}))["payload"]
        assert stale["messages"] == [] and stale["sessionId"] == hist["sessionId"]

        for bad, field in (
            ({"cursor": "12"}, "cursor"),
            ({"messageId": "nope"}, "messageId"),
            ({"offset": -1}, "offset"),
        ):
            res = await c.request("chat.history", {"sessionKey": "main", **bad})
            assert res["error"]["code"] == "INVALID_REQUEST" and field in res["error"]["message"]


async def test_history_names_the_active_run(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        release = asyncio.Event()
        _script(gw, Gate(release, Reply("late")))
        c = await _client(gw)
        assert (await c.request("chat.send", {"sessionKey": "main", "message": "hi", "idempotencyKey": "busy"}))["ok"]
        for _ in range(100):
            info = (await c.request("chat.history", {"sessionKey": "main"}))["payload"]["sessionInfo"]
            if info["hasActiveRun"]:
                break
            await asyncio.sleep(0.02)
        assert info["hasActiveRun"] is True and info["activeRunIds"] == ["busy"] and info["status"] == "running"
        gw.call_soon(release.set)
        assert (await c.request("agent.wait", {"runId": "busy", "timeoutMs": 10_000}, timeout=15))["payload"][
            "status"
        ] == "ok"


async def test_chat_send_v4_parameters(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = _script(gw, Reply("first"), Reply("took it as text"))
        c = await _client(gw)
        await _turn(c, "hello", "s1")
        sid = (await c.request("chat.history", {"sessionKey": "main"}))["payload"]["sessionId"]
        params: dict[str, Any] = {
            "sessionKey": "main",
            "sessionId": sid,
            "agentId": "main",
            "message": "/status",
            "idempotencyKey": "s2",
            "suppressCommandInterpretation": True,
            "queueMode": "followup",
            "fastMode": "auto",  # inert: no fast mode here
            "workContext": {"page": "chat"},
        }
        assert (await c.request("chat.send", params))["payload"] == {"runId": "s2", "status": "started"}
        assert (await c.request("agent.wait", {"runId": "s2", "timeoutMs": 10_000}, timeout=15))["payload"][
            "status"
        ] == "ok"
        assert len(provider.requests) == 2  # "/status" went to the model, not to the command
        replaced = await c.request("chat.send", {**params, "sessionId": "old", "idempotencyKey": "s3"})
        assert replaced["error"]["code"] == "INVALID_REQUEST" and "was replaced" in replaced["error"]["message"]
        for bad in ({"queueMode": "later"}, {"agentId": "ghost"}, {"nope": 1}):
            res = await c.request("chat.send", {**params, "idempotencyKey": "s4", **bad})
            assert res["error"]["code"] == "INVALID_REQUEST", bad


async def test_sessions_abort_stops_the_run_and_clears_the_queue(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gate = Gate(asyncio.Event(), Reply("never"))
        _script(gw, gate, Reply("never either"))
        c = await _client(gw)
        send = {"sessionKey": "main", "message": "one", "idempotencyKey": "first"}
        assert (await c.request("chat.send", send))["ok"]
        assert (await c.request("chat.send", {**send, "idempotencyKey": "second", "queueMode": "followup"}))["ok"]
        for _ in range(200):
            if gate.reached.is_set():
                break
            await asyncio.sleep(0.02)
        bad = await c.request("sessions.abort", {"key": "main", "runId": "first", "agentId": "ghost"})
        assert bad["error"]["code"] == "INVALID_REQUEST"
        res = (await c.request("sessions.abort", {"key": "main", "clearQueued": True}))["payload"]
        assert res["aborted"] is True and res["runIds"] == ["first"] and res["clearedQueued"] == 1
        second = (await c.request("agent.wait", {"runId": "second", "timeoutMs": 10_000}, timeout=15))["payload"]
        assert second["status"] == "error" and "cleared" in second["error"]
        first = (await c.request("agent.wait", {"runId": "first", "timeoutMs": 10_000}, timeout=15))["payload"]
        assert first["status"] == "timeout"  # an aborted run, as agent.wait says it
