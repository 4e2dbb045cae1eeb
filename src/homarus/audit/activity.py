"""The audit trail's records as the original's activity events (``audit.activity.list``,
``openclaw audit``): a run's start and end, and each tool call's outcome, metadata only.

Which records: the newest :data:`WINDOW` of the trail (``logs/audit-*.jsonl``), newest first.
Each event's ``sequence`` is its time in ms times 1000 plus its place among the records of the
same millisecond, so it is the same at every read and a page's cursor (the last sequence it
returned) stays valid while newer records arrive. Model calls are not activity (they are in
``usage.cost``); chat messages are not recorded by the trail, so the ``message`` kind is empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["WINDOW", "ActivityFilter", "activity_events", "numbered"]

WINDOW: Final = 5000
_RUN_STATUS: Final = {
    "ok": ("succeeded", None),
    "error": ("failed", "run_failed"),
    "aborted": ("cancelled", "run_cancelled"),
    "timeout": ("timed_out", "run_timed_out"),
}
_NAMESPACE: Final = uuid.UUID("6f1d8a52-3c1e-4d0e-9b64-1a2b3c4d5e6f")


@dataclass(frozen=True, slots=True)
class ActivityFilter:
    agent_id: str | None = None
    session_key: str | None = None
    run_id: str | None = None
    kind: str | None = None
    status: str | None = None
    after: int | None = None
    before: int | None = None

    def keeps(self, e: dict[str, Any]) -> bool:
        return (
            (self.agent_id is None or e.get("agentId") == self.agent_id)
            and (self.session_key is None or e.get("sessionKey") == self.session_key)
            and (self.run_id is None or e.get("runId") == self.run_id)
            and (self.kind is None or e["kind"] == self.kind)
            and (self.status is None or e["status"] == self.status)
            and (self.after is None or e["occurredAt"] > self.after)
            and (self.before is None or e["occurredAt"] < self.before)
        )


def _agent_of(record: dict[str, Any]) -> str:
    agent = record.get("agentId")
    if isinstance(agent, str) and agent:
        return agent
    parts = str(record.get("sessionKey") or "").split(":")
    return parts[1] if len(parts) > 2 and parts[0] == "agent" and parts[1] else "main"


def _event(record: dict[str, Any], sequence: int, source: int) -> dict[str, Any] | None:
    kind = record.get("type")
    run_id = record.get("runId")
    if not isinstance(run_id, str) or not run_id:
        return None
    agent = _agent_of(record)
    base: dict[str, Any] = {
        "schemaVersion": 1,
        "eventId": str(uuid.uuid5(_NAMESPACE, f"{sequence}:{run_id}:{kind}")),
        "sequence": sequence,
        "sourceSequence": source,
        "occurredAt": int(record.get("ts") or 0),
        "redaction": "metadata_only",
        "actor": {"type": "agent", "id": agent},
        "agentId": agent,
        "runId": run_id,
    }
    if isinstance(record.get("sessionKey"), str) and record["sessionKey"]:
        base["sessionKey"] = record["sessionKey"]
    if kind == "run.start":
        return base | {
            "eventType": "agent_run",
            "kind": "agent_run",
            "action": "agent.run.started",
            "status": "started",
        }
    if kind == "run.end":
        status, code = _RUN_STATUS.get(str(record.get("status")), ("failed", "run_failed"))
        out = base | {"eventType": "agent_run", "kind": "agent_run", "action": "agent.run.finished", "status": status}
        return out | ({"errorCode": code} if code else {})
    if kind == "tool.call":
        decision = str(record.get("decision") or "allowed")
        if decision.startswith("blocked") or decision == "denied":
            status, code = "blocked", "tool_blocked"
        elif record.get("status") == "error":
            status, code = "failed", "tool_failed"
        else:
            status, code = "succeeded", None
        out = base | {"eventType": "tool_action", "kind": "tool_action", "action": "tool.action.finished"}
        out |= {"status": status, "toolName": str(record.get("tool") or "unknown")}
        if record.get("toolCallId"):
            out["toolCallId"] = str(record["toolCallId"])
        return out | ({"errorCode": code} if code else {})
    return None


def numbered(records: Iterable[dict[str, Any]]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(sequence, source position, record), oldest first."""
    last_ts, same = -1, 0
    for source, record in enumerate(records, 1):
        ts = int(record.get("ts") or 0)
        same = same + 1 if ts == last_ts else 0
        last_ts = ts
        yield ts * 1000 + min(same, 999), source, record


def activity_events(
    records: list[dict[str, Any]], which: ActivityFilter, *, limit: int, cursor: int | None
) -> tuple[list[dict[str, Any]], int | None]:
    """A page of events, newest first, older than ``cursor``; and the cursor of the next page."""
    events = []
    for sequence, source, record in numbered(records):
        event = _event(record, sequence, source)
        if event is not None and which.keeps(event) and (cursor is None or sequence < cursor):
            events.append(event)
    events.reverse()
    page = events[:limit]
    return page, (page[-1]["sequence"] if len(events) > limit else None)
