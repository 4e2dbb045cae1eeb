"""Remote MCP servers: ``transport: auto`` falls back to SSE for a server that speaks only that;
every connection is checked at connect time and goes to the address that was checked, so a name
that resolves to a public address for the first check and to a private one later (DNS rebinding)
reaches nothing."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from homarus.config.mcp import McpConfig
from homarus.mcp.egress import GuardedBackend
from homarus.mcp.hub import McpHub
from homarus.security.ssrf_rules import SsrfPolicy
from homarus.tools.base import ToolContext, ToolRegistry
from tests.mcp_client.remote import serve_demo


def _hub(tmp_path: Path, servers: dict[str, Any]) -> tuple[McpHub, ToolRegistry]:
    registry = ToolRegistry()
    return McpHub(McpConfig.model_validate({"servers": servers}), registry, log_dir=tmp_path / "logs"), registry


async def test_auto_falls_back_to_sse(tmp_path: Path) -> None:
    with serve_demo("sse") as url:
        hub, registry = _hub(tmp_path, {"old": {"url": url, "allowPrivateNetwork": True, "timeoutMs": 10_000}})
        try:
            await hub.prepare("main")
            row = hub.status()["servers"][0]
            assert row["state"] == "ready" and row["transport"] == "sse", row
            echo = registry.get("old__echo")
            assert echo is not None
            result = await echo.execute(ToolContext("k", "main", "r", "c", tmp_path), {"text": "over sse"})
            assert "echo: over sse" in result.content[0].text  # type: ignore[union-attr]
            assert hub.connections["old"].egress is not None
            assert hub.connections["old"].egress.connected[-1] == ("127.0.0.1", "127.0.0.1")
        finally:
            await hub.stop()


async def test_a_server_speaking_neither_says_both(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # accepts, then closes: no HTTP at all
    port = listener.getsockname()[1]
    listener.close()
    url = f"http://127.0.0.1:{port}/mcp"
    hub, _ = _hub(tmp_path, {"none": {"url": url, "allowPrivateNetwork": True, "timeoutMs": 3000}})
    try:
        await hub.prepare("main")
        row = hub.status()["servers"][0]
        assert row["state"] == "failed"
        assert "streamable HTTP:" in row["lastError"] and "SSE:" in row["lastError"], row["lastError"]
    finally:
        await hub.stop()


async def test_a_rebinding_name_reaches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first answer (for the config check) is public; the one at connect time is loopback."""
    with serve_demo("http") as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        public = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 0))]
        monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: public)
        loop = asyncio.get_running_loop()

        async def rebound(host: str, *args: Any, **kwargs: Any) -> list[Any]:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

        monkeypatch.setattr(loop, "getaddrinfo", rebound)
        hub, registry = _hub(tmp_path, {"tricky": {"url": f"http://rebind.example:{port}/mcp", "timeoutMs": 3000}})
        try:
            await hub.prepare("main")
            row = hub.status()["servers"][0]
            assert row["state"] == "failed" and "Blocked" in row["lastError"], row
            assert hub.connections["tricky"].egress is not None and hub.connections["tricky"].egress.connected == []
            assert [n for n in registry.names() if n.startswith("tricky__")] == []
        finally:
            await hub.stop()


async def test_the_backend_refuses_private_names_and_unix_sockets() -> None:
    strict = GuardedBackend(SsrfPolicy())
    with pytest.raises(Exception, match="Blocked"):
        await strict.connect_tcp("localhost", 80)
    with pytest.raises(Exception, match="Blocked"):
        await strict.connect_tcp("169.254.169.254", 80)
    with pytest.raises(Exception, match="unix sockets"):
        await strict.connect_unix_socket("/run/docker.sock")
    lenient = GuardedBackend(SsrfPolicy(allow_private_network=True))
    with pytest.raises(Exception, match="Blocked"):
        await lenient.connect_tcp("169.254.169.254", 80)  # cloud metadata stays refused
