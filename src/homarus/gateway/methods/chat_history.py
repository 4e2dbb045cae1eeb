"""`chat.history`: a page of a session's shown messages, newest last, with what a chat client needs
to reconcile what it sent (see :mod:`homarus.gateway.services.chat_history`).

Paging runs backwards from the newest message: ``limit`` messages ending before ``cursor`` (the
``nextCursor`` of the previous page), after skipping the newest ``offset``, or ending with
``messageId``. Homarus keeps no inputs outside the transcript, so ``pendingInputs`` is always
empty and ``pendingBefore`` pages nothing.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import orjson
from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.router import MethodCall, Params
from homarus.gateway.services.chat_history import HistoryEntry, session_info, shown, transcript_rows

__all__ = ["HistoryParams", "chat_history"]

DEFAULT_MAX_CHARS = 12_000
ROW_MAX_BYTES = 128 * 1024
TOTAL_MAX_BYTES = 6 * 1024 * 1024
OMITTED = "[chat.history omitted: message too large]"
_CURSOR = re.compile(r"^seq:([1-9][0-9]{0,9})$")


class HistoryParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    #: the session the client shows: when it was replaced since, the page is empty (the client
    #: sees the new ``sessionId`` and reloads)
    session_id: str | None = Field(default=None, alias="sessionId", max_length=128)
    limit: int = Field(default=200, ge=1, le=1000)
    cursor: str | None = Field(default=None, max_length=32)
    offset: int | None = Field(default=None, ge=0, le=1_000_000)
    message_id: str | None = Field(default=None, alias="messageId", max_length=128)
    max_chars: int | None = Field(default=None, alias="maxChars", ge=1, le=500_000)
    #: the original's bound in bytes of UTF-8: taken as a bound on characters
    max_bytes: int | None = Field(default=None, alias="maxBytes", ge=1, le=10_000_000)
    #: the runs a client waits for: each one the transcript holds gets an ``inputReceipts`` row
    input_run_ids: list[str] | None = Field(default=None, alias="inputRunIds", max_length=100)
    pending_before: int | None = Field(default=None, alias="pendingBefore", ge=0)


def _window(rows: list[HistoryEntry], p: HistoryParams) -> list[HistoryEntry]:
    if p.cursor is not None:
        match = _CURSOR.match(p.cursor)
        if match is None:
            raise InvalidRequest("invalid chat.history params: cursor is not one this gateway gave out")
        rows = [r for r in rows if r.seq < int(match.group(1))]
    if p.message_id is not None:
        at = next((i for i, r in enumerate(rows) if r.entry_id == p.message_id), None)
        if at is None:
            raise InvalidRequest(f"invalid chat.history params: unknown messageId {p.message_id!r}")
        rows = rows[: at + 1]
    if p.offset:
        rows = rows[: max(0, len(rows) - p.offset)]
    return rows


def _wire(row: HistoryEntry, max_chars: int) -> dict[str, Any] | None:
    message = shown(row.message, ROW_MAX_BYTES, OMITTED)
    if message is None:
        return None
    out = dict(message)
    content = out.get("content")
    if isinstance(content, str) and len(content) > max_chars:
        out["content"] = content[:max_chars]
    elif isinstance(content, list):
        out["content"] = [
            {**b, "text": b["text"][:max_chars]}
            if isinstance(b, dict) and b.get("type") == "text" and len(b.get("text", "")) > max_chars
            else b
            for b in content
        ]
    meta: dict[str, Any] = {"seq": row.seq, "senderIsOwner": out.get("role") == "user"}
    if isinstance(out.get("timestamp"), int):
        meta["recordTimestampMs"] = out["timestamp"]
    if row.entry_id:
        meta["id"] = row.entry_id
    if row.run_id and out.get("role") == "user":
        out["idempotencyKey"] = meta["idempotencyKey"] = row.run_id
    elif row.run_id:
        # the run that wrote it: the original's UI merges the reply it streamed with this stored
        # one by it (without, every reply shows twice)
        meta["runId"] = row.run_id
    out["__openclaw"] = meta
    return out


async def chat_history(call: MethodCall, p: HistoryParams) -> dict[str, Any]:
    gw = call.gateway
    key = gw.sessions.resolve_key(p.session_key, p.agent_id)
    max_chars = p.max_chars or (min(p.max_bytes, 500_000) if p.max_bytes else DEFAULT_MAX_CHARS)

    def read() -> dict[str, Any]:
        ref = gw.sessions.get(key)
        all_rows = transcript_rows(gw.sessions.transcript_for(ref).read().entries) if ref is not None else []
        replaced = ref is not None and p.session_id is not None and p.session_id != ref.entry.session_id
        rows = [] if replaced else all_rows
        visible = [(r, w) for r in rows if (w := _wire(r, max_chars)) is not None]
        total = len(visible)
        page = _window([r for r, _ in visible], p)
        wires = {r.seq: w for r, w in visible}
        kept = page[-p.limit :]
        size = 0
        out: list[dict[str, Any]] = []
        for row in reversed(kept):  # newest first, so the oldest are dropped past the budget
            wire = wires[row.seq]
            size += len(orjson.dumps(wire))
            if size > TOTAL_MAX_BYTES:
                break
            out.append(wire)
        out.reverse()
        first_seq = out[0]["__openclaw"]["seq"] if out else None
        has_more = first_seq is not None and any(r.seq < first_seq for r in page)
        wanted = set(p.input_run_ids or ())
        receipts = [
            {"runId": run_id, "state": "consumed", **({"consumedByEventId": r.entry_id} if r.entry_id else {})}
            for r in all_rows
            if r.message.get("role") == "user"
            for run_id in r.runs()
            if run_id in wanted
        ]
        result: dict[str, Any] = {
            "sessionKey": key.canonical,
            "messages": out,
            "totalMessages": total,
            "hasMore": has_more,
            "pendingInputs": {"items": [], "total": 0},
            "inputReceipts": receipts,
            "sessionInfo": session_info(gw, key, ref, all_rows),
        }
        if has_more:
            result["nextCursor"] = f"seq:{first_seq}"
        if ref is not None:
            result.update(
                sessionId=ref.entry.session_id,
                thinkingLevel=ref.entry.thinking_level,
                verboseLevel=ref.entry.verbose_level,
            )
        return result

    return await asyncio.to_thread(read)
