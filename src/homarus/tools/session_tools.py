"""Tools that look at sessions: ``sessions_list`` and ``sessions_history`` (read-only)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from homarus.errors import Forbidden, InvalidRequest
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function

__all__ = ["session_tools"]

MAX_HISTORY_CHARS = 20_000


def _sessions(ctx: ToolContext) -> Any:
    mgr = ctx.services.sessions
    if mgr is None:
        raise InvalidRequest("sessions are not available to tools in this context")
    return mgr


async def sessions_list(ctx: ToolContext, limit: int = 20, active_minutes: int | None = None) -> ToolResult:
    """List recent sessions of this agent (key, label, status, last update), newest first."""
    mgr = _sessions(ctx)
    limit = max(1, min(limit, 200))

    def collect() -> list[dict[str, Any]]:
        now = int(time.time() * 1000)
        rows = []
        for _agent, key, entry in mgr.all_entries(ctx.agent_id):
            if not ctx.trusted and key != ctx.session_key:
                continue  # a non-owner's run sees its own session only
            if active_minutes and now - entry.updated_at > active_minutes * 60_000:
                continue
            rows.append(
                {
                    "key": key,
                    "label": entry.label,
                    "status": entry.status,
                    "updatedAt": entry.updated_at,
                    "totalTokens": entry.total_tokens,
                }
            )
            if len(rows) >= limit:
                break
        return rows

    rows = await asyncio.to_thread(collect)
    lines = [
        f"{r['key']}" + (f" [{r['label']}]" if r["label"] else "") + (f" {r['status']}" if r["status"] else "")
        for r in rows
    ]
    return ToolResult.text("\n".join(lines) if lines else "no sessions", details={"sessions": rows})


async def sessions_history(ctx: ToolContext, session_key: str, limit: int = 20) -> ToolResult:
    """The last messages of a session of this agent, as role: text lines."""
    mgr = _sessions(ctx)
    key = mgr.resolve_key(session_key, ctx.agent_id)
    if not ctx.trusted and key.canonical != ctx.session_key:
        raise Forbidden("a run sent by someone other than the owner may read only its own session")

    def read() -> list[dict[str, Any]]:
        ref = mgr.require(key)
        entries = mgr.transcript_for(ref).read().entries
        messages = [e["message"] for e in entries if e.get("type") == "message" and isinstance(e.get("message"), dict)]
        return [{"role": m.get("role"), "text": _text(m)} for m in messages[-max(1, min(limit, 200)) :]]

    items = await asyncio.to_thread(read)
    text = "\n".join(f"{i['role']}: {i['text']}" for i in items)
    if len(text) > MAX_HISTORY_CHARS:
        text = text[-MAX_HISTORY_CHARS:]
    return ToolResult.text(
        text or "(no messages)",
        details={"sessionKey": key.canonical, "count": len(items), "json": json.dumps(items)[:2000]},
    )


def session_tools() -> list[Tool]:
    return [
        tool_from_function(sessions_list, summary="List sessions", deferred=True),
        tool_from_function(sessions_history, summary="Read a session's messages", deferred=True),
    ]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""
