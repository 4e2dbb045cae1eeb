"""The raw model stream log (``logging.rawStream: true``): every provider stream event of every run.

For debugging providers only — it holds model output verbatim (never the prompt), so it is off by
default and written to its own files (``logs/raw-stream-YYYY-MM-DD.jsonl``, 0600, rotated by size
like the audit trail).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homarus.agents.events import MessageEnd
from homarus.audit.trail import AuditSink
from homarus.messages import (
    AssistantMessage,
    Done,
    StreamError,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

__all__ = ["stream_tap"]


def _event_json(event: Any) -> dict[str, Any]:
    if isinstance(event, TextDelta | ThinkingDelta | ToolCallDelta):
        return {"event": type(event).__name__, "index": event.index, "delta": event.delta}
    if isinstance(event, ToolCallStart):
        return {"event": "ToolCallStart", "index": event.index, "id": event.id, "name": event.name}
    if isinstance(event, ToolCallEnd):
        call = event.tool_call
        return {"event": "ToolCallEnd", "index": event.index, "id": call.id, "name": call.name, "args": call.arguments}
    if isinstance(event, Done | StreamError):
        message = event.message
        out: dict[str, Any] = {"event": type(event).__name__, "stopReason": message.stop_reason}
        out["usage"] = message.usage.to_json()
        if isinstance(event, StreamError):
            out["status"] = event.status
            out["error"] = getattr(message, "error_message", None)
        return out
    return {"event": type(event).__name__}


def stream_tap(sink: AuditSink, run_id: str, emit: Callable[[Any], None]) -> Callable[[Any], None]:
    """``emit`` that also writes each provider stream event of the run to ``sink``."""

    def tapped(loop_event: Any) -> None:
        stream_event = getattr(loop_event, "event", None)
        if stream_event is not None:
            sink.write({"runId": run_id, **_event_json(stream_event)})
        elif isinstance(loop_event, MessageEnd) and isinstance(loop_event.message, AssistantMessage):
            message = loop_event.message
            end = {"event": "MessageEnd", "stopReason": message.stop_reason, "usage": message.usage.to_json()}
            sink.write({"runId": run_id, **end})
        emit(loop_event)

    return tapped
