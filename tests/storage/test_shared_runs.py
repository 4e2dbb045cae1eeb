"""Runs on two gateways sharing one real PostgreSQL: one session's runs execute on one gateway at
a time (its lease), an idempotency key sent to both starts one run, and ``agent.wait`` answers on
the gateway that did not run it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

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
