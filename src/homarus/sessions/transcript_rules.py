"""What an append to a transcript must satisfy, whatever stores it (a JSONL file or PostgreSQL).

Entries get an id and a parentId (the previous entry's) unless they bring their own, are checked
against the entry schema, may not repeat an id or name a parent that is not there, and a tool
result must answer a tool call that is still open: a history a provider would refuse (a result
without its call, a call answered twice) is never written.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from homarus.errors import InvalidRequest
from homarus.sessions.transcript_schema import CURRENT_VERSION, ENTRY_ADAPTER

__all__ = ["AppendState", "iso_now", "new_header", "prepare", "track"]


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_header(session_id: str, *, cwd: str | None = None, parent_session: str | None = None) -> dict[str, Any]:
    """A transcript's first line."""
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id,
        "timestamp": iso_now(),
        "cwd": cwd or "",
    }
    if parent_session:
        header["parentSession"] = parent_session
    return header


@dataclass(slots=True)
class AppendState:
    """What appends need to know of the entries already stored; ``size`` is how far they were
    read (bytes of a file, entries of a table), so a store can tell when someone else appended."""

    size: int
    clean_size: int
    last_id: str | None = None
    ids: set[str] = field(default_factory=set)
    open_tool_calls: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)


def prepare(raw: dict[str, Any], state: AppendState) -> dict[str, Any]:
    """``raw`` checked and completed as the next entry after ``state``, which it then joins."""
    entry = dict(raw)
    entry.setdefault("timestamp", iso_now())
    explicit_id = entry.get("id") is not None
    if not explicit_id:
        entry["id"] = _new_id(state.ids)
    explicit_parent = "parentId" in entry
    if not explicit_parent:
        entry["parentId"] = state.last_id
    try:
        ENTRY_ADAPTER.validate_python(entry)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidRequest(f"invalid transcript entry at {where}: {first['msg']}") from None
    # after validation: id and parentId are strings (or None) here, never unhashable values
    if explicit_id and entry["id"] in state.ids:
        raise InvalidRequest(f"duplicate transcript entry id {entry['id']!r}")
    if explicit_parent and entry["parentId"] is not None and entry["parentId"] not in state.ids:
        raise InvalidRequest(f"parentId {entry['parentId']!r} is not an entry of this transcript")
    message = entry.get("message") if entry.get("type") == "message" else None
    if isinstance(message, dict) and message.get("role") == "toolResult":
        call_id = message["toolCallId"]
        if call_id not in state.open_tool_calls:
            why = "was already answered" if call_id in state.answered else "has no matching tool call"
            raise InvalidRequest(f"tool result for {call_id!r} {why}")
    # track at once so a batch can answer a tool call it also contains
    track(state, entry)
    return entry


def track(state: AppendState, entry: dict[str, Any]) -> None:
    """Count ``entry`` (already stored, or just accepted) into ``state``."""
    entry_id = entry.get("id")
    if isinstance(entry_id, str):
        state.ids.add(entry_id)
        state.last_id = entry_id
    message = entry.get("message") if entry.get("type") == "message" else None
    if not isinstance(message, dict):
        return
    if message.get("role") == "assistant" and isinstance(message.get("content"), list):
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str):
                state.open_tool_calls.add(block["id"])
    elif message.get("role") == "toolResult":
        call_id = message.get("toolCallId")
        if isinstance(call_id, str):
            state.open_tool_calls.discard(call_id)
            state.answered.add(call_id)


def _new_id(taken: set[str]) -> str:
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate
