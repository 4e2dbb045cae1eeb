"""A session's history for the model: each message is converted once per cached view of its
transcript, not again on every turn; anything that replaces the view converts afresh."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from homarus.agents.history import load_history
from homarus.messages import AssistantMessage, ToolResultMessage, UserMessage
from homarus.sessions.transcript import Transcript


def _turn(i: int) -> list[dict[str, Any]]:
    user = {"role": "user", "content": f"question {i}", "timestamp": 1}
    answer = {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}], "timestamp": 2}
    return [{"type": "message", "message": user}, {"type": "message", "message": answer}]


def _transcript(tmp_path: Path, turns: int) -> Transcript:
    t = Transcript(tmp_path / "s.jsonl")
    t.create("s")
    for i in range(turns):
        t.append_many(_turn(i))
    return t


def test_messages_are_converted_once_and_new_ones_added(tmp_path: Path) -> None:
    t = _transcript(tmp_path, 3)
    first, ids = load_history(t)
    assert [type(m) for m in first] == [UserMessage, AssistantMessage] * 3 and len(ids) == 6
    t.append_many(_turn(3))
    second, _ = load_history(t)
    assert len(second) == 8 and all(a is b for a, b in zip(first, second[:6], strict=False))  # reused
    assert isinstance(second[7], AssistantMessage) and second[7].text == "answer 3"
    second.append(UserMessage("the caller's own list"))  # a copy: the next turn does not see it
    assert len(load_history(t)[0]) == 8


def test_a_new_view_of_the_file_converts_afresh(tmp_path: Path) -> None:
    t = _transcript(tmp_path, 2)
    first, _ = load_history(t)
    before = t.cached_bytes
    assert before == t.path.stat().st_size + t.path.stat().st_size // 4  # derived messages are counted
    t.forget_cache()
    assert not t.derived and t.cached_bytes == 0
    again, _ = load_history(t)
    assert [m.timestamp for m in again] == [m.timestamp for m in first] and again[0] is not first[0]

    # another file at the same path (a reset session's file rewritten): nothing derived carries over
    other = Transcript(tmp_path / "other.jsonl")
    other.create("s")
    other.append_many([{"type": "message", "message": {"role": "user", "content": "elsewhere", "timestamp": 9}}])
    os.replace(other.path, t.path)
    replaced, _ = load_history(t)
    assert len(replaced) == 1 and isinstance(replaced[0], UserMessage) and replaced[0].content == "elsewhere"


def _call(call_id: str) -> dict[str, Any]:
    content = [{"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "a"}}]
    message = {"role": "assistant", "content": content, "stopReason": "toolUse", "timestamp": 3}
    return {"type": "message", "message": message}


def _result(call_id: str) -> dict[str, Any]:
    message = {"role": "toolResult", "toolCallId": call_id, "toolName": "read", "content": [], "isError": False}
    message["timestamp"] = 4
    return {"type": "message", "message": message}


def test_a_call_open_at_the_end_is_answered_until_its_result_is_written(tmp_path: Path) -> None:
    t = _transcript(tmp_path, 1)
    t.append_many([_call("c1")])
    messages, ids = load_history(t)
    assert isinstance(messages[-1], ToolResultMessage) and messages[-1].is_error and ids[-1] == ""
    t.append_many([_result("c1")])  # the run wrote its result after all
    messages, ids = load_history(t)
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1 and not results[0].is_error and ids[-1] != ""
    t.append_many([_call("c2"), *_turn(5)])  # a later message closes the call it never got a result for
    messages, _ = load_history(t)
    kinds = [type(m).__name__ for m in messages[-4:]]
    assert kinds == ["AssistantMessage", "ToolResultMessage", "UserMessage", "AssistantMessage"]
    assert isinstance(messages[-3], ToolResultMessage) and messages[-3].is_error


def test_a_new_compaction_starts_the_history_from_its_summary(tmp_path: Path) -> None:
    t = _transcript(tmp_path, 3)
    load_history(t)
    kept = t.read().entries[-2]["id"]
    t.append_many([{"type": "compaction", "summary": "they talked", "firstKeptEntryId": kept, "tokensBefore": 1}])
    t.append_many(_turn(9))
    messages, ids = load_history(t)
    assert len(messages) == 5 and ids[0] == "" and "they talked" in str(messages[0])
    assert isinstance(messages[-1], AssistantMessage) and messages[-1].text == "answer 9"
