"""Make a history safe to send: every tool call answered, failed turns left out.

A provider rejects a request whose history has a tool call without its result, and an errored
or aborted assistant message carries nothing the model should build on. Both happen after
aborts and crashes, so the history is repaired before every request (the transcript itself is
never rewritten).
"""

from __future__ import annotations

from typing import Any

from homarus.messages import AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage, kept_prefix

__all__ = ["NO_RESULT_TEXT", "repair_for_replay"]

NO_RESULT_TEXT = "No result provided"


#: where :func:`repair_for_replay` keeps its last pass in a ``cache``
_KEY = "#replay"


def repair_for_replay(messages: list[Message], cache: dict[str, Any] | None = None) -> list[Message]:
    """It runs over the whole history before every model request, so the usual case (nothing to
    repair) is kept to a type check or two per message; with a ``cache`` (``Context.cache``), the
    part the last request shared with this one (its history, the same objects) is not gone over
    again."""
    out: list[Message] = []
    cuts: list[int] = []  # per message, len(out) after it (-1: a call still open there)
    done = 0
    kept = cache.get(_KEY) if cache is not None else None
    if kept is not None:
        before, before_out, before_cuts = kept
        done = kept_prefix(before, before_cuts, messages)
        if done:
            out, cuts = before_out[: before_cuts[done - 1]], before_cuts[:done]
    open_calls: dict[str, str] = {}  # id -> tool name, in call order
    for message in messages[done:] if done else messages:
        cuts.append(_step(message, open_calls, out))
    if cache is not None:
        cache[_KEY] = (list(messages), list(out), cuts)
    _close(open_calls, out)
    return out


def _step(message: Message, open_calls: dict[str, str], out: list[Message]) -> int:
    if isinstance(message, ToolResultMessage):
        if open_calls.pop(message.tool_call_id, None) is not None:
            out.append(message)
        # a result whose call was dropped (or answered already) would be invalid: skip it
        return -1 if open_calls else len(out)
    if open_calls:
        _close(open_calls, out)
    if isinstance(message, AssistantMessage):
        if message.stop_reason in ("error", "aborted"):
            return len(out)
        for block in message.content:
            if isinstance(block, ToolCall):
                open_calls[block.id] = block.name
    out.append(message)
    return -1 if open_calls else len(out)


def _close(open_calls: dict[str, str], out: list[Message]) -> None:
    for call_id, name in open_calls.items():
        out.append(ToolResultMessage(call_id, name, [TextContent(NO_RESULT_TEXT)], is_error=True))
    open_calls.clear()
