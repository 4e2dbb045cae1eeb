"""Heartbeat and wake: periodic agent turns in the main session, and system events that feed them.

Every ``agents.defaults.heartbeat.every`` (30 min; ``0m``/``off`` disables) the default agent's
main session gets one turn with the heartbeat prompt (agent-loop.md §5.3). A reply that starts or
ends with ``HEARTBEAT_OK`` has the token stripped; when at most ``ackMaxChars`` characters remain
it is an acknowledgement: nothing is delivered and the session's ``updatedAt`` keeps its old value
(a quiet heartbeat does not make a session look active). Anything else is an alert, broadcast as a
``heartbeat`` event.

A heartbeat is skipped — and retried after ``busyRetry`` — while a run is in flight in the main
session; skipped when ``HEARTBEAT.md`` holds only headings and blank lines and no system event is
waiting. :meth:`Heartbeats.wake` queues a system event (text from ``/hooks/wake``, cron, the
``wake`` method) for the main session's next turn, and with ``mode: now`` runs a heartbeat at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from homarus.config.values import parse_duration_ms
from homarus.tasks import cancel_and_wait

if TYPE_CHECKING:
    from homarus.plugins.runner import HookRunner
    from homarus.sessions.manager import SessionManager
    from homarus.usecases.ports import Publisher, WakeMode
    from homarus.usecases.runs import RunHost

    class HeartbeatHost(RunHost, Protocol):
        """What a heartbeat uses: the run services, the main session, the plugins' prompt hooks."""

        sessions: SessionManager
        hooks: HookRunner

        @property
        def bus(self) -> Publisher: ...
        def built(self, service: str) -> bool: ...
        def workspace_dir(self, agent_id: str) -> Path: ...


__all__ = [
    "ACK_WORD",
    "DEFAULT_PROMPT",
    "Heartbeats",
    "SystemEvents",
    "heartbeat_file_empty",
    "strip_token",
]

log = logging.getLogger("homarus.heartbeat")

ACK_WORD: Final = "HEARTBEAT_OK"
DEFAULT_PROMPT: Final = (
    "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. Do not infer or repeat old tasks "
    "from prior chats. If nothing needs attention, reply HEARTBEAT_OK."
)
SYSTEM_PLUGIN_ID: Final = "system"
MAX_EVENTS_PER_SESSION: Final = 100
MAX_EVENT_CHARS: Final = 20_000
_EDGE_PUNCT = " \t\r\n.,:;!-—*_`"


def strip_token(text: str, ack_max_chars: int) -> tuple[str, bool]:
    """(the reply without a leading/trailing ``HEARTBEAT_OK``, whether it is only an acknowledgement)."""
    rest = text.strip()
    stripped = False
    if rest.startswith(ACK_WORD):
        rest, stripped = rest[len(ACK_WORD) :].lstrip(_EDGE_PUNCT), True
    if rest.endswith(ACK_WORD):
        rest, stripped = rest[: -len(ACK_WORD)].rstrip(_EDGE_PUNCT), True
    return rest, stripped and len(rest) <= ack_max_chars


def heartbeat_file_empty(path: Path) -> bool:
    """``HEARTBEAT.md`` exists and holds only headings, blank lines and empty list items."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return all(not line.strip() or re.match(r"\s*(#|[-*+]\s*$)", line) for line in text.splitlines())


class SystemEvents:
    """Text waiting for a session's next turn (bounded per session, oldest dropped first).

    In memory, as in the original: a wake is a nudge, not a message to keep across restarts (a
    webhook's agent run is what the run journal makes durable).
    """

    def __init__(self, max_per_session: int = MAX_EVENTS_PER_SESSION, max_sessions: int = 1000) -> None:
        self.max_per_session = max_per_session
        self.max_sessions = max_sessions
        self._queues: dict[str, deque[tuple[int, str]]] = {}

    def add(self, session_key: str, text: str) -> None:
        queue = self._queues.get(session_key)
        if queue is None:
            if len(self._queues) >= self.max_sessions:
                self._queues.pop(next(iter(self._queues)))
            queue = self._queues[session_key] = deque(maxlen=self.max_per_session)
        queue.append((int(time.time() * 1000), text[:MAX_EVENT_CHARS]))

    def __len__(self) -> int:
        """Sessions with events waiting (at most ``max_sessions``)."""
        return len(self._queues)

    def pending(self, session_key: str) -> int:
        return len(self._queues.get(session_key, ()))

    def drain(self, session_key: str) -> list[dict[str, Any]]:
        """The events as next-turn injections (prepended context), oldest first; the queue empties."""
        queue = self._queues.pop(session_key, None) or deque()
        return [
            {"id": f"sys-{ts}-{i}", "plugin_id": SYSTEM_PLUGIN_ID, "text": text, "placement": "prepend_context"}
            for i, (ts, text) in enumerate(queue)
        ]


class Heartbeats:
    def __init__(self, host: HeartbeatHost) -> None:
        self.host = host
        self.enabled = True
        self.last: dict[str, Any] | None = None
        self._now = asyncio.Event()
        self._reasons: list[str] = []
        self._task: asyncio.Task[None] | None = None
        #: drained by the runtime into each turn of a main session
        self.events = SystemEvents()

    # -- config -------------------------------------------------------------------------------------
    def interval_s(self) -> float:
        every = self.host.config.agents.defaults.heartbeat.every
        return 0.0 if every in ("0", "off") else parse_duration_ms(every) / 1000

    def main_key(self, agent_id: str | None = None) -> str:
        cfg = self.host.config
        agent = agent_id if agent_id in cfg.agents.ids else cfg.agents.default_id
        return f"agent:{agent}:{cfg.session.main_key}"

    # -- wake and system events ---------------------------------------------------------------------
    async def wake(self, text: str | None, *, mode: WakeMode = "now", agent_id: str | None = None, source: str) -> None:
        """Queue ``text`` as a system event on the main session; ``now`` also runs a heartbeat."""
        if text and text.strip():
            self.events.add(self.main_key(agent_id), f"System event ({source}): {text.strip()}")
        if mode == "now":
            self.request(source)

    def request(self, reason: str) -> None:
        self._reasons.append(reason)
        self._now.set()

    # -- the loop -----------------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _loop(self) -> None:
        next_due = time.monotonic() + (self.interval_s() or 3600)
        while True:
            interval = self.interval_s()
            timeout = max(0.0, next_due - time.monotonic()) if interval else None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._now.wait()
            requested = self._now.is_set()
            reason = ",".join(self._reasons) or "interval"
            self._now.clear()
            self._reasons.clear()
            if not requested and not interval:
                continue
            try:
                outcome = await self.run_once(reason)
            except Exception:
                log.exception("heartbeat failed")
                outcome = {"status": "failed"}
            if outcome.get("status") == "skipped" and outcome.get("reason") == "busy":
                next_due = time.monotonic() + self._busy_retry_s()
            else:
                next_due = time.monotonic() + (interval or 3600)

    def _busy_retry_s(self) -> float:
        return parse_duration_ms(self.host.config.agents.defaults.heartbeat.busy_retry) / 1000

    # -- one heartbeat ------------------------------------------------------------------------------
    async def run_once(self, reason: str = "manual") -> dict[str, Any]:
        # the run machinery is imported by the first heartbeat, not by a gateway that only waits for it
        from homarus.agents.request import RunRequest
        from homarus.usecases.runs import run_and_finish, start_run

        host = self.host
        key = host.sessions.resolve_key(self.main_key())
        if not self.enabled:
            return self._record({"status": "skipped", "reason": "disabled"})
        if host.built("runtime") and host.runtime.runs.for_session(key.canonical) is not None:
            return self._record({"status": "skipped", "reason": "busy"})
        workspace = host.workspace_dir(key.agent_id)
        pending = self.events.pending(key.canonical)
        if not pending and heartbeat_file_empty(workspace / "HEARTBEAT.md") and reason == "interval":
            return self._record({"status": "skipped", "reason": "empty-heartbeat-file"})
        cfg = host.config.agents.defaults.heartbeat
        before = await asyncio.to_thread(host.sessions.get, key)
        run_id = f"heartbeat-{uuid.uuid4()}"
        message = await self._prompt(cfg.prompt or DEFAULT_PROMPT, key.canonical, key.agent_id, run_id)
        origin = {"kind": "heartbeat", "reason": reason}
        req = RunRequest(run_id=run_id, session_key=key, message=message, trigger="heartbeat", origin=origin)
        await start_run(host, req, "heartbeat", {"reason": reason})
        started = time.monotonic()
        outcome = await run_and_finish(host, req, "heartbeat")
        text, ack = strip_token(outcome.text, cfg.ack_max_chars)
        record: dict[str, Any] = {
            "runId": run_id,
            "sessionKey": key.canonical,
            "reason": reason,
            "durationMs": int((time.monotonic() - started) * 1000),
        }
        if outcome.status != "ok":
            return self._record({**record, "status": "failed", "error": outcome.error})
        if ack or outcome.silent:
            if before is not None:  # an acknowledgement does not make the session look active
                updated = before.entry.updated_at
                await asyncio.to_thread(host.sessions.update_entry, key, {"updatedAt": updated}, touch=False)
            return self._record({**record, "status": "ok-token"})
        return self._record({**record, "status": "sent", "preview": text[:200], "text": text})

    async def _prompt(self, prompt: str, session_key: str, agent_id: str, run_id: str) -> str:
        """The heartbeat prompt with what ``heartbeat_prompt_contribution`` plugins add around it."""
        if not self.host.built("hooks") or not self.host.hooks.has("heartbeat_prompt_contribution"):
            return prompt
        from homarus.plugins import events as ev

        hooks = self.host.hooks
        ctx = ev.HookContext(agent_id=agent_id, session_key=session_key, run_id=run_id, trigger="heartbeat")
        event = ev.HeartbeatPromptContributionEvent(session_key, agent_id, "heartbeat", context=ctx)
        outcome = await hooks.modify("heartbeat_prompt_contribution", event)
        result = outcome.result
        parts = [getattr(result, "prepend_context", None), prompt, getattr(result, "append_context", None)]
        return "\n\n".join(p for p in parts if p)

    def _record(self, outcome: dict[str, Any]) -> dict[str, Any]:
        event = {"ts": int(time.time() * 1000), **outcome}
        self.last = event
        self.host.bus.broadcast("heartbeat", event, droppable=True)
        return event
