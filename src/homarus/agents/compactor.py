"""Compaction inside a run: summarise with the run's model, record the entry, fire the hooks."""

from __future__ import annotations

import asyncio
from typing import Any

from homarus.agents import compaction
from homarus.agents.history import EntryIds, previous_summary
from homarus.agents.hook_bridge import RuntimeHooks
from homarus.agents.runs import ActiveRun
from homarus.agents.stream import EventTranslator
from homarus.errors import Unavailable
from homarus.messages import Context, Done, Message, StreamError, StreamOptions, UserMessage
from homarus.plugins import events as ev
from homarus.providers.registry import ResolvedModel
from homarus.sessions.backend import TranscriptLog
from homarus.sessions.manager import SessionManager

__all__ = ["RunCompactor"]


class RunCompactor:
    def __init__(
        self,
        *,
        sessions: SessionManager,
        transcript: TranscriptLog,
        model: ResolvedModel,
        active: ActiveRun,
        translator: EventTranslator,
        hooks: RuntimeHooks,
        entry_ids: EntryIds,
        keep_recent_tokens: int,
        instructions: str | None = None,
    ) -> None:
        self.sessions = sessions
        self.transcript = transcript
        self.model = model
        self.active = active
        self.translator = translator
        self.hooks = hooks
        self.entry_ids = entry_ids
        self.keep_recent_tokens = keep_recent_tokens
        #: what the summary should focus on (``/compact <instructions>``)
        self.instructions = instructions

    async def compact(self, history: list[Message], *, will_retry: bool) -> list[Message] | None:
        """The compacted history (summary + kept tail), or None when nothing could be summarised."""
        self.active.compacting = True
        self.translator.compaction("start", will_retry)
        tokens = compaction.context_tokens(history)
        file = str(self.transcript.path)
        self.hooks.fire(
            "before_compaction", lambda: ev.BeforeCompactionEvent(len(history), tokens, file, self.hooks.ctx)
        )
        try:
            previous = await asyncio.to_thread(previous_summary, self.transcript)
            result = await compaction.compact(
                history,
                previous_summary=previous,
                keep_recent_tokens=self.keep_recent_tokens,
                summarize=self._summarize,
                custom_instructions=self.instructions,
            )
            if result is None:
                return None
            first_kept = self.entry_ids.get(history[result.first_kept_index])
            if not first_kept:
                return None  # the cut would keep a message we never stored: cannot describe it
            await asyncio.to_thread(
                self.transcript.append,
                {
                    "type": "compaction",
                    "summary": result.summary,
                    "firstKeptEntryId": first_kept,
                    "tokensBefore": result.tokens_before,
                },
            )
            await asyncio.to_thread(self._count)
            self.hooks.fire(
                "after_compaction",
                lambda: ev.AfterCompactionEvent(
                    len(history), result.first_kept_index, result.tokens_after, file, self.hooks.ctx
                ),
            )
            return [compaction.summary_message(result.summary), *history[result.first_kept_index :]]
        finally:
            self.active.compacting = False
            self.translator.compaction("end", will_retry)

    def _count(self) -> None:
        key = self.sessions.resolve_key(self.active.session_key)
        ref = self.sessions.get(key)
        if ref is not None:
            self.sessions.update_entry(key, {"compactionCount": (ref.entry.compaction_count or 0) + 1})

    async def _summarize(self, system: str, text: str) -> str:
        context = Context(system, [UserMessage(text)], [])
        options = StreamOptions(api_key=self.model.api_key, abort=self.active.abort)
        final: Any = None
        async for event in self.model.provider.stream(self.model.info, context, options):
            if isinstance(event, Done):
                final = event.message
            elif isinstance(event, StreamError):
                raise Unavailable(f"summarizing for compaction failed: {event.message.error_message}")
        return final.text if final is not None else ""
