"""What a chat view reads of a session: its shown messages, each with its place in the transcript,
and where the session's runs stand.

``chat.history`` and ``GET /sessions/{key}/history`` show the same rows. A chat client also
reconciles what it sent with what the gateway holds (the original's Control UI does, after every
run, before it sends its next queued message): a user message carries the ``idempotencyKey`` of the
run that wrote it, ``inputReceipts`` answer for the run ids it asks about, and ``sessionInfo``
says whether a run is still active. Without them that UI keeps the next message queued forever.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from homarus.agents.prompt import strip_silent
from homarus.sessions.views import session_row

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.sessions.keys import SessionKey
    from homarus.sessions.manager import SessionRef

__all__ = ["HistoryEntry", "session_info", "shown", "transcript_rows"]


def shown(message: dict[str, Any], row_max_bytes: int, omitted: str) -> dict[str, Any] | None:
    """``message`` as a chat view shows it: None for a silent reply, a marker when it is too big."""
    content = message.get("content")
    if message.get("role") == "assistant" and isinstance(content, list):
        text = "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
        calls = any(isinstance(b, dict) and b.get("type") == "toolCall" for b in content)
        if text and not calls and strip_silent(text) is None:
            return None
    if len(orjson.dumps(message)) > row_max_bytes:
        return {
            "role": message.get("role"),
            "content": [{"type": "text", "text": omitted}],
            "timestamp": message.get("timestamp"),
        }
    return message


@dataclass(frozen=True)
class HistoryEntry:
    """One transcript message with where it sits: ``seq`` counts messages from 1."""

    seq: int
    entry_id: str | None
    run_id: str | None
    message: dict[str, Any]
    #: the runs folded into this one message (collect mode), besides ``run_id``
    joined: tuple[str, ...] = ()

    def runs(self) -> tuple[str, ...]:
        return ((self.run_id,) if self.run_id else ()) + self.joined


def transcript_rows(entries: list[dict[str, Any]]) -> list[HistoryEntry]:
    out: list[HistoryEntry] = []
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict):
            continue
        run_id = entry.get("runId")
        joined = entry.get("joined")
        out.append(
            HistoryEntry(
                len(out) + 1,
                entry.get("id") if isinstance(entry.get("id"), str) else None,
                run_id if isinstance(run_id, str) else None,
                message,
                tuple(j for j in joined if isinstance(j, str)) if isinstance(joined, list) else (),
            )
        )
    return out


def session_info(
    gw: GatewayContext, key: SessionKey, ref: SessionRef | None, rows: list[HistoryEntry]
) -> dict[str, Any]:
    """The session's row with where its runs stand (``hasActiveRun``, ``activeRunIds``, ``lastRunId``)."""
    main = key.canonical == f"agent:{key.agent_id}:{gw.config.session.main_key}"
    info: dict[str, Any] = (
        session_row(key, ref.entry)
        if ref is not None
        else {"key": key.canonical, "kind": "direct", "agentId": key.agent_id}
    )
    active = gw.runtime.runs.for_session(key.canonical) if gw.built("runtime") else None
    active_ids = [active.run_id, *active.merged_run_ids] if active is not None else []
    last = next((r.run_id for r in reversed(rows) if r.run_id), None)
    touched = info.get("updatedAt")
    info.update(
        isMain=main,
        classification="main" if main else "session",
        chatType="direct",
        displayName=info.get("label") or info.get("displayName") or key.canonical.rsplit(":", 1)[-1],
        hasActiveRun=active is not None,
        activeRunIds=active_ids,
        abortedLastRun=info.get("status") == "aborted",
        effectiveQueueMode=gw.config.messages.queue.mode,
        isBackground=False,
        hasAutomation=False,
        visibility="shared",  # one owner: every session is theirs
        participants=[],
        expandedParticipants=[],
        participantCount=0,
        archived=False,
        pinned=False,
        unread=False,
    )
    if touched is not None:
        info.update(lastActivityAt=touched, lastInteractionAt=touched)
    if active is not None:
        info["status"] = "running"
        info["lastRunId"] = active.run_id
    elif last is not None:
        info["lastRunId"] = last
    return info
