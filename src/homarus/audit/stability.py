"""The audit trail's newest records as the original's diagnostic stability snapshot
(``diagnostics.stability``, ``openclaw gateway stability``): what the gateway did lately, by type,
metadata only, with the process's memory.

The original keeps a ring of its diagnostic events in memory; Homarus's record of the same
happenings is the audit trail on disk (run starts and ends, model calls, tool calls), so the
snapshot reads its newest :data:`CAPACITY` records and survives a restart. Each event's ``seq`` is
the activity feed's sequence (its time in ms times 1000 plus its place within that millisecond):
the same at every read, so ``sinceSeq`` works as a cursor. Tool arguments, errors and origins are
left out, as the original leaves out payloads.
"""

from __future__ import annotations

from typing import Any, Final

from homarus.audit.activity import numbered

__all__ = ["CAPACITY", "stability_snapshot"]

CAPACITY: Final = 1000
#: the fields each record type keeps (metadata only)
_KEEP: Final[dict[str, tuple[str, ...]]] = {
    "run.start": ("agentId", "trigger", "channel", "model"),
    "run.end": ("status", "durationMs"),
    "model.call": ("provider", "model", "durationMs", "stopReason", "usage"),
    "tool.call": ("tool", "decision", "status", "durationMs"),
}


def _event(seq: int, record: dict[str, Any]) -> dict[str, Any]:
    kind = str(record.get("type") or "unknown")
    event: dict[str, Any] = {"seq": seq, "ts": int(record.get("ts") or 0), "type": kind}
    for key in _KEEP.get(kind, ()):
        if record.get(key) is not None:
            event[key] = record[key]
    return event


def stability_snapshot(
    records: list[dict[str, Any]],
    *,
    generated_at: str,
    limit: int,
    kind: str | None = None,
    since_seq: int | None = None,
    memory: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The snapshot of the newest ``CAPACITY`` records: every matching one counted, the newest
    ``limit`` of them listed oldest first."""
    window = records[-CAPACITY:]
    events = [
        _event(seq, r)
        for seq, _, r in numbered(window)
        if (kind is None or r.get("type") == kind) and (since_seq is None or seq > since_seq)
    ]
    by_type: dict[str, int] = {}
    for e in events:
        by_type[e["type"]] = by_type.get(e["type"], 0) + 1
    summary: dict[str, Any] = {"byType": by_type}
    if memory:
        summary["memory"] = {"latest": memory, "maxRssBytes": memory.get("rssBytes"), "pressureCount": 0}
    out: dict[str, Any] = {
        "generatedAt": generated_at,
        "capacity": CAPACITY,
        "count": len(events),
        "dropped": max(0, len(records) - CAPACITY),
    }
    if events:  # the original leaves both out of an empty snapshot
        out |= {"firstSeq": events[0]["seq"], "lastSeq": events[-1]["seq"]}
    return out | {"events": events[-limit:], "summary": summary}
