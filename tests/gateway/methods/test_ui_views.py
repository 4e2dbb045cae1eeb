"""The original's Control UI views over a real socket: the config schema and its look-up,
sessions.usage from the ledger, lanes, system info, and the answers for what Homarus lacks."""

from __future__ import annotations

import time

from homarus.messages import Cost, Usage
from homarus.usage.ledger import ModelTally, RunUsage, UsageLedger, ledger_path
from tests.conftest import TEST_TOKEN, RunningGateway
from tests.wsclient import Client, open_client


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN, ["operator.read"]))["ok"]
    return c


async def test_config_schema_and_its_look_up(gw: RunningGateway) -> None:
    c = await _client(gw)
    whole = (await c.request("config.schema"))["payload"]
    assert {"gateway", "agents", "channels", "models"} <= set(whole["schema"]["properties"])
    assert whole["version"] and whole["generatedAt"].endswith("Z")
    port = (await c.request("config.schema.lookup", {"path": "gateway.port"}))["payload"]
    assert port["schema"]["type"] == "integer" and port["reloadKind"] == "restart"
    gateway = (await c.request("config.schema.lookup", {"path": "gateway"}))["payload"]
    assert {"port", "bind", "auth"} <= {child["key"] for child in gateway["children"]}
    auth = next(ch for ch in gateway["children"] if ch["key"] == "auth")
    assert auth["hasChildren"] is True and auth["path"] == "gateway.auth"
    # a map's entries: any plugin id under plugins.entries
    assert (await c.request("config.schema.lookup", {"path": "plugins.entries.memory-core.config"}))["ok"]
    missing = await c.request("config.schema.lookup", {"path": "gateway.nope"})
    assert missing["error"]["message"] == "config schema path not found"


async def test_sessions_usage_lists_each_sessions_cost(gw: RunningGateway) -> None:
    ledger = UsageLedger(ledger_path(gw.paths.state_dir))
    now = int(time.time() * 1000)
    big = ModelTally(2, Usage(5000, 500, 0, 0, 5500, Cost(total=0.5)))
    small = ModelTally(1, Usage(100, 10, 0, 0, 110, Cost(total=0.01)))
    ledger.record(RunUsage(now, "main", "agent:main:main", "", {("openai", "gpt"): big}))
    ledger.record(RunUsage(now, "main", "agent:main:telegram:direct:1", "telegram", {("openai", "gpt"): small}))
    ledger.close()
    c = await _client(gw)
    usage = (await c.request("sessions.usage", {"range": "7d", "groupBy": "family", "limit": 10}))["payload"]
    assert [s["key"] for s in usage["sessions"]] == ["agent:main:main", "agent:main:telegram:direct:1"]
    assert usage["sessions"][1]["channel"] == "telegram" and usage["sessions"][0]["usage"]["totalTokens"] == 5500
    assert usage["totals"]["totalTokens"] == 5610 and usage["aggregates"]["sessionCount"] == 2
    one = (await c.request("sessions.usage", {"key": "agent:main:main"}))["payload"]
    assert len(one["sessions"]) == 1


async def test_lanes_system_info_and_the_empty_answers(gw: RunningGateway) -> None:
    c = await _client(gw)
    lanes = (await c.request("diagnostics.lanes"))["payload"]
    assert lanes["ts"] > 0 and isinstance(lanes["lanes"], list)
    info = (await c.request("system.info"))["payload"]
    assert info["memoryTotalBytes"] > info["memoryFreeBytes"] > 0 and info["diskTotalBytes"] > 0
    assert info["processMemory"]["rssBytes"] > 0 and "delayP99Ms" in info["eventLoop"]
    assert (await c.request("worktrees.list"))["payload"] == {"worktrees": []}
    assert (await c.request("skills.library.list", {"scope": "all"}))["payload"]["entries"] == []
    assert (await c.request("themes.list"))["payload"]["current"]["id"] == "claw"
    refused = await c.request("artifacts.list", {})
    assert refused["error"]["message"] == "artifacts require one of sessionKey, runId, or taskId"
    assert (await c.request("artifacts.list", {"sessionKey": "main"}))["payload"] == {"artifacts": []}
    search = (await c.request("webSearch.status", {"agentId": "main"}))["payload"]
    assert search["enabled"] is False and search["route"]["kind"] == "unavailable"
