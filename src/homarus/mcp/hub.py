"""Every configured MCP server, and their tools in the gateway's tool registry.

A server's tools join the registry when it has listed them and leave it when it stops or dies;
a ``tools/list_changed`` notification replaces them. A tool name that is taken (a built-in, a
plugin's, another server's) is not registered and is reported in :meth:`McpHub.status`.
``prepare`` runs before an agent run lists its tools: it starts the lazy servers that agent may
use (concurrently, each within its ``timeoutMs``) and names the tools that agent must not see.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.errors import RegistrationError
from homarus.mcp.connection import McpConnection, McpUnavailable
from homarus.mcp.tools import as_tool, tool_name

if TYPE_CHECKING:
    from homarus.config.mcp import McpConfig, McpServerConfig
    from homarus.tools.base import ToolRegistry

__all__ = ["McpHub"]

log = logging.getLogger("homarus.mcp")


class McpHub:
    def __init__(self, cfg: McpConfig, registry: ToolRegistry, *, log_dir: Path) -> None:
        self.registry = registry
        self._log_dir = log_dir
        self.connections = {name: self._connection(name, server) for name, server in cfg.enabled().items()}
        #: registered tool name -> server name
        self._owned: dict[str, str] = {}
        self.collisions: dict[str, list[str]] = {}

    async def start_eager(self) -> None:
        eager = [c for c in self.connections.values() if c.cfg.startup == "eager"]
        await asyncio.gather(*(self._try_start(c) for c in eager))

    async def prepare(self, agent_id: str) -> set[str]:
        """Start the servers ``agent_id`` may use; the MCP tool names it must not see."""
        mine = [c for c in self.connections.values() if c.cfg.agents is None or agent_id in c.cfg.agents]
        await asyncio.gather(*(self._try_start(c) for c in mine if c.state in ("stopped", "starting")))
        allowed = {c.name for c in mine}
        return {name for name, server in self._owned.items() if server not in allowed}

    async def _try_start(self, conn: McpConnection) -> None:
        try:
            await conn.start()
        except McpUnavailable as exc:  # its own calls fail with this; the run goes on without them
            log.warning("%s", exc)

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))

    async def reconcile(self, cfg: McpConfig) -> None:
        """Follow a config change: removed or disabled servers stop (their tools go), changed ones
        restart with their new settings, new ones join (eager ones start now)."""
        wanted = cfg.enabled()
        gone = [c for name, c in self.connections.items() if wanted.get(name) != c.cfg]
        await asyncio.gather(*(c.stop() for c in gone))
        for conn in gone:
            del self.connections[conn.name]
        fresh = [self._connection(name, s) for name, s in wanted.items() if name not in self.connections]
        for conn in fresh:
            self.connections[conn.name] = conn
        await asyncio.gather(*(self._try_start(c) for c in fresh if c.cfg.startup == "eager"))

    def _connection(self, name: str, server: McpServerConfig) -> McpConnection:
        return McpConnection(name, server, log_dir=self._log_dir, on_tools=self._tools_changed)

    def _tools_changed(self, conn: McpConnection) -> None:
        for name in [n for n, server in self._owned.items() if server == conn.name]:
            self.registry.unregister(name)
            del self._owned[name]
        refused: list[str] = []
        for spec in conn.tools:
            name = tool_name(conn.name, spec.name)
            try:
                self.registry.register(as_tool(conn, spec, name))
            except RegistrationError:
                refused.append(f"{spec.name} (as {name}: the name is taken)")
                continue
            self._owned[name] = conn.name
        if refused:
            log.warning("MCP server %s: tools not registered: %s", conn.name, ", ".join(refused))
        self.collisions[conn.name] = refused

    def status(self) -> dict[str, Any]:
        servers = []
        for conn in self.connections.values():
            row = conn.status()
            row["tools"] = sorted(n for n, s in self._owned.items() if s == conn.name)
            row["refused"] = self.collisions.get(conn.name, [])
            servers.append(row)
        return {"servers": servers}
