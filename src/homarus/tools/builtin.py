"""Harmless built-in tools that exist in every install: ``current_time`` and ``session_status``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from homarus import __version__
from homarus.tools.base import Tool, ToolContext, ToolRegistry, ToolResult, tool_from_function

if TYPE_CHECKING:
    from homarus.plugins.api import PluginApi

__all__ = ["builtin_tools", "manifest", "register", "register_builtins"]

#: the bundled plugin record of these tools (``homarus plugins list`` shows it as ``builtin-tools``)
manifest: dict[str, Any] = {
    "id": "builtin-tools",
    "name": "Built-in tools",
    "version": __version__,
    "description": "Harmless tools present in every install: current_time, session_status.",
    "configSchema": {"type": "object", "additionalProperties": False},
    "contracts": {"tools": ["current_time", "session_status"]},
}


async def current_time(ctx: ToolContext, timezone: str | None = None) -> ToolResult:
    """Current date and time in an IANA timezone such as Europe/Paris (default UTC)."""
    try:
        tz = ZoneInfo(timezone) if timezone else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return ToolResult.text(f"Unknown timezone {timezone!r}; use an IANA name such as Europe/Paris.", is_error=True)
    now = datetime.now(tz)
    return ToolResult.text(now.strftime("%A %Y-%m-%d %H:%M:%S %Z (UTC%z)"), details={"iso": now.isoformat()})


async def session_status(ctx: ToolContext) -> ToolResult:
    """This session's key, model, token counts, compactions and start time."""
    sessions = ctx.services.sessions
    info: dict[str, Any] = {"sessionKey": ctx.session_key, "agentId": ctx.agent_id, "runId": ctx.run_id}
    if sessions is not None:
        ref = sessions.get(sessions.resolve_key(ctx.session_key))
        if ref is not None:
            entry = ref.entry
            info.update(
                sessionId=entry.session_id,
                model=entry.model_override or entry.model,
                inputTokens=entry.input_tokens,
                outputTokens=entry.output_tokens,
                totalTokens=entry.total_tokens,
                compactions=entry.compaction_count or 0,
                createdAt=entry.created_at,
                label=entry.label,
            )
    lines = [f"{k}: {v}" for k, v in info.items() if v is not None]
    return ToolResult.text("\n".join(lines), details=info)


#: ``current_time``'s schema, written out: it is offered on every turn, and deriving it cost the
#: first turn after a start a pydantic model (compared with the derived one in the tests)
CURRENT_TIME_PARAMETERS: dict[str, Any] = {"properties": {"timezone": {"type": "string"}}, "type": "object"}


def builtin_tools() -> list[Tool]:
    return [
        tool_from_function(current_time, summary="Current date and time", parameters=CURRENT_TIME_PARAMETERS),
        tool_from_function(session_status, summary="This session's status and token use", deferred=True),
    ]


def register_builtins(registry: ToolRegistry) -> None:
    for tool in builtin_tools():
        registry.register(tool)


def register(api: PluginApi) -> None:
    """Bundled-plugin entry: the built-in tools go through the same registry as plugins' tools."""
    for tool in builtin_tools():
        api.register_tool(tool)
