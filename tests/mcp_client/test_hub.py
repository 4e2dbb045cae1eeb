"""The MCP hub without a gateway: a server's tool list follows its ``tools/list_changed``
notifications, progress reaches the tool's update callback, a name already taken is refused and
reported, the per-agent selection hides a server's tools, and stop removes them."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from homarus.config.mcp import McpConfig
from homarus.mcp.connection import McpUnavailable
from homarus.mcp.hub import McpHub
from homarus.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

DEMO = str(Path(__file__).with_name("demo_server.py"))


def _hub(tmp_path: Path, registry: ToolRegistry, **server: Any) -> McpHub:
    cfg = McpConfig.model_validate(
        {"servers": {"demo": {"command": sys.executable, "args": [DEMO, "stdio"], **server}}}
    )
    return McpHub(cfg, registry, log_dir=tmp_path / "logs")


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return ToolResult.text("mine")


async def test_list_changed_progress_collisions_and_stop(tmp_path: Path) -> None:
    registry = ToolRegistry()
    registry.register(Tool("demo__echo", "a plugin's tool that happens to have the name", {"type": "object"}, _noop))
    hub = _hub(tmp_path, registry, agents=["main"])
    try:
        assert await hub.prepare("other") == set()  # not its server: nothing started for it
        assert hub.connections["demo"].state == "stopped"
        assert await hub.prepare("main") == set()
        status = hub.status()["servers"][0]
        assert status["state"] == "ready" and "demo__echo" not in status["tools"]
        assert status["refused"] == ["echo (as demo__echo: the name is taken)"]
        assert registry.get("demo__echo").description.startswith("a plugin's tool")  # type: ignore[union-attr]
        assert "demo__steps" in registry.names() and "demo__added" not in registry.names()
        assert await hub.prepare("other") == set(hub.status()["servers"][0]["tools"])  # hidden from other agents

        updates: list[Any] = []
        ctx = ToolContext("k", "main", "r", "c", tmp_path, on_update=updates.append)
        steps = registry.get("demo__steps")
        assert steps is not None
        result = await steps.execute(ctx, {"count": 3})
        assert "3 steps" in result.content[0].text  # type: ignore[union-attr]
        assert [u["progress"] for u in updates] == [1, 2, 3] and updates[-1]["message"] == "step 3"

        grow = registry.get("demo__grow")
        assert grow is not None
        await grow.execute(ctx, {})
        for _ in range(100):
            if "demo__added" in registry.names():
                break
            await asyncio.sleep(0.05)
        added = registry.get("demo__added")
        assert added is not None
        assert "I was added" in (await added.execute(ctx, {})).content[0].text  # type: ignore[union-attr]
    finally:
        await hub.stop()
    assert [n for n in registry.names() if n.startswith("demo__")] == ["demo__echo"]  # only the plugin's is left


async def test_a_server_that_cannot_start_fails_alone(tmp_path: Path) -> None:
    registry = ToolRegistry()
    cfg = McpConfig.model_validate({"servers": {"gone": {"command": "/nonexistent/server", "timeoutMs": 2000}}})
    hub = McpHub(cfg, registry, log_dir=tmp_path / "logs")
    try:
        assert await hub.prepare("main") == set()
        row = hub.status()["servers"][0]
        assert row["state"] == "failed" and row["lastError"] and row["tools"] == []
    finally:
        await hub.stop()


def test_config_is_checked() -> None:
    import pytest
    from pydantic import ValidationError

    bad = [
        {"x": {}},
        {"x": {"command": "a", "url": "http://b"}},
        {"x": {"url": "ftp://b"}},
        {"x": {"command": "a", "transport": "http"}},
        {"a__b": {"command": "a"}},
        {"bad name": {"command": "a"}},
    ]
    for servers in bad:
        with pytest.raises(ValidationError):
            McpConfig.model_validate({"servers": servers})


async def test_calls_arriving_while_a_crashed_server_restarts_wait_for_it(tmp_path: Path) -> None:
    """The crash call fails ("went away"); calls made right after it, before the runner has even
    noticed the crash (nothing yields in between), wait for the restart within their timeout and
    are answered by the new server, never by the dead one."""
    registry = ToolRegistry()
    hub = _hub(tmp_path, registry)
    try:
        await hub.prepare("main")
        connection = hub.connections["demo"]
        ctx = ToolContext("k", "main", "r", "c", tmp_path)
        crash, echo = registry.get("demo__crash"), registry.get("demo__echo")
        assert crash is not None and echo is not None
        for round_ in range(3):
            with pytest.raises(McpUnavailable, match="went away"):
                await crash.execute(ctx, {})
            answers = await asyncio.gather(*(echo.execute(ctx, {"text": f"{round_}-{i}"}) for i in range(3)))
            for i, answer in enumerate(answers):
                assert not answer.is_error, answer.content
                assert f"echo: {round_}-{i}" in answer.content[0].text  # type: ignore[union-attr]
        assert connection.restarts == 3 and connection.state == "ready"
    finally:
        await hub.stop()
