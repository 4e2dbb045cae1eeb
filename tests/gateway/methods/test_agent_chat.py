"""`agent`, `agent.wait` and `chat.*` end to end: real gateway, scripted model, raw WS client."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

from homarus.providers.scripted import Fail, Gate, Reply, ScriptedProvider
from homarus.sessions.store import SessionStore
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}}},
}


async def _client(gw: RunningGateway, scopes: list[str] | None = None, caps: list[str] | None = None) -> Client:
    client = await open_client(gw.url)
    extra: dict[str, Any] = {"caps": caps} if caps else {}
    assert (await client.handshake(TEST_TOKEN, scopes, **extra))["ok"]
    return client


def _script(gw: RunningGateway, *steps: Any) -> ScriptedProvider:
    provider = ScriptedProvider(steps)
    gw.gateway.models.overrides["test"] = provider
    return provider


def _transcript(gw: RunningGateway, key: str = "agent:main:main") -> list[dict[str, Any]]:
    sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
    entry = SessionStore(sessions).read()[key]
    return [json.loads(line) for line in (sessions / f"{entry['sessionId']}.jsonl").read_text().splitlines()]


async def _final(client: Client, rid: str) -> dict[str, Any]:
    first = await client.response(rid)
    assert first["ok"] and first["payload"]["status"] == "accepted", first
    return await client.response(rid, timeout=10)


async def test_agent_two_responses_events_and_transcript(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        _script(gw, Reply("", tool_calls=[("current_time", {})]), Reply("It is now."))
        watcher = await _client(gw, caps=["tool-events"])
        blind = await _client(gw)
        await watcher.send(
            {
                "type": "req",
                "id": "a1",
                "method": "agent",
                "params": {"message": "what time is it?", "idempotencyKey": "run-1"},
            }
        )
        final = await _final(watcher, "a1")
        assert final["ok"] is True
        payload = final["payload"]
        assert payload["runId"] == "run-1" and payload["status"] == "ok" and payload["summary"] == "completed"
        assert payload["result"]["payloads"] == [{"text": "It is now."}]
        events = [e["payload"] for e in watcher.events if e["event"] == "agent"]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        streams = [(e["stream"], e["data"].get("phase")) for e in events]
        assert streams[0] == ("lifecycle", "start") and streams[-1] == ("lifecycle", "end")
        assert ("tool", "start") in streams and ("tool", "result") in streams
        tool_result = next(e for e in events if e["stream"] == "tool" and e["data"]["phase"] == "result")
        assert tool_result["data"]["name"] == "current_time" and tool_result["data"]["isError"] is False
        assert all(e["sessionKey"] == "agent:main:main" for e in events)
        await blind.request("health")
        assert all(e["payload"]["stream"] != "tool" for e in blind.events if e["event"] == "agent")
        assert any(e["payload"]["stream"] == "assistant" for e in blind.events if e["event"] == "agent")
        lines = _transcript(gw)
        assert lines[0]["type"] == "session" and lines[0]["version"] == 3
        roles = [x["message"]["role"] for x in lines[1:] if x["type"] == "message"]
        assert roles == ["user", "assistant", "toolResult", "assistant"]
        assert all(x["parentId"] == y["id"] for y, x in itertools.pairwise(lines[1:]))
        row = (await watcher.request("sessions.list"))["payload"]["sessions"][0]
        assert row["status"] == "done" and row["totalTokens"] > 0


async def test_agent_is_idempotent_across_reconnects(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = _script(gw, Reply("once"))
        c1 = await _client(gw)
        await c1.send(
            {"type": "req", "id": "x", "method": "agent", "params": {"message": "hi", "idempotencyKey": "same-key"}}
        )
        assert (await _final(c1, "x"))["payload"]["result"]["payloads"] == [{"text": "once"}]
        await c1.ws.close()
        c2 = await _client(gw)
        again = await c2.request("agent", {"message": "hi", "idempotencyKey": "same-key"})
        assert again["ok"] and again["payload"]["result"]["meta"]["cached"] is True
        assert again["payload"]["result"]["payloads"] == [{"text": "once"}]
        assert len(provider.requests) == 1  # no second run
        waited = await c2.request("agent.wait", {"runId": "same-key"})
        assert waited["payload"]["status"] == "ok" and waited["payload"]["endedAt"] >= waited["payload"]["startedAt"]
        unknown = await c2.request("agent.wait", {"runId": "nope", "timeoutMs": 50})
        assert unknown["payload"] == {"runId": "nope", "status": "timeout"}


async def test_agent_run_outlives_a_caller_that_hangs_up(tmp_path: Path) -> None:
    """The original's CLI may exit right after "accepted": the run is the gateway's, not the socket's."""
    with run_gateway(tmp_path, config=CONFIG) as gw:
        release = asyncio.Event()
        provider = _script(gw, Gate(release, Reply("finished anyway")))
        c1 = await _client(gw)
        accepted = await c1.request("agent", {"message": "hi", "idempotencyKey": "hang-up"})
        assert accepted["payload"]["status"] == "accepted"
        await c1.ws.close()
        gw.call_soon(release.set)
        c2 = await _client(gw)
        waited = await c2.request("agent.wait", {"runId": "hang-up", "timeoutMs": 10_000}, timeout=15)
        assert waited["payload"]["status"] == "ok"
        assert len(provider.requests) == 1
        assert _transcript(gw)[-1]["message"]["content"][0]["text"] == "finished anyway"


async def test_agent_bad_input(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        _script(gw)
        admin = await _client(gw)
        writer = await _client(gw, ["operator.write"])

        async def err(c: Client, params: dict[str, Any]) -> str:
            res = await c.request("agent", params)
            assert res["ok"] is False, res
            return str(res["error"]["message"])

        assert (await err(admin, {"message": "", "idempotencyKey": "k"})).startswith(
            "invalid agent params: at /message"
        )
        assert (await err(admin, {"message": "x"})).endswith("must have required property 'idempotencyKey'")
        assert (
            await err(admin, {"message": "x", "idempotencyKey": "k", "agentId": "ghost"}) == 'unknown agent id "ghost"'
        )
        assert (await err(admin, {"message": "x", "idempotencyKey": "k", "sessionKey": "agent:"})).startswith(
            "malformed session key"
        )
        assert await err(writer, {"message": "x", "idempotencyKey": "k", "model": "test/m"}) == (
            "provider/model overrides are not authorized for this caller."
        )
        assert await err(admin, {"message": "x", "idempotencyKey": "k", "model": "nope/x"}) == (
            "unknown model provider 'nope' (models.providers has no such entry)"
        )
        assert await err(admin, {"message": "x", "idempotencyKey": "k", "bogus": 1}) == (
            "invalid agent params: at root: unexpected property 'bogus'"
        )


async def test_provider_failure_is_a_clear_outcome_and_session_stays_usable(tmp_path: Path) -> None:
    config = {**CONFIG, "agents": {"defaults": {"model": {"primary": "test/m"}, "retry": {"maxRetries": 0}}}}
    with run_gateway(tmp_path, config=config) as gw:
        _script(gw, Fail("invalid api key", status=401), Reply("better now"))
        c = await _client(gw)
        await c.send({"type": "req", "id": "f", "method": "agent", "params": {"message": "hi", "idempotencyKey": "f1"}})
        final = await _final(c, "f")
        assert final["ok"] is False and final["error"]["code"] == "UNAVAILABLE"
        assert final["error"]["message"] == "invalid api key"
        assert final["payload"] == {"runId": "f1", "status": "error", "summary": "invalid api key"}
        assert (await c.request("agent.wait", {"runId": "f1"}))["payload"]["status"] == "error"
        await c.send(
            {"type": "req", "id": "g", "method": "agent", "params": {"message": "again", "idempotencyKey": "f2"}}
        )
        assert (await _final(c, "g"))["payload"]["result"]["payloads"] == [{"text": "better now"}]
        lines = _transcript(gw)
        stops = [x["message"].get("stopReason") for x in lines[1:] if x["message"]["role"] == "assistant"]
        assert stops == ["error", "stop"]


async def test_chat_send_streams_and_history(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        _script(gw, Reply("A long reply that streams in several cumulative deltas to the client."))
        c = await _client(gw)
        res = await c.request("chat.send", {"sessionKey": "main", "message": "hello\x07 there", "idempotencyKey": "c1"})
        assert res["payload"] == {"runId": "c1", "status": "started"}
        final = await c.event("chat", timeout=10)
        while final["payload"]["state"] != "final":
            final = await c.event("chat", timeout=10)
        assert final["payload"]["message"]["content"][0]["text"].startswith("A long reply")
        hist = (await c.request("chat.history", {"sessionKey": "main"}))["payload"]
        assert [m["role"] for m in hist["messages"]] == ["user", "assistant"]
        assert hist["messages"][0]["content"] == "hello there"  # control character stripped
        short = (await c.request("chat.history", {"sessionKey": "main", "maxChars": 6}))["payload"]
        assert short["messages"][1]["content"][0]["text"] == "A long"
        again = await c.request("chat.send", {"sessionKey": "main", "message": "hello", "idempotencyKey": "c1"})
        assert again["payload"] == {"runId": "c1", "status": "ok"}
        nul = await c.request("chat.send", {"sessionKey": "main", "message": "a\x00b", "idempotencyKey": "c2"})
        assert nul["error"]["message"] == "message must not contain null bytes"
        empty = await c.request("chat.send", {"sessionKey": "main", "message": "  ", "idempotencyKey": "c3"})
        assert empty["error"]["message"] == "message or attachment required"


async def test_chat_abort_persists_partial_and_next_turn_works(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gate = asyncio.Event()  # never set: the run waits until aborted
        provider = _script(gw, Gate(gate, Reply("never")), Reply("fresh start"))
        c = await _client(gw)
        await c.request("chat.send", {"sessionKey": "main", "message": "slow please", "idempotencyKey": "s1"})
        for _ in range(200):
            if provider.requests:
                break
            await asyncio.sleep(0.01)
        busy = await c.request("chat.send", {"sessionKey": "main", "message": "x", "idempotencyKey": "s1"})
        assert busy["payload"] == {"runId": "s1", "status": "in_flight"}
        aborted = await c.request("chat.abort", {"sessionKey": "main"})
        assert aborted["payload"] == {"ok": True, "aborted": True, "runIds": ["s1"]}
        event = await c.event("chat", timeout=10)
        while event["payload"]["state"] not in ("aborted", "final", "error"):
            event = await c.event("chat", timeout=10)
        assert event["payload"]["state"] == "aborted"
        waited = await c.request("agent.wait", {"runId": "s1", "timeoutMs": 5000})
        assert waited["payload"]["status"] == "timeout"  # aborted runs report as timeout, like the original
        await c.request("chat.send", {"sessionKey": "main", "message": "again", "idempotencyKey": "s2"})
        assert (await c.request("agent.wait", {"runId": "s2", "timeoutMs": 5000}))["payload"]["status"] == "ok"
        lines = _transcript(gw)
        stops = [x["message"].get("stopReason") for x in lines[1:] if x["message"]["role"] == "assistant"]
        assert stops == ["aborted", "stop"]
        none = await c.request("chat.abort", {"sessionKey": "main"})
        assert none["payload"] == {"ok": True, "aborted": False, "runIds": []}


async def test_accepted_run_survives_restart_as_interrupted(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = _script(gw, Gate(asyncio.Event(), Reply("never")))
        c = await _client(gw)
        await c.send(
            {"type": "req", "id": "r", "method": "agent", "params": {"message": "hi", "idempotencyKey": "lost-1"}}
        )
        assert (await c.response("r"))["payload"]["status"] == "accepted"
        for _ in range(200):
            if provider.requests:
                break
            await asyncio.sleep(0.01)
        record = gw.gateway.journal.get("lost-1")
        assert record is not None and record.status == "running"
        # simulate a crash: the process dies without finishing the run
        gw.gateway.runtime.runs.all()[0].abort.set()
    journal = tmp_path / "state" / "runs.sqlite"
    assert journal.exists()
    import sqlite3

    db = sqlite3.connect(journal)
    db.execute("UPDATE runs SET status='running', ended_at=NULL WHERE run_id='lost-1'")
    db.commit()
    db.close()
    with run_gateway(tmp_path, config=None) as gw2:
        c = await _client(gw2)
        waited = (await c.request("agent.wait", {"runId": "lost-1", "timeoutMs": 100}))["payload"]
        assert waited["status"] == "error" and waited.get("interrupted") is True
        row = (await c.request("sessions.list"))["payload"]["sessions"][0]
        assert row["status"] == "interrupted" and row["abortedLastRun"] is True
        replay = await c.request("agent", {"message": "hi", "idempotencyKey": "lost-1"})
        assert replay["ok"] is False and "interrupted" in replay["error"]["message"]


async def test_agent_wait_says_where_an_unfinished_run_stands(tmp_path: Path) -> None:
    config = json.loads(json.dumps(CONFIG))
    config["agents"]["defaults"]["maxConcurrent"] = 1
    with run_gateway(tmp_path, config=config) as gw:
        gate = asyncio.Event()
        _script(gw, Gate(gate, Reply("first")), Reply("second"))
        c = await _client(gw)
        for rid, session in (("w1", "one"), ("w2", "two")):
            params = {"message": "hi", "sessionKey": session, "idempotencyKey": rid}
            await c.send({"type": "req", "id": rid, "method": "agent", "params": params})
            assert (await c.response(rid))["payload"]["status"] == "accepted"
        await asyncio.sleep(0.2)
        running = (await c.request("agent.wait", {"runId": "w1", "timeoutMs": 50}))["payload"]
        queued = (await c.request("agent.wait", {"runId": "w2", "timeoutMs": 50}))["payload"]
        assert running == {"runId": "w1", "status": "timeout", "state": "running"}
        assert queued == {"runId": "w2", "status": "timeout", "state": "queued"}  # behind the one main slot
        unknown = (await c.request("agent.wait", {"runId": "nope", "timeoutMs": 10}))["payload"]
        assert unknown == {"runId": "nope", "status": "timeout"}
        gw.call_soon(gate.set)
        done = (await c.request("agent.wait", {"runId": "w2", "timeoutMs": 5000}))["payload"]
        assert done["status"] == "ok" and "resumed" not in done and done["endedAt"] >= done["startedAt"]


async def test_run_timeout(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        _script(gw, Gate(asyncio.Event(), Reply("never")))
        c = await _client(gw)
        await c.send(
            {
                "type": "req",
                "id": "t",
                "method": "agent",
                "params": {"message": "hi", "idempotencyKey": "t1", "timeout": 1},
            }
        )
        final = await _final(c, "t")
        assert final["ok"] is True and final["payload"]["result"]["meta"]["aborted"] is True
        assert (await c.request("agent.wait", {"runId": "t1"}))["payload"]["status"] == "timeout"


def _count_transcript_fsyncs(monkeypatch: Any) -> list[str]:
    """Every fsync of a transcript file from now on (SQLite's own go through C, not ``os``)."""
    import os

    seen: list[str] = []
    real = os.fsync

    def spy(fd: Any) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}") if isinstance(fd, int) else str(fd)
        if target.endswith(".jsonl"):
            seen.append(target)
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return seen


async def test_a_turn_fsyncs_its_transcript_once_and_a_failed_one_still_keeps_the_message(
    tmp_path: Path, monkeypatch: Any
) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        _script(gw, Reply("one"), Reply("two"), Fail("the model is down", status=400))
        client = await _client(gw)
        fsyncs = _count_transcript_fsyncs(monkeypatch)
        for i in (1, 2):
            await client.send(
                {
                    "type": "req",
                    "id": f"t{i}",
                    "method": "agent",
                    "params": {"message": f"m{i}", "idempotencyKey": f"k{i}"},
                }
            )
            assert (await _final(client, f"t{i}"))["payload"]["status"] == "ok"
        # the first turn: the new transcript's header, then the user's message and the reply under
        # one fsync (the message's own append is not synced before the model is asked)
        assert len(fsyncs) == 3
        await client.send(
            {"type": "req", "id": "t3", "method": "agent", "params": {"message": "m3", "idempotencyKey": "k3"}}
        )
        failed = await _final(client, "t3")
        assert failed["payload"]["status"] == "error"
        assert len(fsyncs) == 4  # no reply to sync with: the message is synced at the end of the run
        roles = [(x["message"]["role"]) for x in _transcript(gw)[1:] if x["type"] == "message"]
        assert roles[:4] == ["user", "assistant", "user", "assistant"] and "user" in roles[4:]
