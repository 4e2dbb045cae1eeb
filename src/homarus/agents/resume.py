"""Where an interrupted run stands, read from its transcript, and how it is closed or continued.

Every message a run writes carries its ``runId`` (a message steered into a running run carries the
run it came from; a prompt that merged queued messages lists their runs in ``joined``), and a
turn's tool calls are written *before* the tools run (their results after). So after a crash the
transcript tells, for one run:

* nothing of it was written: it never got going, and starts afresh;
* its last assistant message has tool calls without results: a tool was running. Those calls are
  recorded as aborted (an error result saying so); they are never executed again, and the model,
  if the run continues, decides what to do about it;
* its last message is a final answer: it had finished, only the bookkeeping was lost;
* anything else (its message, or tool results, waiting for the model): it continues with a model
  call on the history as it stands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from homarus.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    message_from_json,
)

if TYPE_CHECKING:
    from homarus.sessions.backend import TranscriptLog

__all__ = ["INTERRUPTED_TOOL_TEXT", "ResumePoint", "close_interrupted", "interrupted_notice", "resume_point"]

INTERRUPTED_TOOL_TEXT: Final = (
    "[interrupted: the gateway stopped while this tool call was running; it was not run again. "
    "Check its effects before repeating it.]"
)


@dataclass(frozen=True, slots=True)
class ResumePoint:
    #: the run's own message is in the transcript (it had begun)
    started: bool = False
    #: its final answer, when it had one
    final: AssistantMessage | None = None
    #: tool calls of its last assistant message that have no result (a tool was running)
    open_calls: list[ToolCall] = field(default_factory=list)


def resume_point(entries: list[dict[str, Any]], run_id: str) -> ResumePoint:
    """Read where ``run_id`` stands from a transcript's entries."""
    mine: list[Any] = []
    for entry in entries:
        if entry.get("type") != "message" or not isinstance(entry.get("message"), dict):
            continue
        joined = entry.get("joined")
        if entry.get("runId") == run_id or (isinstance(joined, list) and run_id in joined):
            try:
                mine.append(message_from_json(entry["message"]))
            except (KeyError, ValueError):
                continue
    if not mine:
        return ResumePoint()
    answered = {m.tool_call_id for m in mine if isinstance(m, ToolResultMessage)}
    last_assistant = next((m for m in reversed(mine) if isinstance(m, AssistantMessage)), None)
    open_calls = [c for c in last_assistant.tool_calls if c.id not in answered] if last_assistant else []
    last = mine[-1]
    final = None
    if isinstance(last, AssistantMessage) and not last.tool_calls and last.stop_reason not in ("error", "aborted"):
        final = last
    return ResumePoint(started=True, final=final, open_calls=open_calls)


def aborted_results(calls: list[ToolCall]) -> list[ToolResultMessage]:
    return [ToolResultMessage(c.id, c.name, [TextContent(INTERRUPTED_TOOL_TEXT)], is_error=True) for c in calls]


def interrupted_notice(what: str) -> AssistantMessage:
    """The visible note an interrupted run leaves in its session (not a model's words)."""
    text = f"[{what} was interrupted: the gateway stopped before it finished. Ask again to continue.]"
    return AssistantMessage([TextContent(text)], api="gateway", provider="homarus", model="gateway-notice")


def close_interrupted(transcript: TranscriptLog, run_id: str, notice: AssistantMessage | None) -> ResumePoint:
    """End a run that will not continue: its open tool calls recorded as aborted, then ``notice``.

    One append, tagged with the run id; nothing is written when the run left nothing to close and
    no notice is wanted. Returns where the run stood.
    """
    point = resume_point(transcript.read().entries, run_id)
    messages: list[Any] = aborted_results(point.open_calls)
    if notice is not None and point.started and point.final is None:
        messages.append(notice)
    if messages:
        transcript.append_many([{"type": "message", "message": m.to_json(), "runId": run_id} for m in messages])
    return point
