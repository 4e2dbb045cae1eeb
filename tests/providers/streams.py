"""Event-stream helpers shared by the provider adapter tests."""

from __future__ import annotations

from typing import Any

from homarus.messages import (
    AssistantMessage,
    Done,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

__all__ = ["final", "summarise"]


def summarise(events: list[StreamEvent]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, TextDelta):
            out.append(("text", e.index, e.delta))
        elif isinstance(e, ThinkingDelta):
            out.append(("thinking", e.index, e.delta))
        elif isinstance(e, ToolCallStart):
            out.append(("start", e.index, e.id, e.name))
        elif isinstance(e, ToolCallDelta):
            out.append(("args", e.index, e.delta))
        elif isinstance(e, ToolCallEnd):
            out.append(("end", e.index, e.tool_call.arguments))
        elif isinstance(e, Done):
            out.append(("done", e.message.stop_reason))
        else:
            out.append(("error", e.message.stop_reason, e.status))
    return out


def final(events: list[StreamEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, Done | StreamError)
    assert sum(isinstance(e, Done | StreamError) for e in events) == 1
    return last.message
