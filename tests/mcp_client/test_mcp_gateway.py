"""MCP servers as tools through a real gateway: a third-party server from PyPI (mcp-server-time)
and the SDK-written demo server over stdio and streamable HTTP; the tool calls go through the same
policy, hooks and audit trail as built-in tools; a crashing, hanging or failing server fails only
its own calls; private addresses are refused unless allowed; mcp.status never shows secrets."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from homarus.plugins.runner import HookRegistration
from homarus.providers.scripted import Reply, ScriptedProvider
from homarus.sessions.store import SessionStore
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.mcp_client.remote import serve_demo
from tests.wsclient import Client, open_client

DEMO = str(Path(__file__).with_name("demo_server.py"))
BASE: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
}


def _config(servers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**BASE, "mcp": {"servers": servers}, **extra}


async def _run(gw: RunningGateway, calls: list[tuple[str, dict[str, Any]]], run_id: str) -> list[dict[str, Any]]:
    """One agent turn whose model makes ``calls``; the audit records of the run."""
    gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("", tool_calls=calls), Reply("done")])
    client = await _client(gw)
    assert (await client.request("agent", {"message": "go", "idempotencyKey": run_id}))["ok"]
    waited = await client.request("agent.wait", {"runId": run_id, "timeoutMs": 60_000}, timeout=70)
    assert waited["payload"]["status"] == "ok", waited
    records: list[dict[str, Any]] = (await client.request("logs.tail", {"runId": run_id}))["payload"]["records"]
    return records


async def _client(gw: RunningGateway) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN, ["operator.admin"]))["ok"]
    return client


def _results(gw: RunningGateway) -> dict[str, dict[str, Any]]:
    sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
    entry = SessionStore(sessions).read()["agent:main:main"]
    rows = [json.loads(line) for line in (sessions / f"{entry['sessionId']}.jsonl").read_text().splitlines()]
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        message = row.get("message") or {}
        if message.get("role") == "toolResult":
            out[message["toolName"]] = message
    return out


def _text(result: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in result["content"] if b.get("type") == "text")


async def test_a_registry_server_and_the_sdk_server_as_tools(tmp_path: Path) -> None:
    servers = {
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "demo": {"command": sys.executable, "args": [DEMO, "stdio"], "env": {"DEMO_TOKEN": "s3cret-value"}},
    }
    seen: list[str] = []
    with run_gateway(tmp_path, config=_config(servers)) as gw:

        def hook(event: Any, ctx: Any) -> None:
            seen.append(event.tool_name)

        gw.call_soon(lambda: gw.gateway.hooks.add(HookRegistration("watch", "before_tool_call", hook)))
        calls = [
            ("time__get_current_time", {"timezone": "Europe/Paris"}),
            ("demo__echo", {"text": "lobster"}),
            ("demo__fail", {}),
        ]
        records = await _run(gw, calls, "mcp-1")
        results = _results(gw)
        paris = _text(results["time__get_current_time"])
        assert "Europe/Paris" in paris and "EXTERNAL_UNTRUSTED_CONTENT" in paris  # marked as untrusted
        assert "echo: lobster" in _text(results["demo__echo"])
        assert results["demo__fail"]["isError"] is True
        assert seen == ["time__get_current_time", "demo__echo", "demo__fail"]  # each hook fires once
        audited = {r["tool"]: r for r in records if r["type"] == "tool.call"}
        assert audited["demo__echo"]["decision"] == "allowed" and audited["demo__echo"]["args"] == {"text": "lobster"}
        assert audited["demo__fail"]["status"] == "error"
        status = (await (await _client(gw)).request("mcp.status", {}))["payload"]
        rows = {s["name"]: s for s in status["servers"]}
        assert rows["time"]["state"] == "ready" and "time__convert_time" in rows["time"]["tools"]
        assert rows["demo"]["transport"] == "stdio" and "s3cret-value" not in json.dumps(status)


async def test_policy_groups_and_a_crash_and_a_hang(tmp_path: Path) -> None:
    servers = {"demo": {"command": sys.executable, "args": [DEMO, "stdio"], "timeoutMs": 3000}}
    config = _config(servers, tools={"deny": ["demo__slow"]})
    with run_gateway(tmp_path, config=config) as gw:
        records = await _run(gw, [("demo__crash", {}), ("demo__slow", {"seconds": 1})], "mcp-2")
        results = _results(gw)
        assert "went away" in _text(results["demo__crash"]) and results["demo__crash"]["isError"] is True
        audited = {r["tool"]: r for r in records if r["type"] == "tool.call"}
        assert audited["demo__slow"]["decision"] == "blocked:policy"
        # the crashed server is restarted for the next call
        await _run(gw, [("demo__echo", {"text": "back"})], "mcp-3")
        assert "echo: back" in _text(_results(gw)["demo__echo"])
    config = _config({"demo": {**servers["demo"], "timeoutMs": 1000}}, tools={"deny": ["group:mcp"]})
    with run_gateway(tmp_path / "hang", config=_config({"demo": {**servers["demo"], "timeoutMs": 1000}})) as gw:
        await _run(gw, [("demo__slow", {"seconds": 5})], "mcp-4")
        assert "did not answer" in _text(_results(gw)["demo__slow"])
    with run_gateway(tmp_path / "deny", config=config) as gw:
        records = await _run(gw, [("demo__echo", {"text": "x"})], "mcp-5")
        assert {r["tool"]: r for r in records if r["type"] == "tool.call"}["demo__echo"]["decision"] == "blocked:policy"


@pytest.fixture
def http_server() -> Iterator[str]:
    with serve_demo("http") as url:
        yield url


async def test_streamable_http_and_private_addresses(tmp_path: Path, http_server: str) -> None:
    servers = {
        "remote": {"url": http_server, "allowPrivateNetwork": True, "headers": {"Authorization": "Bearer hdr-secret"}},
        "blocked": {"url": http_server, "timeoutMs": 2000},
    }
    with run_gateway(tmp_path, config=_config(servers)) as gw:
        await _run(gw, [("remote__steps", {"count": 3}), ("remote__echo", {"text": "over http"})], "mcp-6")
        results = _results(gw)
        assert "3 steps" in _text(results["remote__steps"]) and "echo: over http" in _text(results["remote__echo"])
        status = (await (await _client(gw)).request("mcp.status", {}))["payload"]
        rows = {s["name"]: s for s in status["servers"]}
        assert rows["remote"]["transport"] == "http" and rows["remote"]["state"] == "ready"
        assert rows["blocked"]["state"] == "failed" and "Blocked" in (rows["blocked"]["lastError"] or "")
        assert rows["blocked"]["tools"] == [] and "hdr-secret" not in json.dumps(status)


async def test_servers_follow_config_changes(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=BASE) as gw:  # no mcp section at start: nothing of it loaded
        client = await _client(gw)
        assert (await client.request("mcp.status", {}))["payload"] == {"servers": []}
        got = (await client.request("config.get", {}))["payload"]
        added = {"mcp": {"servers": {"demo": {"command": sys.executable, "args": [DEMO, "stdio"]}}}}
        res = await client.request("config.patch", {"raw": json.dumps(added), "baseHash": got["hash"]})
        assert res["ok"], res
        await _run(gw, [("demo__echo", {"text": "hot"})], "mcp-7")
        assert "echo: hot" in _text(_results(gw)["demo__echo"])
        got = (await client.request("config.get", {}))["payload"]
        disabled = {"mcp": {"servers": {"demo": {"enabled": False}}}}
        res = await client.request("config.patch", {"raw": json.dumps(disabled), "baseHash": got["hash"]})
        assert res["ok"], res
        for _ in range(100):
            if not (await client.request("mcp.status", {}))["payload"]["servers"]:
                break
            await asyncio.sleep(0.05)
        assert (await client.request("mcp.status", {}))["payload"] == {"servers": []}
        records = await _run(gw, [("demo__echo", {"text": "gone"})], "mcp-8")
        assert {r["tool"]: r for r in records if r["type"] == "tool.call"}["demo__echo"]["decision"] == "blocked:policy"


async def test_a_lazy_server_is_listed_and_callable_from_every_surface(tmp_path: Path) -> None:
    """(issue: a lazy server was started only by an agent turn, so tools.catalog did not list its
    tools and /tools/invoke answered 404) Each surface starts it on its own first need."""
    servers = {"demo": {"command": sys.executable, "args": [DEMO, "stdio"]}}
    with run_gateway(tmp_path, config=_config(servers)) as gw:
        client = await _client(gw)
        catalog = (await client.request("tools.catalog", {"includePlugins": True}))["payload"]
        names = {t["id"] for g in catalog["groups"] for t in g["tools"]}
        assert "demo__echo" in names, names
        effective = (await client.request("tools.effective", {"sessionKey": "main"}))["payload"]
        assert "demo__echo" in {t["id"] for g in effective["groups"] for t in g["tools"]}
    with run_gateway(tmp_path / "http", config=_config(servers)) as gw:  # a fresh gateway: HTTP first
        import httpx

        async with httpx.AsyncClient(timeout=30) as http:
            res = await http.post(
                f"{gw.http}/tools/invoke",
                json={"tool": "demo__echo", "args": {"text": "over http"}},
                headers={"Authorization": f"Bearer {TEST_TOKEN}"},
            )
        assert res.status_code == 200, res.text
        assert "echo: over http" in json.dumps(res.json())
