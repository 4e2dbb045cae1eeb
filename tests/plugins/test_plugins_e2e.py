"""Plugins end to end through a real gateway: the example audit-log plugin and an installed package."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

REPO = Path(__file__).resolve().parents[2]
MODELS: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}}},
}

PACKAGE_PLUGIN = '''
"""A plugin installed as a package: a gateway method, a chat command, a tool and a hook."""

from homarus.tools.base import ToolResult

manifest = {"id": "greeter", "configSchema": {"type": "object", "properties": {"greeting": {"type": "string"}}},
            "contracts": {"tools": ["greet"]}}


def register(api):
    greeting = api.plugin_config.get("greeting", "Hello")

    async def greet(ctx, name: str) -> ToolResult:
        """Greet someone by name."""
        return ToolResult.text(f"{greeting}, {name}!")

    api.register_tool(greet)
    async def hello(params, ctx):
        return {"hello": params.get("name")}

    api.register_gateway_method("greeter.hello", hello, scope="operator.read")
    api.register_command("greet", lambda args, ctx: f"{greeting}, {args or 'world'}!", description="say hi")
    api.on("llm_output", lambda event, ctx: None)
'''


def _install_package(site: Path) -> None:
    """A real installed distribution (dist-info + entry point) that importlib.metadata discovers."""
    (site / "greeter_plugin.py").write_text(PACKAGE_PLUGIN)
    dist = site / "greeter_plugin-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: greeter-plugin\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[homarus.plugins]\ngreeter = greeter_plugin\n")


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN, caps=["tool-events"]))["ok"]
    return c


async def test_installed_package_plugin_works_through_the_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_package(site)
    monkeypatch.syspath_prepend(str(site))
    config = {
        **MODELS,
        "plugins": {
            "entries": {"greeter": {"config": {"greeting": "Ahoy"}, "hooks": {"allowConversationAccess": True}}}
        },
    }
    try:
        with run_gateway(tmp_path, config=config) as gw:
            records = gw.gateway.plugins.records
            assert records["greeter"].status == "loaded", [str(d) for d in gw.gateway.plugins.diagnostics]
            assert not [d for d in gw.gateway.plugins.diagnostics if d.plugin_id == "greeter"]
            gw.gateway.models.overrides["test"] = ScriptedProvider(
                [Reply("", tool_calls=[("greet", {"name": "Ada"})]), Reply("done")]
            )
            c = await _client(gw)
            assert (await c.request("greeter.hello", {"name": "Bo"}))["payload"] == {"hello": "Bo"}
            command = await c.request("agent", {"message": "/greet Cy", "idempotencyKey": "cmd"})
            assert command["payload"]["result"]["payloads"] == [{"text": "Ahoy, Cy!"}]
            await c.send(
                {
                    "type": "req",
                    "id": "t",
                    "method": "agent",
                    "params": {"message": "greet ada", "idempotencyKey": "t1"},
                }
            )
            assert (await c.response("t"))["payload"]["status"] == "accepted"
            assert (await c.response("t", timeout=15))["ok"]
            results = [
                e["payload"]["data"]
                for e in c.events
                if e["event"] == "agent"
                and e["payload"]["stream"] == "tool"
                and e["payload"]["data"]["phase"] == "result"
            ]
            assert results[0]["result"] == "Ahoy, Ada!"
    finally:
        sys.modules.pop("greeter_plugin", None)


async def test_example_audit_log_plugin_logs_and_blocks(tmp_path: Path) -> None:
    log_path = tmp_path / "audit.jsonl"
    config = {
        **MODELS,
        "plugins": {
            "load": {"paths": [str(REPO / "examples" / "plugins")]},
            "entries": {"audit-log": {"config": {"path": str(log_path), "blockTools": ["session_status"]}}},
        },
    }
    with run_gateway(tmp_path, config=config) as gw:
        records = gw.gateway.plugins.records
        assert records["audit-log"].status == "loaded", [str(d) for d in gw.gateway.plugins.diagnostics]
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[("current_time", {}), ("session_status", {})]), Reply("ok")]
        )
        c = await _client(gw)
        await c.send({"type": "req", "id": "a", "method": "agent", "params": {"message": "go", "idempotencyKey": "a1"}})
        await c.response("a")
        assert (await c.response("a", timeout=15))["ok"]
        async with httpx.AsyncClient(base_url=gw.http) as http:
            res = await http.post(
                "/tools/invoke", headers={"Authorization": f"Bearer {TEST_TOKEN}"}, json={"tool": "current_time"}
            )
            assert res.status_code == 200
        import asyncio

        for _ in range(100):
            lines = [json.loads(x) for x in log_path.read_text().splitlines()] if log_path.exists() else []
            if len([x for x in lines if x["phase"] == "after"]) >= 3:
                break
            await asyncio.sleep(0.02)
        befores = [x for x in lines if x["phase"] == "before"]
        assert [x["tool"] for x in befores] == ["current_time", "session_status", "current_time"]
        assert [x["blocked"] for x in befores] == [False, True, False]
        assert log_path.stat().st_mode & 0o777 == 0o600


async def test_broken_plugins_are_diagnosed_and_the_gateway_serves(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    for pid, body in (
        ("raises-at-import", "raise RuntimeError('import boom')\n"),
        ("raises-at-register", "def register(api):\n    raise ValueError('register boom')\n"),
        ("fine", "def register(api):\n    api.on('llm_output', lambda e, c: None)\n"),
    ):
        d = plugins / pid
        d.mkdir(parents=True)
        (d / "homarus.plugin.json").write_text(json.dumps({"id": pid, "configSchema": {"type": "object"}}))
        (d / "plugin.py").write_text(body)
    config = {**MODELS, "plugins": {"load": {"paths": [str(plugins)]}}}
    with run_gateway(tmp_path, config=config) as gw:
        records = {pid: r.status for pid, r in gw.gateway.plugins.records.items()}
        assert records["raises-at-import"] == "error" and records["raises-at-register"] == "error"
        assert records["fine"] == "loaded"
        c = await _client(gw)
        listed = await c.request("plugins.list")
        assert listed["ok"], listed
        ids = {p["id"]: p for p in listed["payload"]["plugins"]}
        assert ids["raises-at-register"]["status"] == "error"
        assert any("register boom" in d["message"] for d in listed["payload"]["diagnostics"])
        assert (await c.request("health"))["ok"]
