"""usage.cost over a real socket: turns through the OpenAI wire format against a loopback model that
reports its tokens, priced from the config, added up per day, model and session, kept across a
restart; usage.status answers no provider quotas (none are asked for)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_TOKEN, run_gateway
from tests.fakes import Reply, run_fake_llm
from tests.wsclient import Client, open_client


def _config(base_url: str) -> dict[str, Any]:
    model = {"id": "priced", "contextWindow": 128000, "cost": {"input": 3.0, "output": 15.0}}
    provider = {"api": "openai-completions", "baseUrl": base_url, "apiKey": "sk-test", "models": [model]}
    return {
        "models": {"providers": {"fake": provider}},
        "agents": {"defaults": {"model": {"primary": "fake/priced"}, "heartbeat": {"every": "0m"}}},
    }


async def _client(url: str) -> Client:
    client = await open_client(url)
    assert (await client.handshake(TEST_TOKEN))["ok"]
    return client


async def _turn(client: Client, message: str, session: str, idem: str) -> None:
    params = {"message": message, "sessionKey": session, "idempotencyKey": idem}
    assert (await client.request("agent", params))["payload"]["status"] == "accepted"
    done = await client.request("agent.wait", {"runId": idem, "timeoutMs": 15000}, timeout=20)
    assert done["payload"]["status"] == "ok", done


async def test_turns_are_accounted_per_model_and_session_and_survive_a_restart(tmp_path: Path) -> None:
    with run_fake_llm() as llm:
        with run_gateway(tmp_path, config=_config(llm.base_url)) as gw:
            llm.push(
                Reply("one", input_tokens=1000, output_tokens=100),
                Reply("two", input_tokens=2000, output_tokens=200),
                Reply("three", input_tokens=500, output_tokens=50),
            )
            c = await _client(gw.url)
            await _turn(c, "first", "main", "u-1")
            await _turn(c, "second", "main", "u-2")
            await _turn(c, "elsewhere", "work", "u-3")

            # a run's calls are added when it ends, on the file-work lane: the answer may precede them
            for _ in range(250):
                s = (await c.request("usage.cost", {"days": 7}))["payload"]
                if s["totals"]["input"] == 3500:
                    break
                await asyncio.sleep(0.02)
            totals = s["totals"]
            assert (totals["input"], totals["output"], totals["totalTokens"]) == (3500, 350, 3850)
            assert totals["totalCost"] == pytest.approx(3500 * 3 / 1e6 + 350 * 15 / 1e6)
            assert totals["missingCostEntries"] == 0
            assert len(s["daily"]) == 1 and s["daily"][0]["totalTokens"] == 3850
            assert [(m["provider"], m["model"], m["count"]) for m in s["byModel"]] == [("fake", "priced", 3)]
            keys = {x["key"]: x["totals"]["input"] for x in s["sessions"]}
            assert keys == {"agent:main:main": 3000, "agent:main:work": 500}
            status = (await c.request("usage.status"))["payload"]
            assert status["providers"] == [] and status["updatedAt"] > 0
            bad = await c.request("usage.cost", {"agentId": "main", "agentScope": "all"})
            assert bad["error"]["message"] == "agentScope=all cannot be combined with agentId"
            bad = await c.request("usage.cost", {"startDate": "2026-11-01"})
            assert "provided together" in bad["error"]["message"]
            bad = await c.request("usage.cost", {"agentId": "ghost"})
            assert 'unknown agent id "ghost"' in bad["error"]["message"]
        with run_gateway(tmp_path, config=_config(llm.base_url)) as gw:
            c = await _client(gw.url)
            again = (await c.request("usage.cost", {"agentScope": "all", "range": "all"}))["payload"]
            assert again["totals"]["totalTokens"] == 3850 and again["agentScope"] == "all"
