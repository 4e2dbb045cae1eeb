"""Make a history safe to send: every tool call answered, failed turns left out.

A provider rejects a request whose history has a tool call without its result, and an errored
or aborted assistant message carries nothing the model should build on. Both happen after
aborts and crashes, so the history is repaired before every request (the transcript itself is
never rewritten).
"""

from __future__ import annotations

from homarus.messages import AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage

__all__ = ["NO_RESULT_TEXT", "repair_for_replay"]

NO_RESULT_TEXT = "No result provided"


def repair_for_replay(messages: list[Message]) -> list[Message]:
    """It runs over the whole history before every model request, so the usual case (nothing to
    repair) is kept to a type check or two per message."""
    out: list[Message] = []
    open_calls: dict[str, str] = {}  # id -> tool name, in call order
    for message in messages:
        if isinstance(message, ToolResultMessage):
            if open_calls.pop(message.tool_call_id, None) is not None:
                out.append(message)
            # a result whose call was dropped (or answered already) would be invalid: skip it
            continue
        if open_calls:
            _close(open_calls, out)
        if isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue
            for block in message.content:
                if isinstance(block, ToolCall):
                    open_calls[block.id] = block.name
        out.append(message)
    _close(open_calls, out)
    return out


def _close(open_calls: dict[str, str], out: list[Message]) -> None:
    for call_id, name in open_calls.items():
        out.append(ToolResultMessage(call_id, name, [TextContent(NO_RESULT_TEXT)], is_error=True))
    open_calls.clear()
