"""Make a history safe to send: every tool call answered, failed turns left out.

A provider rejects a request whose history has a tool call without its result, and an errored
or aborted assistant message carries nothing the model should build on. Both happen after
aborts and crashes, so the history is repaired before every request (the transcript itself is
never rewritten).
"""

from __future__ import annotations

from homarus.messages import AssistantMessage, Message, TextContent, ToolResultMessage

__all__ = ["NO_RESULT_TEXT", "repair_for_replay"]

NO_RESULT_TEXT = "No result provided"


def repair_for_replay(messages: list[Message]) -> list[Message]:
    out: list[Message] = []
    open_calls: dict[str, str] = {}  # id -> tool name, in call order

    def close_open() -> None:
        for call_id, name in open_calls.items():
            out.append(ToolResultMessage(call_id, name, [TextContent(NO_RESULT_TEXT)], is_error=True))
        open_calls.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            if message.tool_call_id in open_calls:
                del open_calls[message.tool_call_id]
                out.append(message)
            # a result whose call was dropped (or answered already) would be invalid: skip it
            continue
        close_open()
        if isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue
            for call in message.tool_calls:
                open_calls[call.id] = call.name
        out.append(message)
    close_open()
    return out
