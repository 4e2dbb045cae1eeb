"""The example plugin in examples/plugins/audit-log loads and its hooks do what it promises."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from homarus.plugins.events import AfterToolCallEvent, BeforeToolCallEvent, HookContext
from tests.plugins.helpers import load

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plugins" / "audit-log"
CTX = HookContext(agent_id="main", session_key="agent:main:main", session_id="sess-1", run_id="run-1")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_audit_log_writes_jsonl_and_blocks(tmp_path: Path) -> None:
    config = {"blockTools": ["exec"], "blockReason": "no shell here"}
    loaded = load(tmp_path, {"entries": {"audit-log": {"path": str(EXAMPLE), "config": config}}})
    assert loaded.status("audit-log") == "loaded", loaded.messages("audit-log")
    record = loaded.registry.records["audit-log"]
    assert (record.origin, record.version) == ("config", "0.1.0")
    assert record.registrations.hooks == ["before_tool_call", "after_tool_call"]
    runner = loaded.runner

    allowed = await runner.modify(
        "before_tool_call",
        BeforeToolCallEvent("current_time", {"timezone": "UTC"}, run_id="run-1", tool_call_id="call-1", context=CTX),
        tool_name="current_time",
    )
    assert not allowed.result.block and allowed.errors == []
    errors = await runner.void(
        "after_tool_call",
        AfterToolCallEvent(
            "current_time", {"timezone": "UTC"}, run_id="run-1", tool_call_id="call-1", result="noon", context=CTX
        ),
        tool_name="current_time",
    )
    assert errors == []
    await runner.void(
        "after_tool_call",
        AfterToolCallEvent("read", {"path": "x"}, run_id="run-1", error="ENOENT", duration_ms=7, context=CTX),
        tool_name="read",
    )
    blocked = await runner.modify(
        "before_tool_call",
        BeforeToolCallEvent("exec", {"command": "rm -rf /"}, run_id="run-1", tool_call_id="call-2", context=CTX),
        tool_name="exec",
    )
    assert (blocked.result.block, blocked.result.block_reason, blocked.decided_by) == (
        True,
        "no shell here",
        "audit-log",
    )

    log = tmp_path / "audit" / "tool-calls.jsonl"  # default: <state dir>/audit/tool-calls.jsonl
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    before, after, failed, refused = lines(log)
    assert before["phase"] == "before" and before["tool"] == "current_time" and before["blocked"] is False
    assert before["params"] == {"timezone": "UTC"}
    assert (before["sessionKey"], before["sessionId"], before["runId"], before["toolCallId"]) == (
        "agent:main:main",
        "sess-1",
        "run-1",
        "call-1",
    )
    assert (after["phase"], after["result"], after["error"]) == ("after", "noon", None)
    assert isinstance(after["durationMs"], int) and after["durationMs"] >= 0  # measured from before_tool_call
    assert (failed["tool"], failed["error"], failed["durationMs"], failed["result"]) == ("read", "ENOENT", 7, None)
    assert (refused["tool"], refused["blocked"], refused["reason"]) == ("exec", True, "no shell here")
    assert refused["params"] == {"command": "rm -rf /"}


async def test_audit_log_path_from_config(tmp_path: Path) -> None:
    loaded = load(tmp_path, {"entries": {"audit-log": {"path": str(EXAMPLE), "config": {"path": "logs/a.jsonl"}}}})
    await loaded.runner.void("after_tool_call", AfterToolCallEvent("t", {}, context=CTX), tool_name="t")
    (line,) = lines(tmp_path / "logs" / "a.jsonl")
    assert (line["tool"], line["durationMs"]) == ("t", None)


def test_audit_log_config_is_validated(tmp_path: Path) -> None:
    loaded = load(
        tmp_path, {"entries": {"audit-log": {"path": str(EXAMPLE), "config": {"blockTools": "exec", "colour": 1}}}}
    )
    assert loaded.status("audit-log") == "error"
    (msg,) = loaded.messages("audit-log", "error")
    assert msg.startswith("invalid plugins.entries.audit-log.config: ")
    assert "'colour' was unexpected" in msg and "blockTools: 'exec' is not of type 'array'" in msg
    assert not loaded.runner.has("before_tool_call")
