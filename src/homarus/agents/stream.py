"""Loop events → the gateway's ``agent`` event payloads, with a per-run ``seq`` starting at 1.

Streams: ``lifecycle`` (start, retry, fallback, end, error), ``assistant`` (cumulative text plus
the new delta), ``tool`` (start, update, result), ``compaction`` (start, end). Each turn's
messages are handed to ``on_turn_end`` for persistence, in order, one write at a time.

Text deltas are sent at most once per display frame (:data:`DELTA_FRAME_S`, 16 ms) per run: a
delta after a quiet frame goes out at the end of its event-loop turn; the ones that follow within
the frame are held and go out together as one ``assistant`` event whose ``delta`` is their
concatenation (and whose ``text`` is the cumulative text, as always). A fast model (or a network
read that carries many chunks) then costs one frame per recipient per 16 ms instead of one per
chunk, and nobody can see the difference. A held delta is sent before any other event of the run,
so the order clients see never changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from homarus.agents.events import (
    Fallback,
    LoopEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    Retry,
    ToolEnd,
    ToolStart,
    ToolUpdate,
    TurnEnd,
)
from homarus.agents.runs import RunOutcome
from homarus.messages import AssistantMessage, Message, TextDelta

__all__ = ["DELTA_FRAME_S", "EventTranslator"]

MAX_EVENT_RESULT_CHARS = 8_000
#: text deltas of a run are sent at most once per this many seconds (a 60 Hz display frame)
DELTA_FRAME_S = 0.016  # tool results in events are for display; the transcript keeps all


class EventTranslator:
    def __init__(
        self, run_id: str, session_key: str, sink: Callable[[dict[str, Any]], None], *, verbose: bool = False
    ) -> None:
        self.run_id = run_id
        self.session_key = session_key
        self.sink = sink
        self.verbose = verbose
        self._seq = itertools.count(1)
        self._text = ""
        self._streamed = False
        self._messages: list[Message] = []
        self._chain: asyncio.Future[None] | None = None
        self._pending: list[str] = []  # text deltas of this loop turn, not yet sent
        self._pending_message: AssistantMessage | None = None
        self._flush_soon: asyncio.Handle | None = None
        self._last_delta_sent = -DELTA_FRAME_S
        self.on_turn_end: Callable[[list[Message]], Awaitable[None]] | None = None

    def _emit(self, stream: str, data: dict[str, Any]) -> None:
        if self._pending:
            self.flush()
        self.sink(
            {
                "runId": self.run_id,
                "seq": next(self._seq),
                "stream": stream,
                "ts": int(time.time() * 1000),
                "data": data,
                "sessionKey": self.session_key,
            }
        )

    def _delta(self, message: AssistantMessage, delta: str) -> None:
        self._pending.append(delta)
        self._pending_message = message  # its text is read when sent: once per event, not per chunk
        if self._flush_soon is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): nothing to wait for
            self.flush()
            return
        wait = self._last_delta_sent + DELTA_FRAME_S - loop.time()
        self._flush_soon = loop.call_soon(self.flush) if wait <= 0 else loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Send the text deltas held so far, as one event."""
        if self._flush_soon is not None:
            self._flush_soon.cancel()
            self._flush_soon = None
        if self._pending and self._pending_message is not None:
            delta = "".join(self._pending)
            self._pending.clear()
            self._text = self._pending_message.text
            with contextlib.suppress(RuntimeError):
                self._last_delta_sent = asyncio.get_running_loop().time()
            self._emit("assistant", {"text": self._text, "delta": delta})

    # -- lifecycle ------------------------------------------------------------------------------
    def lifecycle_start(self, started_at: int) -> None:
        self._emit("lifecycle", {"phase": "start", "startedAt": started_at})

    def lifecycle_end(self, outcome: RunOutcome) -> None:
        if outcome.status == "error":
            self.lifecycle_error(outcome.error or "error", ended_at=outcome.ended_at)
            return
        data: dict[str, Any] = {
            "phase": "end",
            "startedAt": outcome.started_at,
            "endedAt": outcome.ended_at,
            "stopReason": outcome.stop_reason,
        }
        if outcome.status in ("aborted", "timeout"):
            data["aborted"] = True
        if outcome.status == "timeout":
            data["error"] = outcome.error
        self._emit("lifecycle", data)

    def lifecycle_error(self, error: str, *, ended_at: int | None = None) -> None:
        self._emit("lifecycle", {"phase": "error", "error": error, "endedAt": ended_at or int(time.time() * 1000)})

    def compaction(self, phase: str, will_retry: bool) -> None:
        self._emit("compaction", {"phase": phase, "willRetry": will_retry})
        if phase == "end" and will_retry:
            self._text, self._streamed = "", False  # the retried turn streams its text again

    # -- loop events ----------------------------------------------------------------------------
    def handle(self, event: LoopEvent) -> None:
        if isinstance(event, MessageUpdate) and isinstance(event.event, TextDelta):
            self._streamed = True
            self._delta(event.message, event.event.delta)
            return
        if self._pending:
            self.flush()
        if isinstance(event, MessageStart):
            if isinstance(event.message, AssistantMessage):
                self._text, self._streamed = "", False
        elif isinstance(event, MessageEnd):
            self._messages.append(event.message)
            message = event.message
            if isinstance(message, AssistantMessage) and not self._streamed and message.text:
                self._text = message.text
                self._emit("assistant", {"text": message.text, "delta": message.text})
        elif isinstance(event, ToolStart):
            self._emit(
                "tool", {"phase": "start", "name": event.name, "toolCallId": event.tool_call_id, "args": event.args}
            )
        elif isinstance(event, ToolUpdate):
            self._emit(
                "tool",
                {
                    "phase": "update",
                    "name": event.name,
                    "toolCallId": event.tool_call_id,
                    "partialResult": event.partial,
                },
            )
        elif isinstance(event, ToolEnd):
            text = event.result.text
            if len(text) > MAX_EVENT_RESULT_CHARS:
                text = text[:MAX_EVENT_RESULT_CHARS] + f"… [{len(text) - MAX_EVENT_RESULT_CHARS} more chars]"
            self._emit(
                "tool",
                {
                    "phase": "result",
                    "name": event.name,
                    "toolCallId": event.tool_call_id,
                    "meta": {"durationMs": event.duration_ms},
                    "isError": event.result.is_error,
                    "result": text,
                },
            )
        elif isinstance(event, Retry):
            self._emit(
                "lifecycle",
                {
                    "phase": "retry",
                    "attempt": event.attempt,
                    "maxAttempts": event.max_attempts,
                    "delayMs": event.delay_ms,
                    "error": event.error,
                },
            )
        elif isinstance(event, Fallback):
            self._emit(
                "lifecycle",
                {"phase": "fallback", "from": event.from_model, "to": event.to_model, "reason": event.reason},
            )
        elif isinstance(event, TurnEnd):
            self._persist()

    def _persist(self) -> None:
        if self.on_turn_end is None or not self._messages:
            return
        batch, self._messages = self._messages, []
        previous = self._chain
        callback = self.on_turn_end

        async def write() -> None:
            if previous is not None:
                await previous
            await callback(batch)

        self._chain = asyncio.ensure_future(write())

    async def drain(self) -> None:
        """Wait until every turn handed to ``on_turn_end`` has been written."""
        if self._chain is not None:
            await self._chain
