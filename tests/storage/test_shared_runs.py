"""Runs on two gateways sharing one real PostgreSQL: one session's runs execute on one gateway at
a time (its lease), an idempotency key sent to both starts one run, and ``agent.wait`` answers on
the gateway that did not run it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg

from homarus.messages import AssistantMessage, UserMessage
from homarus.providers.scripted import Gate, Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.storage.test_shared_sessions import _config, _turn
from tests.wsclient import Client, open_client


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN))["ok"]
    return c


def _models(a: RunningGateway, b: RunningGateway, *steps_a: Any) -> tuple[ScriptedProvider, ScriptedProvider]:
    model_a, model_b = ScriptedProvider(steps_a), ScriptedProvider([Reply("from B")])
    a.gateway.models.overrides["test"] = model_a
    b.gateway.models.overrides["test"] = model_b
    return model_a, model_b


async def test_one_sessions_runs_execute_on_one_gateway_at_a_time(tmp_path: Path, pg_url: str) -> None:
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        release = asyncio.Event()
        gate = Gate(release, Reply("from A"))
        _model_a, model_b = _models(a, b, gate)
        ca, cb = await _client(a), await _client(b)
        first = asyncio.create_task(_turn(ca, "main", "first", "run-a"))
        await asyncio.wait_for(gate.reached.wait(), 10)
        second = asyncio.create_task(_turn(cb, "main", "second", "run-b"))
        await asyncio.sleep(0.6)
        assert model_b.requests == []  # b waits for the session while a's run holds it
        release.set()
        assert (await first)["state"] == "final"
        assert (await second)["state"] == "final"
        history = model_b.requests[-1].messages
        assert [type(m) for m in history] == [UserMessage, AssistantMessage, UserMessage]
        assert isinstance(history[1], AssistantMessage) and history[1].content[0].text == "from A"  # type: ignore[union-attr]


async def test_an_idempotency_key_sent_to_two_gateways_starts_one_run(tmp_path: Path, pg_url: str) -> None:
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        release = asyncio.Event()
        gate = Gate(release, Reply("the one answer"))
        model_a, model_b = _models(a, b, gate)
        ca, cb, watcher = await _client(a), await _client(b), await _client(b)
        params = {"message": "once please", "idempotencyKey": "same-key"}
        await ca.send({"type": "req", "id": "on-a", "method": "agent", "params": params})
        assert (await ca.response("on-a"))["payload"]["status"] == "accepted"
        await asyncio.wait_for(gate.reached.wait(), 10)
        await cb.send({"type": "req", "id": "on-b", "method": "agent", "params": params})
        ack = await cb.response("on-b")
        assert ack["payload"]["status"] == "accepted" and ack["payload"]["meta"] == {"cached": True}
        wait = {"runId": "same-key", "timeoutMs": 20_000}
        waited = asyncio.create_task(watcher.request("agent.wait", wait, timeout=25))
        release.set()
        final_a = await ca.response("on-a", timeout=15)
        final_b = await cb.response("on-b", timeout=15)
        assert final_a["payload"]["status"] == "ok"
        assert final_b["ok"] and final_b["payload"]["result"]["payloads"] == [{"text": "the one answer"}]
        assert (await waited)["payload"]["status"] == "ok"
        assert len(model_a.requests) == 1 and model_b.requests == []


async def test_a_client_on_one_gateway_sees_the_events_of_a_run_on_another(tmp_path: Path, pg_url: str) -> None:
    long_reply = "All of this streams. " * 800  # ~17 KB: its final event is over a notification's limit
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        _models(a, b, Reply("", tool_calls=[("current_time", {})]), Reply(long_reply))
        watcher = await open_client(b.url)
        assert (await watcher.handshake(TEST_TOKEN, caps=["tool-events"]))["ok"]
        blind = await _client(b)  # no tool-events: it gets no tool events, relayed or not
        ca = await _client(a)
        final = await _turn(ca, "main", "what time is it?", "run-far")
        assert final["state"] == "final"

        async def seen_final() -> dict[str, Any]:
            while True:
                event = await watcher.event("chat", timeout=15)
                if event["payload"]["state"] == "final":
                    payload: dict[str, Any] = event["payload"]
                    return payload

        far = await seen_final()
        assert far["runId"] == "run-far" and far["message"]["content"][0]["text"] == long_reply
        events = [e["payload"] for e in watcher.events if e["event"] == "agent" and e["payload"]["runId"] == "run-far"]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))  # every one, in order
        streams = [(e["stream"], e["data"].get("phase")) for e in events]
        assert streams[0] == ("lifecycle", "start") and streams[-1] == ("lifecycle", "end")
        assert ("tool", "start") in streams and ("tool", "result") in streams
        await blind.request("health")
        assert all(e["payload"]["stream"] != "tool" for e in blind.events if e["event"] == "agent")
        assert any(e["payload"]["runId"] == "run-far" for e in blind.events if e["event"] == "agent")
        with psycopg.connect(pg_url) as conn:  # the long ones went through the spill table
            spilled = conn.execute("SELECT count(*) FROM event_spill").fetchone()
        assert spilled is not None and spilled[0] >= 1
