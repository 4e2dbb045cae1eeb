"""How a run ends up: its :class:`RunOutcome` from the final message, and what the session entry
records of it. Pure functions over the run's state, shared by the runtime's end-of-run paths."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from homarus.agents import prompt
from homarus.agents.runs import RunOutcome

if TYPE_CHECKING:
    from homarus.agents.request import RunRequest
    from homarus.agents.runs import ActiveRun
    from homarus.messages import AssistantMessage

__all__ = ["MAX_DETAILS_BYTES", "bounded", "entry_changes", "failed_outcome", "model_ref_of", "run_outcome"]

MAX_DETAILS_BYTES = 8_192


def run_outcome(req: RunRequest, active: ActiveRun, final: Any, model_ref: str, default_timeout_s: int) -> RunOutcome:
    ended = int(time.time() * 1000)
    text = final.text if final is not None else ""
    stop = final.stop_reason if final is not None else "stop"
    usage = final.usage.to_json() if final is not None else {}
    if active.timed_out:
        status: Any = "timeout"
    elif stop == "aborted" or active.abort.is_set():
        status = "aborted"
    elif stop == "error":
        status = "error"
    else:
        status = "ok"
    silent = prompt.strip_silent(text) is None if text else False
    error = final.error_message if final is not None and status in ("error", "timeout") else None
    if status == "timeout":
        error = f"run timed out after {req.timeout_s or default_timeout_s}s"
    return RunOutcome(
        req.run_id,
        req.session_key.canonical,
        status,
        text,
        active.started_at,
        ended,
        stop,
        error,
        model_ref,
        usage,
        silent,
    )


def failed_outcome(req: RunRequest, active: ActiveRun, error: str) -> RunOutcome:
    return RunOutcome(
        req.run_id,
        req.session_key.canonical,
        "error",
        started_at=active.started_at,
        ended_at=int(time.time() * 1000),
        stop_reason="error",
        error=error,
    )


def entry_changes(outcome: RunOutcome, final: Any) -> dict[str, Any]:
    """The session entry's fields after the run (status, timing, token counts of the last call)."""
    status = {"ok": "done", "error": "failed", "timeout": "timeout", "aborted": "killed"}[outcome.status]
    changes: dict[str, Any] = {
        "status": status,
        "endedAt": outcome.ended_at,
        "runtimeMs": outcome.ended_at - outcome.started_at,
        "abortedLastRun": True if outcome.status in ("aborted", "timeout") else None,
    }
    if final is not None and final.usage.total_tokens:
        changes.update(
            inputTokens=final.usage.input,
            outputTokens=final.usage.output,
            totalTokens=final.usage.total_tokens,
            model=final.model,
            modelProvider=final.provider,
        )
    return changes


def model_ref_of(message: AssistantMessage) -> str:
    return f"{message.provider}/{message.model}" if message.provider else message.model


def bounded(message: dict[str, Any]) -> dict[str, Any]:
    """Tool ``details`` are for clients and logs; keep the transcript small by truncating big ones."""
    details = message.get("details")
    if details is None:
        return message
    raw = json.dumps(details, default=str)
    if len(raw) <= MAX_DETAILS_BYTES:
        return message
    return {**message, "details": {"truncated": True, "bytes": len(raw), "preview": raw[:2000]}}
