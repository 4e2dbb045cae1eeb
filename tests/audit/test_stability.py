"""The audit trail as the original's diagnostic stability snapshot: counts by type, the newest
events (metadata only, oldest first), a stable ``sinceSeq`` cursor, the window bounded."""

from __future__ import annotations

from typing import Any

from homarus.audit.stability import CAPACITY, stability_snapshot
from tests.audit.test_activity import trail


def snap(records: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return stability_snapshot(records, generated_at="2026-11-29T00:00:00.000Z", **{"limit": 50, **kw})


def test_events_by_type_metadata_only_with_memory() -> None:
    records = trail()
    records[2]["args"] = {"command": "cat ~/.ssh/id_rsa"}
    out = snap(records, memory={"rssBytes": 50_000_000})
    assert out["count"] == len(records) and out["capacity"] == CAPACITY and out["dropped"] == 0
    assert out["summary"]["byType"] == {"run.start": 2, "model.call": 1, "tool.call": 3, "run.end": 2, "garbage": 1}
    assert out["summary"]["memory"]["latest"] == {"rssBytes": 50_000_000}
    blocked = out["events"][2]
    assert blocked == {"seq": 1001000, "ts": 1001, "type": "tool.call", "tool": "exec", "decision": "blocked:policy",
                       "status": "error"}  # fmt: skip
    assert (out["firstSeq"], out["lastSeq"]) == (1000000, 1006000)
    assert [e["seq"] for e in out["events"]] == sorted(e["seq"] for e in out["events"])


def test_type_limit_and_since_seq_select_and_the_window_is_bounded() -> None:
    records = trail()
    tools = snap(records, kind="tool.call", limit=2)
    assert tools["count"] == 3 and [e["tool"] for e in tools["events"]] == ["read", "ls"]
    newer = snap(records, since_seq=1002000)
    assert [e["seq"] for e in newer["events"]] == [1002001, 1003000, 1004000, 1005000, 1006000]
    empty = snap(records, since_seq=newer["lastSeq"])
    assert empty["count"] == 0 and empty["events"] == [] and "firstSeq" not in empty
    assert "memory" not in empty["summary"]
    many = [{"ts": i, "type": "run.start", "runId": f"r{i}"} for i in range(CAPACITY + 250)]
    out = snap(many, limit=1000)
    assert out["count"] == CAPACITY and out["dropped"] == 250 and len(out["events"]) == CAPACITY
    assert out["events"][0]["ts"] == 250
