"""`tools.catalog` and `tools.effective` over a real socket, with policy from the config."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN))["ok"]
    return c


async def test_catalog_groups_and_profiles(gw: RunningGateway) -> None:
    c = await _client(gw)
    res = (await c.request("tools.catalog"))["payload"]
    assert [p["id"] for p in res["profiles"]] == ["minimal", "coding", "messaging", "full"]
    groups = {g["id"]: g for g in res["groups"]}
    fs = {t["id"]: t for t in groups["group:fs"]["tools"]}
    assert set(fs) == {"read", "write", "edit", "apply_patch", "ls", "find", "grep"}
    assert "coding" in fs["read"]["defaultProfiles"] and "minimal" not in fs["read"]["defaultProfiles"]
    assert (await c.request("tools.catalog", {"agentId": "ghost"}))["error"]["message"] == 'unknown agent id "ghost"'


async def test_effective_explains_what_is_missing(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        c = await _client(gw)
        main = (await c.request("tools.effective", {"sessionKey": "main"}))["payload"]
        names = {t["id"] for g in main["groups"] for t in g["tools"]}
        assert {"read", "sessions_list", "current_time"} <= names and main["missing"] == []
        sub = (await c.request("tools.effective", {"sessionKey": "agent:main:main:subagent:abc"}))["payload"]
        missing = {m["id"]: m["reason"] for m in sub["missing"]}
        assert missing["session_status"] == "subagent denies it"
        assert missing["sessions_list"] == "subagent denies it"  # a default sub-agent is a leaf
        bad = await c.request("tools.effective", {"sessionKey": "agent:"})
        assert bad["error"]["message"].startswith("malformed session key")
