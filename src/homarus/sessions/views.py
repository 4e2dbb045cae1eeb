"""Read-side views of sessions: list rows, message previews, history for clients."""

from __future__ import annotations

from typing import Any

from homarus.sessions.entry import SessionEntry
from homarus.sessions.keys import SessionKey

__all__ = ["message_text", "preview_items", "session_row", "visible_messages"]


def message_text(message: dict[str, Any]) -> str:
    """The plain text of a transcript message (text blocks joined; tool calls named)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") == "toolCall":
                parts.append(f"[tool call: {block.get('name')}]")
            elif block.get("type") == "image":
                parts.append("[image]")
    return "\n".join(parts)


def visible_messages(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``message`` objects of a transcript, in order."""
    return [e["message"] for e in entries if e.get("type") == "message" and isinstance(e.get("message"), dict)]


def preview_items(entries: list[dict[str, Any]], limit: int, max_chars: int) -> list[dict[str, str]]:
    items = []
    for message in visible_messages(entries)[-limit:]:
        text = message_text(message)
        if len(text) > max_chars:
            text = text[: max_chars - 1] + "…"
        items.append({"role": str(message.get("role")), "text": text})
    return items


def _row_kind(key: SessionKey) -> str:
    kind = key.kind
    if kind in ("group", "channel"):
        return "group"
    if kind in ("global", "unknown"):
        return kind
    return "direct"


def session_row(key: SessionKey, entry: SessionEntry, *, last_message: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"key": key.canonical, "kind": _row_kind(key), "agentId": key.agent_id}
    row.update(entry.to_json())
    row.pop("sessionFile", None)
    if last_message is not None:
        row["lastMessagePreview"] = last_message
    return row
