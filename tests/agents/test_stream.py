"""Agent events from loop events: text deltas go out at most once per display frame, in order."""

from __future__ import annotations

import asyncio
from typing import Any

from homarus.agents.events import MessageEnd, MessageStart, MessageUpdate, ToolStart
from homarus.agents.runs import RunOutcome
from homarus.agents.stream import DELTA_FRAME_S, EventTranslator
from homarus.messages import AssistantMessage, TextContent, TextDelta


def _translator() -> tuple[EventTranslator, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    return EventTranslator("r1", "agent:main:s", seen.append), seen


def _grow(message: AssistantMessage, chunk: str) -> MessageUpdate:
    if not message.content:
        message.content.append(TextContent(""))
    block = message.content[0]
    assert isinstance(block, TextContent)
    block.text += chunk
    return MessageUpdate(message, TextDelta(0, chunk))


async def test_deltas_of_one_turn_are_one_event_with_their_concatenation() -> None:
    tr, seen = _translator()
    msg = AssistantMessage()
    tr.handle(MessageStart(msg))
    for chunk in ("Hel", "lo, ", "world"):
        tr.handle(_grow(msg, chunk))
    assert seen == []  # held to the end of the turn
    await asyncio.sleep(0)
    assert [(e["stream"], e["data"], e["seq"]) for e in seen] == [
        ("assistant", {"text": "Hello, world", "delta": "Hello, world"}, 1)
    ]


async def test_deltas_within_a_display_frame_are_held_and_sent_together() -> None:
    tr, seen = _translator()
    msg = AssistantMessage()
    tr.handle(MessageStart(msg))
    for chunk in ("a", "b", "c"):
        tr.handle(_grow(msg, chunk))
        await asyncio.sleep(0)  # a turn each: the first goes out, the next two wait for the frame
    assert [e["data"] for e in seen] == [{"text": "a", "delta": "a"}]
    await asyncio.sleep(DELTA_FRAME_S * 2)
    assert [e["data"] for e in seen] == [{"text": "a", "delta": "a"}, {"text": "abc", "delta": "bc"}]
    assert [e["seq"] for e in seen] == [1, 2]


async def test_deltas_further_apart_than_a_frame_are_separate_events() -> None:
    tr, seen = _translator()
    msg = AssistantMessage()
    tr.handle(MessageStart(msg))
    for chunk in ("a", "b", "c"):
        tr.handle(_grow(msg, chunk))
        await asyncio.sleep(DELTA_FRAME_S * 2)
    assert [e["data"] for e in seen] == [
        {"text": "a", "delta": "a"},
        {"text": "ab", "delta": "b"},
        {"text": "abc", "delta": "c"},
    ]


async def test_a_held_delta_goes_out_before_any_other_event() -> None:
    tr, seen = _translator()
    msg = AssistantMessage()
    tr.handle(MessageStart(msg))
    tr.handle(_grow(msg, "let me look"))
    tr.handle(ToolStart("c1", "read", {"path": "x"}))
    tr.handle(_grow(msg, "!"))
    tr.handle(MessageEnd(msg))
    tr.lifecycle_end(RunOutcome("r1", "agent:main:s", "ok", started_at=1, ended_at=2, stop_reason="stop"))
    await asyncio.sleep(0)  # the cancelled end-of-turn send adds nothing
    assert [(e["stream"], e["data"].get("delta") or e["data"].get("phase")) for e in seen] == [
        ("assistant", "let me look"),
        ("tool", "start"),
        ("assistant", "!"),
        ("lifecycle", "end"),
    ]
    assert seen[2]["data"]["text"] == "let me look!"
    assert [e["seq"] for e in seen] == [1, 2, 3, 4]


def test_without_a_running_loop_each_delta_is_sent_at_once() -> None:
    tr, seen = _translator()
    msg = AssistantMessage()
    tr.handle(_grow(msg, "x"))
    tr.handle(_grow(msg, "y"))
    assert [e["data"] for e in seen] == [{"text": "x", "delta": "x"}, {"text": "xy", "delta": "y"}]
