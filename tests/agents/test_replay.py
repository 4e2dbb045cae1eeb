"""The history made safe to send (agents/replay.py): unanswered calls answered, failed turns left
out, and with a cache only what the last request did not share gone over again."""

from __future__ import annotations

import copy
import random
from typing import Any

from homarus.agents.replay import NO_RESULT_TEXT, repair_for_replay
from homarus.messages import AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage, UserMessage


def _history(turns: int, seed: int = 1) -> list[Message]:
    rnd = random.Random(seed)
    out: list[Message] = []
    for i in range(turns):
        out.append(UserMessage(f"q{i}"))
        r = rnd.random()
        if r < 0.25:  # two calls, each answered or not
            out.append(
                AssistantMessage([ToolCall(f"a{i}", "t", {}), ToolCall(f"b{i}", "t", {})], stop_reason="toolUse")
            )
            out.extend(ToolResultMessage(c, "t", [TextContent("r")]) for c in (f"a{i}", f"b{i}") if rnd.random() < 0.7)
        elif r < 0.35:
            out.append(AssistantMessage([TextContent("failed")], stop_reason="error"))
        elif r < 0.4:
            out.append(ToolResultMessage("nobody", "t", [TextContent("orphan")]))
        else:
            out.append(AssistantMessage([TextContent(f"answer {i}")]))
    return out


def _plain(messages: list[Message]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        data = m.to_json()
        data.pop("timestamp", None)  # a synthetic result made again carries a later time
        out.append(data)
    return out


def test_every_call_is_answered_and_failed_turns_are_left_out() -> None:
    call = AssistantMessage([ToolCall("c1", "exec", {})], stop_reason="toolUse")
    failed = AssistantMessage([TextContent("x")], stop_reason="aborted")
    stray = ToolResultMessage("c9", "exec", [TextContent("late")])
    out = repair_for_replay([UserMessage("a"), call, failed, stray, UserMessage("b")])
    assert [type(m).__name__ for m in out] == ["UserMessage", "AssistantMessage", "ToolResultMessage", "UserMessage"]
    result = out[2]
    assert isinstance(result, ToolResultMessage) and result.tool_call_id == "c1" and result.is_error
    assert result.text == NO_RESULT_TEXT


def test_with_a_cache_each_request_gets_what_a_full_pass_gives() -> None:
    history = _history(120)
    cache: dict[str, Any] = {}
    for cut in range(0, len(history), 3):
        # the last request's tail comes back re-read from the transcript: new objects
        messages = [*history[:cut], *copy.deepcopy(history[cut : cut + 5])]
        assert _plain(repair_for_replay(messages, cache)) == _plain(repair_for_replay(messages))
    # a history replaced from the start (a compaction)
    fresh = copy.deepcopy(history)
    assert _plain(repair_for_replay(fresh, cache)) == _plain(repair_for_replay(fresh))


def test_with_a_cache_the_shared_history_is_not_gone_over_again() -> None:
    history = _history(200, seed=2)
    cache: dict[str, Any] = {}
    repair_for_replay(history, cache)
    seen: list[Message] = []

    class Watched(list[Message]):
        def __getitem__(self, index: Any) -> Any:
            part = super().__getitem__(index)
            if isinstance(index, slice):
                seen.extend(part)
            return part

    repair_for_replay(Watched([*history, UserMessage("next")]), cache)
    assert 1 <= len(seen) <= 4  # the new message, and the few before it back to a clean cut
