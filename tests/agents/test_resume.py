"""Where an interrupted run stands in its transcript, and how it is closed (agents/resume.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from homarus.agents.request import RunRequest
from homarus.agents.resume import (
    INTERRUPTED_TOOL_TEXT,
    ResumePoint,
    close_interrupted,
    interrupted_notice,
    resume_point,
)
from homarus.messages import AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage, UserMessage
from homarus.sessions.keys import parse_session_key
from homarus.sessions.transcript import Transcript


def entry(message: Any, run_id: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": message.to_json(), "runId": run_id, **extra}


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage([ToolCall(i, "exec", {"command": "true"}) for i in ids], stop_reason="toolUse")


def result(call_id: str) -> ToolResultMessage:
    return ToolResultMessage(call_id, "exec", [TextContent("done")])


def test_a_run_that_wrote_nothing_never_started() -> None:
    other = [entry(UserMessage("hi"), "other-run")]
    assert resume_point(other, "r1") == ResumePoint()
    assert resume_point([], "r1").started is False


def test_open_tool_calls_are_those_without_results() -> None:
    entries = [entry(UserMessage("do it"), "r1"), entry(calls("c1", "c2"), "r1"), entry(result("c1"), "r1")]
    point = resume_point(entries, "r1")
    assert point.started is True and point.final is None
    assert [c.id for c in point.open_calls] == ["c2"]


def test_a_final_answer_means_only_the_bookkeeping_was_lost() -> None:
    answer = AssistantMessage([TextContent("all done")])
    point = resume_point([entry(UserMessage("q"), "r1"), entry(answer, "r1")], "r1")
    assert point.final is not None and point.final.text == "all done" and point.open_calls == []
    failed = AssistantMessage([TextContent("")], stop_reason="error")
    assert resume_point([entry(UserMessage("q"), "r1"), entry(failed, "r1")], "r1").final is None


def test_a_run_folded_into_another_is_found_by_the_joined_list() -> None:
    merged = entry(UserMessage("a\n---\nb"), "host", joined=["guest"])
    assert resume_point([merged], "guest").started is True
    assert resume_point([{**merged, "joined": "guest"}], "guest").started is False  # not a list: ignored


def test_unreadable_entries_are_skipped() -> None:
    bad = {"type": "message", "message": {"role": "nobody"}, "runId": "r1"}
    assert resume_point([bad, {"type": "compaction", "runId": "r1"}], "r1") == ResumePoint()


def new_transcript(tmp_path: Path) -> Transcript:
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.create("s1")
    return transcript


def test_close_records_open_calls_as_aborted_then_the_notice_once(tmp_path: Path) -> None:
    transcript = new_transcript(tmp_path)
    transcript.append_many([entry(UserMessage("run it"), "r1"), entry(calls("c1"), "r1")])
    notice = interrupted_notice("This run")
    point = close_interrupted(transcript, "r1", notice)
    assert [c.id for c in point.open_calls] == ["c1"]
    written = [e for e in transcript.read().entries if e.get("type") == "message"]
    aborted, note = written[-2]["message"], written[-1]["message"]
    assert aborted["role"] == "toolResult" and aborted["isError"] is True
    assert aborted["content"][0]["text"] == INTERRUPTED_TOOL_TEXT
    assert note["role"] == "assistant" and "This run was interrupted" in note["content"][0]["text"]
    assert {e["runId"] for e in written} == {"r1"}
    # closing again changes nothing: the calls are answered and the notice is the run's last word
    close_interrupted(transcript, "r1", notice)
    assert len([e for e in transcript.read().entries if e.get("type") == "message"]) == len(written)


def test_close_without_a_notice_and_for_a_run_that_never_started(tmp_path: Path) -> None:
    transcript = new_transcript(tmp_path)
    close_interrupted(transcript, "ghost", interrupted_notice("This run"))  # it left nothing to close
    assert transcript.read().entries == []
    transcript.append_many([entry(UserMessage("x"), "r1")])
    close_interrupted(transcript, "r1", None)  # a background run: nothing to say, nothing open
    assert [e["message"]["role"] for e in transcript.read().entries if e.get("type") == "message"] == ["user"]


def test_the_request_round_trips_through_the_journal_form() -> None:
    key = parse_session_key("agent:main:hook:x")
    req = RunRequest(run_id="r1", session_key=key, message="hello", model="fake/m", timeout_s=30.0, lane="cron")
    back = RunRequest.from_json(req.to_json(), key, resume=True)
    assert (back.run_id, back.message, back.model, back.timeout_s, back.lane, back.resume) == (
        "r1",
        "hello",
        "fake/m",
        30.0,
        "cron",
        True,
    )


def test_history_answers_a_tool_call_left_open_so_the_session_is_never_stuck() -> None:
    from homarus.agents.history import answer_open_calls

    history: list[Message] = [UserMessage("a"), calls("c1", "c2"), result("c1"), UserMessage("b"), calls("c3")]
    fixed, ids = answer_open_calls(history, ["u1", "a1", "r1", "u2", "a2"])
    shape = [(type(m).__name__, getattr(m, "tool_call_id", None)) for m in fixed]
    assert shape == [
        ("UserMessage", None),
        ("AssistantMessage", None),
        ("ToolResultMessage", "c1"),
        ("ToolResultMessage", "c2"),  # answered as interrupted before the next user message
        ("UserMessage", None),
        ("AssistantMessage", None),
        ("ToolResultMessage", "c3"),
    ]
    assert ids == ["u1", "a1", "r1", "", "u2", "a2", ""]
    assert all(m.is_error for m in fixed if isinstance(m, ToolResultMessage) and m.tool_call_id != "c1")
    complete: list[Message] = [UserMessage("a"), calls("c1"), result("c1")]
    assert answer_open_calls(complete, ["1", "2", "3"]) == (complete, ["1", "2", "3"])
