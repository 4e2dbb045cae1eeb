"""Audit records as the original's activity events: mapping, filters, stable cursors."""

from __future__ import annotations

from typing import Any

from homarus.audit.activity import ActivityFilter, activity_events


def trail() -> list[dict[str, Any]]:
    key = "agent:ops:main"
    return [
        {"ts": 1000, "type": "run.start", "runId": "r1", "sessionKey": key, "agentId": "ops"},
        {"ts": 1000, "type": "model.call", "runId": "r1", "sessionKey": key, "usage": {}},
        {"ts": 1001, "type": "tool.call", "runId": "r1", "sessionKey": key, "tool": "exec", "toolCallId": "c1",
         "decision": "blocked:policy", "status": "error"},
        {"ts": 1002, "type": "tool.call", "runId": "r1", "sessionKey": key, "tool": "read", "status": "error"},
        {"ts": 1002, "type": "tool.call", "runId": "r1", "sessionKey": key, "tool": "ls", "status": "ok"},
        {"ts": 1003, "type": "run.end", "runId": "r1", "sessionKey": key, "status": "timeout"},
        {"ts": 1004, "type": "run.start", "runId": "r2", "sessionKey": "agent:main:main", "agentId": "main"},
        {"ts": 1005, "type": "run.end", "runId": "r2", "sessionKey": "agent:main:main", "status": "ok"},
        {"ts": 1006, "type": "garbage"},
    ]  # fmt: skip


def test_runs_and_tool_calls_map_to_the_originals_events_newest_first() -> None:
    events, cursor = activity_events(trail(), ActivityFilter(), limit=50, cursor=None)
    assert cursor is None
    assert [(e["runId"], e["action"], e["status"]) for e in events] == [
        ("r2", "agent.run.finished", "succeeded"),
        ("r2", "agent.run.started", "started"),
        ("r1", "agent.run.finished", "timed_out"),
        ("r1", "tool.action.finished", "succeeded"),
        ("r1", "tool.action.finished", "failed"),
        ("r1", "tool.action.finished", "blocked"),
        ("r1", "agent.run.started", "started"),
    ]
    ended = events[2]
    assert ended["errorCode"] == "run_timed_out" and ended["agentId"] == "ops"  # from the session key
    assert ended["redaction"] == "metadata_only" and ended["actor"] == {"type": "agent", "id": "ops"}
    assert events[5]["errorCode"] == "tool_blocked" and events[5]["toolName"] == "exec"
    assert events[3]["sequence"] == 1002 * 1000 + 1 and events[4]["sequence"] == 1002 * 1000  # same ms, in order
    assert "errorCode" not in events[0]


def test_pages_follow_the_cursor_and_filters_apply() -> None:
    first, cursor = activity_events(trail(), ActivityFilter(), limit=3, cursor=None)
    second, cursor2 = activity_events(trail(), ActivityFilter(), limit=3, cursor=cursor)
    third, cursor3 = activity_events(trail(), ActivityFilter(), limit=3, cursor=cursor2)
    assert len(first) == len(second) == 3 and len(third) == 1 and cursor3 is None
    ids = [e["eventId"] for e in first + second + third]
    assert len(set(ids)) == 7
    # the same read gives the same ids and sequences (a cursor stays valid)
    again, _ = activity_events(trail(), ActivityFilter(), limit=3, cursor=None)
    assert [e["eventId"] for e in again] == [e["eventId"] for e in first]
    tools, _ = activity_events(trail(), ActivityFilter(kind="tool_action", status="failed"), limit=50, cursor=None)
    assert [e["toolName"] for e in tools] == ["read"]
    ops, _ = activity_events(trail(), ActivityFilter(agent_id="main"), limit=50, cursor=None)
    assert {e["runId"] for e in ops} == {"r2"}
    timed, _ = activity_events(trail(), ActivityFilter(after=1003, before=1005), limit=50, cursor=None)
    assert [e["occurredAt"] for e in timed] == [1004]


def test_a_record_as_a_line_of_the_originals_log_format() -> None:
    """The original's Control UI reads time, _meta.logLevelName and message of each logs.tail line."""
    from homarus.audit.summary import as_log_line

    ok = as_log_line({"ts": 1_795_000_000_123, "type": "run.end", "runId": "r1", "status": "ok", "durationMs": 5})
    assert ok["time"] == "2026-11-18T11:06:40.123+00:00" and ok["_meta"]["logLevelName"] == "INFO"
    assert ok["message"].startswith("run.end") and "r1" in ok["message"] and ok["status"] == "ok"
    blocked = as_log_line({"ts": 0, "type": "tool.call", "tool": "exec", "decision": "blocked:policy"})
    assert blocked["_meta"]["logLevelName"] == "WARN" and "exec blocked:policy" in blocked["message"]
