"""`mcp.status`: the configured MCP servers, their state, tools and last error (never their env
or headers: those are secrets)."""

from __future__ import annotations

from typing import Any

from homarus.gateway.router import EmptyParams, MethodCall

__all__: list[str] = []


async def mcp_status(call: MethodCall, p: EmptyParams) -> dict[str, Any]:
    gw = call.gateway
    if not gw.config.present("mcp"):
        return {"servers": []}
    return gw.mcp.status()
