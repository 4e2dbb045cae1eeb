"""Compacting a session when asked (``sessions.compact``, the chat's ``/compact``).

Runs compact by themselves when the context fills (``turn.Turn.maintain``); this is the same
summary on request, between runs. It takes the session's lane like a run, and registers itself
as the session's running work (``compacting``), so a message arriving meanwhile waits for it
instead of steering into it. A session with a run going or queued is refused: the caller retries,
as with the original. ``max_messages`` trims instead of summarising: the model's context keeps
the newest messages and starts with a note that earlier ones were trimmed; the transcript keeps
every message (nothing is deleted, unlike the original's line trim).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from homarus.agents import setup
from homarus.agents.compaction import context_tokens, estimate_tokens, is_summary_message, summary_message
from homarus.agents.compactor import RunCompactor
from homarus.agents.history import EntryIds, load_history
from homarus.agents.hook_bridge import RuntimeHooks
from homarus.agents.runs import ActiveRun, RunRegistry
from homarus.agents.stream import EventTranslator
from homarus.errors import HomarusError, InvalidRequest
from homarus.io_lane import run_on_lane
from homarus.messages import ToolResultMessage
from homarus.plugins import events as ev

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from homarus.config.schema import HomarusConfig
    from homarus.messages import Message
    from homarus.plugins.runner import HookRunner
    from homarus.providers.registry import ModelRegistry
    from homarus.queue.lanes import LaneQueue
    from homarus.sessions.backend import TranscriptLog
    from homarus.sessions.keys import SessionKey
    from homarus.sessions.manager import SessionManager, SessionRef

__all__ = ["TRIMMED", "CompactHost", "CompactReport", "compact_session"]

#: the summary a trim leaves in front of the kept messages
TRIMMED = "Earlier messages of this conversation were trimmed from the context on request."


class CompactHost(Protocol):
    """What compacting uses of the runtime (``runtime.AgentRuntime``)."""

    sessions: SessionManager
    models: ModelRegistry
    lanes: LaneQueue
    hooks: HookRunner
    runs: RunRegistry
    on_event: Callable[[dict[str, Any]], None]
    spawn: Callable[[Coroutine[Any, Any, Any]], Any]

    def config(self) -> HomarusConfig: ...


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What ``sessions.compact`` answers (the original's fields)."""

    compacted: bool
    ok: bool = True
    reason: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    first_kept_entry_id: str | None = None
    #: messages left in the context after a trim
    kept: int | None = None

    def to_json(self, key: str) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "key": key, "compacted": self.compacted}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.kept is not None:
            out["kept"] = self.kept
        if self.tokens_before is not None:
            out["result"] = {
                "tokensBefore": self.tokens_before,
                "tokensAfter": self.tokens_after,
                "firstKeptEntryId": self.first_kept_entry_id,
            }
        return out


async def compact_session(
    host: CompactHost, key: SessionKey, *, instructions: str | None = None, max_messages: int | None = None
) -> CompactReport:
    """Summarise (or, with ``max_messages``, trim) the session's context now.

    Raises :class:`InvalidRequest` while a run of the session is going or waiting (retry after).
    """
    name = key.canonical
    if host.runs.for_session(name) is not None:
        raise InvalidRequest(f"Session {name} has an active run; retry after it finishes.")
    if host.lanes.waiting(f"session:{name}"):
        raise InvalidRequest(f"Session {name} has queued work; retry after it finishes.")
    return await host.lanes.run(f"session:{name}", lambda: _compact(host, key, instructions, max_messages))


async def _compact(
    host: CompactHost, key: SessionKey, instructions: str | None, max_messages: int | None
) -> CompactReport:
    ref = await asyncio.to_thread(host.sessions.get, key)
    if ref is None:
        return CompactReport(False, reason="no sessionId")
    transcript = host.sessions.transcript_for(ref)
    history, ids = await run_on_lane(load_history, transcript)
    if not history:
        return CompactReport(False, reason="no transcript")
    if max_messages is not None:
        report = await run_on_lane(_trim, transcript, history, ids, max_messages)
        if report.compacted:
            count = (ref.entry.compaction_count or 0) + 1
            await asyncio.to_thread(host.sessions.update_entry, key, {"compactionCount": count})
        return report
    cfg = host.config()
    active = ActiveRun(f"compact-{uuid.uuid4().hex[:12]}", key.canonical)
    active_timer = asyncio.get_running_loop().call_later(float(cfg.agents.defaults.timeout_seconds), active.abort.set)
    host.runs.start(active)  # a message arriving now waits for the summary (it never steers into it)
    try:
        return await _summarise(host, key, ref, transcript, active, history, ids, instructions)
    finally:
        active_timer.cancel()
        host.runs.end(active)
        if not active.done.done():
            active.done.cancel()


async def _summarise(
    host: CompactHost,
    key: SessionKey,
    ref: SessionRef,
    transcript: TranscriptLog,
    active: ActiveRun,
    history: list[Message],
    ids: list[str],
    instructions: str | None,
) -> CompactReport:
    cfg = host.config()
    settings = cfg.agents.defaults.compaction
    model = setup.model_chain(host.models, cfg, key, None, ref.entry.model_override)[0]
    ctx = ev.HookContext(
        agent_id=key.agent_id,
        session_key=key.canonical,
        session_id=ref.entry.session_id,
        run_id=active.run_id,
        trigger="manual",
    )

    def compactor(keep_recent_tokens: int) -> RunCompactor:
        return RunCompactor(
            sessions=host.sessions,
            transcript=transcript,
            model=model,
            active=active,
            translator=EventTranslator(active.run_id, key.canonical, host.on_event, verbose=False),
            hooks=RuntimeHooks(host.hooks, ctx, host.spawn, abort=active.abort),
            entry_ids=EntryIds(history, ids),
            keep_recent_tokens=keep_recent_tokens,
            instructions=instructions,
        )

    before = context_tokens(history)
    try:
        # as the original: when the configured tail is the whole context, summarise all but the
        # newest turn rather than answer that there is nothing to do
        compacted = await compactor(settings.keep_recent_tokens).compact(history, will_retry=False)
        if compacted is None:
            compacted = await compactor(0).compact(history, will_retry=False)
    except HomarusError as exc:
        return CompactReport(False, ok=False, reason=exc.message)
    if compacted is None:
        done = is_summary_message(history[0]) and len(history) <= 2
        reason = "Already compacted" if done else "Nothing to compact (session too small)"
        return CompactReport(False, ok=False, reason=reason)
    first_kept = compacted[1] if len(compacted) > 1 else None
    return CompactReport(
        True,
        tokens_before=before,
        tokens_after=sum(estimate_tokens(m) for m in compacted),
        first_kept_entry_id=EntryIds(history, ids).get(first_kept) if first_kept is not None else None,
    )


def _trim(transcript: TranscriptLog, history: list[Message], ids: list[str], max_messages: int) -> CompactReport:
    """Keep the newest ``max_messages`` messages (more when the cut would split a tool call from
    its result) behind a note that earlier ones were trimmed."""
    if len(history) <= max_messages:
        return CompactReport(False, kept=len(history))
    cut = len(history) - max_messages
    while cut > 0 and isinstance(history[cut], ToolResultMessage):
        cut -= 1
    if cut <= 0 or not ids[cut]:
        return CompactReport(False, kept=len(history))
    before = context_tokens(history)
    transcript.append({"type": "compaction", "summary": TRIMMED, "firstKeptEntryId": ids[cut], "tokensBefore": before})
    kept = history[cut:]
    after = estimate_tokens(summary_message(TRIMMED)) + sum(estimate_tokens(m) for m in kept)
    return CompactReport(True, kept=len(kept), tokens_before=before, tokens_after=after, first_kept_entry_id=ids[cut])
