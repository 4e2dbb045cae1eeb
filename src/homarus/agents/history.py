"""A session's transcript as model history, and the run's writes back into it."""

from __future__ import annotations

from typing import Any

from homarus.agents.compaction import summary_message
from homarus.agents.resume import aborted_results
from homarus.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage, message_from_json
from homarus.sessions.transcript import Transcript

__all__ = ["answer_open_calls", "load_history", "persist_messages", "previous_summary"]

_MESSAGE_TYPES = (UserMessage, AssistantMessage, ToolResultMessage)


def load_history(transcript: Transcript) -> tuple[list[Message], list[str]]:
    """(messages for the model, their entry ids). The latest compaction replaces what it summarised."""
    entries = transcript.read().entries
    start = 0
    summary: str | None = None
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].get("type") == "compaction":
            summary = str(entries[i].get("summary", ""))
            kept = entries[i].get("firstKeptEntryId")
            ids = [e.get("id") for e in entries]
            start = ids.index(kept) if kept in ids else i + 1
            break
    messages: list[Message] = []
    ids_out: list[str] = []
    if summary is not None:
        messages.append(summary_message(summary))
        ids_out.append("")
    parsed = transcript.derived  # the messages of earlier turns, rebuilt once per cached view
    for entry in entries[start:]:
        if entry.get("type") != "message" or not isinstance(entry.get("message"), dict):
            continue
        entry_id = entry.get("id")
        message = parsed.get(entry_id) if isinstance(entry_id, str) else None
        if not isinstance(message, _MESSAGE_TYPES):
            try:
                message = message_from_json(entry["message"])
            except (KeyError, ValueError):
                continue  # written by a newer version in a shape we cannot replay: leave it out
            if isinstance(entry_id, str):
                parsed[entry_id] = message
        messages.append(message)
        ids_out.append(str(entry.get("id", "")))
    return answer_open_calls(messages, ids_out)


def answer_open_calls(messages: list[Message], ids: list[str]) -> tuple[list[Message], list[str]]:
    """Give every tool call without a result an "interrupted" one, right after its turn.

    The runtime writes a turn's tool calls before they run, and recovery closes a run cut short by
    a crash; a call still open here escaped both (a transcript from elsewhere, a journal lost with
    its disk). Models refuse a history whose tool calls go unanswered, so the session would be stuck.
    """
    out: list[Message] = []
    out_ids: list[str] = []
    open_calls: list[ToolCall] = []

    def close() -> None:
        out.extend(aborted_results(open_calls))
        out_ids.extend("" for _ in open_calls)
        open_calls.clear()

    for message, entry_id in zip(messages, ids, strict=True):
        if isinstance(message, ToolResultMessage):
            open_calls[:] = [c for c in open_calls if c.id != message.tool_call_id]
        else:
            if open_calls:  # (the common case, none open, costs nothing: this runs per message per turn)
                close()
            if isinstance(message, AssistantMessage):
                open_calls.extend(b for b in message.content if isinstance(b, ToolCall))
        out.append(message)
        out_ids.append(entry_id)
    close()
    return out, out_ids


def previous_summary(transcript: Transcript) -> str | None:
    for entry in reversed(transcript.read().entries):
        if entry.get("type") == "compaction":
            return str(entry.get("summary", ""))
    return None


def persist_messages(transcript: Transcript, messages: list[Message], **extra: Any) -> list[dict[str, Any]]:
    """Append messages as one all-or-nothing write (a tool call and its results land together)."""
    if not messages:
        return []
    entries: list[dict[str, Any]] = []
    for message in messages:
        data = message.to_json()
        if isinstance(message, AssistantMessage) and extra:
            data.update(extra)
        entries.append({"type": "message", "message": data})
    return transcript.append_many(entries)
