"""``audit.activity.list``: what runs and tool calls happened (``openclaw audit``), and
``diagnostics.stability``: the newest of them by type with the process's memory (``openclaw
gateway stability``); both from the audit trail (``homarus.audit.activity``,
``homarus.audit.stability``), empty while ``logging.audit.enabled`` is off."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field

from homarus.audit.activity import WINDOW, ActivityFilter, activity_events
from homarus.errors import InvalidRequest
from homarus.gateway.router import MethodCall, Params

__all__: list[str] = []


class ActivityParams(Params):
    agent_id: str | None = Field(default=None, alias="agentId", min_length=1, max_length=64)
    session_key: str | None = Field(default=None, alias="sessionKey", min_length=1, max_length=512)
    run_id: str | None = Field(default=None, alias="runId", min_length=1, max_length=256)
    kind: Literal["agent_run", "tool_action", "message"] | None = None
    status: Literal["started", "succeeded", "failed", "cancelled", "timed_out", "blocked", "unknown"] | None = None
    direction: Literal["inbound", "outbound"] | None = None
    channel: str | None = Field(default=None, min_length=1, max_length=64)
    after: int | None = Field(default=None, ge=0)
    before: int | None = Field(default=None, ge=0)
    limit: int = Field(default=50, ge=1, le=500)
    cursor: str | None = Field(default=None, min_length=1, max_length=32)


def _conflict(p: ActivityParams) -> str | None:
    """The original's filter rules: message filters and session filters exclude each other."""
    message_field = "direction" if p.direction is not None else "channel" if p.channel is not None else None
    if p.kind == "message" and p.session_key is not None:
        return "sessionKey only applies to kind agent_run or tool_action"
    if p.kind is not None and p.kind != "message" and message_field:
        return f"{message_field} only applies to kind message"
    if p.kind is None and p.session_key is not None and message_field:
        return f"{message_field} cannot be combined with sessionKey"
    return None


async def activity_list(call: MethodCall, p: ActivityParams) -> dict[str, Any]:
    if (why := _conflict(p)) is not None:
        raise InvalidRequest(f"invalid audit.activity.list filters: {why}")
    if (p.cursor is not None and not p.cursor.isdigit()) or (
        p.after is not None and p.before is not None and p.after >= p.before
    ):
        raise InvalidRequest("invalid audit.activity.list range or cursor")
    if p.kind == "message" or p.direction is not None or p.channel is not None:
        return {"events": []}  # the trail records runs and tool calls, not chat messages
    trail = call.gateway.audit_log
    tail = await asyncio.to_thread(lambda: trail.tail(limit=WINDOW))
    which = ActivityFilter(p.agent_id, p.session_key, p.run_id, p.kind, p.status, p.after, p.before)
    events, next_cursor = activity_events(
        tail.records, which, limit=p.limit, cursor=int(p.cursor) if p.cursor else None
    )
    return {"events": events} | ({"nextCursor": str(next_cursor)} if next_cursor is not None else {})


class StabilityParams(Params):
    limit: int = Field(default=50, ge=1, le=1000)
    type: str | None = Field(default=None, min_length=1, max_length=128)
    since_seq: int | None = Field(default=None, alias="sinceSeq", ge=0)


async def diagnostics_stability(call: MethodCall, p: StabilityParams) -> dict[str, Any]:
    from datetime import UTC, datetime

    from homarus.audit.stability import CAPACITY, stability_snapshot
    from homarus.gateway.services.health import process_memory

    trail = call.gateway.audit_log
    tail = await asyncio.to_thread(lambda: trail.tail(limit=CAPACITY))
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    kind = p.type.strip() if p.type else None
    return stability_snapshot(
        tail.records, generated_at=now, limit=p.limit, kind=kind, since_seq=p.since_seq, memory=process_memory()
    )
