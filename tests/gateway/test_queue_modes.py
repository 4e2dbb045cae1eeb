"""A message for a running session: steer (default), followup, collect, interrupt; and compaction."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from homarus.messages import Context, ToolResultMessage, UserMessage
from homarus.providers.scripted import Gate, Reply, Responder, ScriptedProvider
from homarus.sessions.store import SessionStore
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client


def _config(mode: str, **defaults: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, **defaults}},
        "messages": {"queue": {"mode": mode}},
    }


async def _client(gw: RunningGateway) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN))["ok"]
    return client


async def _started(provider: ScriptedProvider, n: int) -> None:
    for _ in range(500):
        if len(provider.requests) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"provider saw {len(provider.requests)} requests, expected {n}")


def _user_texts(context: Context) -> list[str]:
    return [m.text for m in context.messages if isinstance(m, UserMessage)]


async def _send(c: Client, text: str, idem: str) -> None:
    res = await c.request("chat.send", {"sessionKey": "main", "message": text, "idempotencyKey": idem})
    assert res["ok"], res


async def _wait(c: Client, run_id: str) -> dict[str, Any]:
    res = await c.request("agent.wait", {"runId": run_id, "timeoutMs": 10_000}, timeout=15)
    payload: dict[str, Any] = res["payload"]
    return payload


async def test_steer_injects_into_the_running_turn(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("steer")) as gw:
        release = asyncio.Event()
        provider = ScriptedProvider(
            [
                Gate(release, Reply("", tool_calls=[("current_time", {}), ("current_time", {})])),
                Reply("saw your correction"),
            ]
        )
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        await _send(c, "first", "s1")
        await _started(provider, 1)
        await _send(c, "actually, second", "s2")
        run = gw.gateway.runtime.runs.for_session("agent:main:main")
        assert run is not None
        for _ in range(500):  # chat.send acks before the message reaches the run
            if run.steering:
                break
            await asyncio.sleep(0.01)
        gw.call_soon(release.set)
        assert (await _wait(c, "s1"))["status"] == "ok"
        assert (await _wait(c, "s2"))["status"] == "ok"  # the steered message shares the run's outcome
        assert len(provider.requests) == 2
        second = provider.requests[1]
        assert _user_texts(second)[-1] == "actually, second"
        skipped = [m for m in second.messages if isinstance(m, ToolResultMessage)]
        assert skipped and skipped[-1].text == "Skipped due to queued user message."


async def test_steer_never_answers_a_message_before_earlier_ones_still_waiting(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("steer", maxConcurrent=1)) as gw:
        other, first = asyncio.Event(), asyncio.Event()
        provider = ScriptedProvider(
            [Gate(other, Reply("elsewhere")), Gate(first, Reply("one")), Reply("two"), Reply("three")]
        )
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        res = await c.request("chat.send", {"sessionKey": "other", "message": "x", "idempotencyKey": "o1"})
        assert res["ok"]
        await _started(provider, 1)  # the only main-lane slot is taken
        await _send(c, "first", "q1")  # holds the session, waits for the main lane
        await _send(c, "second", "q2")  # nothing active yet: waits in the session lane
        lanes = gw.gateway.lanes
        for _ in range(500):
            if lanes.waiting("session:agent:main:main") == 1:
                break
            await asyncio.sleep(0.01)
        gw.call_soon(other.set)
        await _started(provider, 2)  # "first" runs now, "second" still waits
        await _send(c, "third", "q3")  # steering it into "first" would answer it before "second"
        await asyncio.sleep(0.1)
        gw.call_soon(first.set)
        for run_id in ("q1", "q2", "q3"):
            assert (await _wait(c, run_id))["status"] == "ok"
        asked = [_user_texts(r)[-1] for r in provider.requests[1:]]
        assert asked == ["first", "second", "third"]


async def test_followup_runs_after_the_current_run(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("followup")) as gw:
        release = asyncio.Event()
        provider = ScriptedProvider([Gate(release, Reply("one")), Reply("two")])
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        await _send(c, "first", "f1")
        await _started(provider, 1)
        await _send(c, "second", "f2")
        await asyncio.sleep(0.1)
        assert len(provider.requests) == 1  # the follow-up waits for the session lane
        gw.call_soon(release.set)
        assert (await _wait(c, "f2"))["status"] == "ok"
        assert _user_texts(provider.requests[1])[-2:] == ["first", "second"]


async def test_collect_merges_queued_messages(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("collect")) as gw:
        release = asyncio.Event()
        provider = ScriptedProvider([Gate(release, Reply("one")), Reply("merged answer")])
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        await _send(c, "first", "k1")
        await _started(provider, 1)
        await _send(c, "second", "k2")
        await _send(c, "third", "k3")
        for _ in range(500):  # both must be queued before the running turn ends
            pending = gw.gateway.runtime._collect.get(("agent:main:main", "owner"))
            if pending is not None and len(pending[0]) == 2:
                break
            await asyncio.sleep(0.01)
        gw.call_soon(release.set)
        assert (await _wait(c, "k2"))["status"] == "ok"
        assert (await _wait(c, "k3"))["status"] == "ok"
        assert len(provider.requests) == 2
        merged = _user_texts(provider.requests[1])[-1]
        assert merged.startswith("[Queued messages while agent was busy]")
        assert "Queued #1\nsecond" in merged and "Queued #2\nthird" in merged


async def test_interrupt_aborts_and_runs_the_newest(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("interrupt")) as gw:
        provider = ScriptedProvider([Gate(asyncio.Event(), Reply("never")), Reply("newest wins")])
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        await _send(c, "slow", "i1")
        await _started(provider, 1)
        await _send(c, "urgent", "i2")
        assert (await _wait(c, "i1"))["status"] == "timeout"  # aborted
        assert (await _wait(c, "i2"))["status"] == "ok"
        assert _user_texts(provider.requests[1])[-1] == "urgent"


async def test_threshold_compaction_writes_an_entry_and_replays_summary(tmp_path: Path) -> None:
    compaction = {"reserveTokensFloor": 1000, "keepRecentTokens": 500, "memoryFlush": {"enabled": False}}
    config = _config("steer", compaction=compaction)
    config["models"]["providers"]["test"]["models"] = [{"id": "m", "contextWindow": 2000}]
    with run_gateway(tmp_path, config=config) as gw:

        def answer(ctx: Context) -> Reply:
            if ctx.system_prompt.startswith("You write context summaries"):  # the compaction request
                return Reply("## Goal\nTalk.\n## Progress\nMany long messages exchanged.")
            return Reply("x" * 1200)

        provider = ScriptedProvider([Responder(answer)] * 20)
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        for i in range(3):
            await _send(c, "y" * 1200, f"long-{i}")
            assert (await _wait(c, f"long-{i}"))["status"] == "ok"
        sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
        entry = SessionStore(sessions).read()["agent:main:main"]
        lines = [json.loads(x) for x in (sessions / f"{entry['sessionId']}.jsonl").read_text().splitlines()]
        compactions = [x for x in lines if x["type"] == "compaction"]
        assert compactions, "no compaction entry was written"
        ids = {x.get("id") for x in lines}
        assert compactions[0]["firstKeptEntryId"] in ids and compactions[0]["tokensBefore"] > 0
        assert entry["compactionCount"] >= 1
        last_request = [r for r in provider.requests if not r.system_prompt.startswith("You write context")][-1]
        first = last_request.messages[0]
        assert isinstance(first, UserMessage) and first.text.startswith(
            "The conversation history before this point was compacted"
        )
