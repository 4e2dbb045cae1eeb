"""A session's transcript as model history, and the run's writes back into it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homarus.agents.compaction import summary_message
from homarus.agents.resume import aborted_results
from homarus.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, message_from_json
from homarus.sessions.backend import TranscriptLog

__all__ = ["EntryIds", "answer_open_calls", "load_history", "persist_messages", "previous_summary"]

#: where :func:`load_history` keeps its state in ``TranscriptLog.derived`` (entry ids are never this)
_STATE_KEY = "#history"


@dataclass(slots=True)
class _History:
    """The history of the first ``consumed`` entries of a transcript's cached view, before the tool
    calls still open at its end are answered: a turn extends it with the entries added since the
    last one instead of converting the whole transcript again."""

    consumed: int = 0
    messages: list[Message] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    #: tool calls of the last assistant message still without a result, in call order
    open_calls: list[ToolCall] = field(default_factory=list)

    def add(self, message: Message, entry_id: str) -> None:
        if isinstance(message, ToolResultMessage):
            if self.open_calls:
                self.open_calls = [c for c in self.open_calls if c.id != message.tool_call_id]
        else:
            self.close()
            if isinstance(message, AssistantMessage):
                self.open_calls = [b for b in message.content if isinstance(b, ToolCall)]
        self.messages.append(message)
        self.ids.append(entry_id)

    def close(self) -> None:
        """Answer the open calls as interrupted, right after their turn."""
        if self.open_calls:
            self.messages.extend(aborted_results(self.open_calls))
            self.ids.extend("" for _ in self.open_calls)
            self.open_calls = []

    def result(self) -> tuple[list[Message], list[str]]:
        """Copies (the caller may extend them), the calls open at the end answered."""
        tail = aborted_results(self.open_calls)
        return [*self.messages, *tail], [*self.ids, *("" for _ in tail)]


class EntryIds:
    """The transcript entry each message of a run is stored as (a compaction names the first one it
    keeps): the loaded history's are looked up when asked, not mapped on every turn."""

    __slots__ = ("_added", "_history", "_ids")

    def __init__(self, history: list[Message], ids: list[str]) -> None:
        self._history, self._ids = history, ids
        self._added: dict[int, str] = {}  # by id(): the run holds each of these messages until it ends

    def __setitem__(self, message: Message, entry_id: str) -> None:
        self._added[id(message)] = entry_id

    def get(self, message: Message) -> str:
        """Its entry id; "" when it was never stored (a synthetic result, a message a hook withheld)."""
        found = self._added.get(id(message))
        if found is not None:
            return found
        return next((i for m, i in zip(self._history, self._ids, strict=False) if m is message), "")


def load_history(transcript: TranscriptLog) -> tuple[list[Message], list[str]]:
    """(messages for the model, their entry ids). The latest compaction replaces what it summarised;
    every tool call without a result gets an "interrupted" one right after its turn.

    Only the entries added since the last call are converted (``TranscriptLog.derived`` keeps the
    rest with the cached view it came from); a compaction among them starts over from it."""
    entries = transcript.read().entries
    kept = transcript.derived.get(_STATE_KEY)
    state = kept if isinstance(kept, _History) and kept.consumed <= len(entries) else None
    if state is None or any(e.get("type") == "compaction" for e in entries[state.consumed :]):
        state = _from_last_compaction(entries)
    else:
        _extend(state, entries[state.consumed :])
    state.consumed = len(entries)
    transcript.derived[_STATE_KEY] = state
    return state.result()


def _from_last_compaction(entries: list[dict[str, Any]]) -> _History:
    state = _History()
    start = 0
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].get("type") == "compaction":
            kept = entries[i].get("firstKeptEntryId")
            ids = [e.get("id") for e in entries]
            start = ids.index(kept) if kept in ids else i + 1
            state.add(summary_message(str(entries[i].get("summary", ""))), "")
            break
    _extend(state, entries[start:])
    return state


def _extend(state: _History, entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        if entry.get("type") != "message" or not isinstance(entry.get("message"), dict):
            continue
        try:
            message = message_from_json(entry["message"])
        except (KeyError, ValueError):
            continue  # written by a newer version in a shape we cannot replay: leave it out
        state.add(message, str(entry.get("id", "")))


def answer_open_calls(messages: list[Message], ids: list[str]) -> tuple[list[Message], list[str]]:
    """Give every tool call without a result an "interrupted" one, right after its turn.

    The runtime writes a turn's tool calls before they run, and recovery closes a run cut short by
    a crash; a call still open here escaped both (a transcript from elsewhere, a journal lost with
    its disk). Models refuse a history whose tool calls go unanswered, so the session would be stuck.
    """
    state = _History()
    for message, entry_id in zip(messages, ids, strict=True):
        state.add(message, entry_id)
    return state.result()


def previous_summary(transcript: TranscriptLog) -> str | None:
    for entry in reversed(transcript.read().entries):
        if entry.get("type") == "compaction":
            return str(entry.get("summary", ""))
    return None


def persist_messages(transcript: TranscriptLog, messages: list[Message], **extra: Any) -> list[dict[str, Any]]:
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
