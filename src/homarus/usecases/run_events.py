"""Fan-out of run events: ``agent`` events to operators, ``chat`` events derived from them.

``chat`` deltas carry the cumulative text, are throttled to one per 150 ms per run and are
droppable; a pending delta is flushed before a tool starts and before the final. Tool events go
only to connections that asked for them (``caps: ["tool-events"]``). Run completion snapshots
feed ``agent.wait``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from homarus.agents.prompt import strip_silent
from homarus.security.scopes import READ
from homarus.usecases.ports import Publisher

if TYPE_CHECKING:
    from homarus.queue.dedupe import DedupeCache

__all__ = ["RUN_ENDS", "RunEventSink", "RunEvents", "RunSnapshot", "link_run_ends"]

#: the cluster channel on which a gateway says that a run ended on it (``link_run_ends``)
RUN_ENDS = "homarus_run_ends"
#: the longest error text a run-end notice carries (notices are small; the journal has it all)
_NOTICE_ERROR_CHARS = 1000

DELTA_INTERVAL_S = 0.150
#: the ``connect`` capability of a client that wants tool events
TOOL_EVENTS = "tool-events"
T = TypeVar("T")


@dataclass
class RunSnapshot:
    run_id: str
    status: str  # running | ok | error | timeout
    started_at: int | None = None
    ended_at: int | None = None
    error: str | None = None


@dataclass
class _ChatState:
    session_key: str
    text: str = ""
    seq: int = 0
    last_sent: float = 0.0
    sent_text: str = ""
    timer: asyncio.TimerHandle | None = None


class RunEventSink(Publisher, Protocol):
    def release_run(self, run_id: str) -> None:
        """The run ended: forget which connection started it."""
        ...


@dataclass
class RunEvents:
    bus: RunEventSink
    #: the idempotency cache of ``chat.send`` (a retry after the final event gets the outcome)
    dedupe: DedupeCache
    #: finished runs whose snapshot and "recorded" mark are kept (``gateway.memory.runsKept``)
    kept: int = 1000
    _chat: dict[str, _ChatState] = field(default_factory=dict)
    snapshots: dict[str, RunSnapshot] = field(default_factory=dict)
    _waiters: dict[str, list[asyncio.Future[RunSnapshot]]] = field(default_factory=dict)
    #: runs whose end is stored (journal, idempotency cache), most recent last; bounded
    _recorded: dict[str, None] = field(default_factory=dict)
    _recorded_waiters: dict[str, list[asyncio.Future[bool]]] = field(default_factory=dict)
    #: told of every run that ends here (a cluster's gateway tells the others: ``link_run_ends``)
    announce: Callable[[RunSnapshot], None] | None = None

    def __call__(self, event: dict[str, Any]) -> None:
        stream = event["stream"]
        data = event["data"]
        run_id = event["runId"]
        bus, key = self.bus, event.get("sessionKey") or ""
        if stream == "tool":
            self._flush(run_id)
            bus.session_event("agent", event, session_key=key, run_id=run_id, guard=READ, cap=TOOL_EVENTS)
        else:
            bus.session_event("agent", event, session_key=key, run_id=run_id, guard=READ)
        if stream == "assistant":
            self._delta(run_id, event["sessionKey"], data.get("text", ""), event["seq"])
        elif stream == "lifecycle":
            phase = data.get("phase")
            if phase == "start":
                self._set(RunSnapshot(run_id, "running", started_at=data.get("startedAt")))
            elif phase == "end":
                self._settle_chat(run_id, "aborted" if data.get("aborted") else "ok")
                status = "timeout" if data.get("aborted") else "ok"
                snap = self.snapshots.get(run_id) or RunSnapshot(run_id, status)
                self._set(RunSnapshot(run_id, status, snap.started_at, data.get("endedAt"), data.get("error")))
                self._final(run_id, event, "aborted" if data.get("aborted") else "final")
            elif phase == "error":
                self._settle_chat(run_id, "error", data.get("error"))
                snap = self.snapshots.get(run_id) or RunSnapshot(run_id, "error")
                self._set(RunSnapshot(run_id, "error", snap.started_at, data.get("endedAt"), data.get("error")))
                self._final(run_id, event, "error")

    def retained(self) -> dict[str, int]:
        """Entries held per run: streaming chats, snapshots, recorded ends, waiters."""
        return {
            "chatStreams": len(self._chat),
            "runSnapshots": len(self.snapshots),
            "runsRecorded": len(self._recorded),
            "runWaiters": len(self._waiters) + len(self._recorded_waiters),
        }

    # -- agent.wait support -------------------------------------------------------------------
    def _set(self, snap: RunSnapshot) -> None:
        self.snapshots[snap.run_id] = snap
        _bound(self.snapshots, self.kept)
        if snap.status != "running":
            _resolve(self._waiters, snap.run_id, snap)

    def _settle_chat(self, run_id: str, status: str, error: str | None = None) -> None:
        """A client that saw the final event and retries must get the outcome, not "in_flight"."""
        cached = self.dedupe.get(f"chat:{run_id}")
        if cached is not None and not cached.terminal:
            ok = status != "error"
            self.dedupe.put(
                f"chat:{run_id}",
                status,
                ok=ok,
                error=None if ok else {"code": "UNAVAILABLE", "message": error or "run failed"},
            )

    def finished(
        self,
        run_id: str,
        status: str,
        started_at: int | None,
        ended_at: int | None,
        error: str | None,
        *,
        here: bool = True,
    ) -> None:
        """The end of ``run_id`` is stored (called after the journal and the idempotency cache have
        it): ``agent.wait`` snapshots, and :meth:`wait_recorded` returns. Also for a run id that had
        no events of its own (steered or collected). ``here``: it ran on this gateway (not: another
        gateway of the cluster said so), so :attr:`announce` is told."""
        mapped = {"aborted": "timeout"}.get(status, status)
        snap = RunSnapshot(run_id, mapped, started_at, ended_at, error)
        self._set(snap)
        if here and self.announce is not None:
            self.announce(snap)
        self._recorded[run_id] = None
        _bound(self._recorded, self.kept)
        _resolve(self._recorded_waiters, run_id, True)

    async def wait_recorded(self, run_id: str, timeout_s: float) -> bool:
        """Wait until the end of ``run_id`` is stored, not only announced: its end event goes out
        just before the journal commits it. False on timeout."""
        if run_id in self._recorded:
            return True
        recorded = await _wait_for(self._recorded_waiters, run_id, timeout_s)
        return recorded is not None

    async def wait(self, run_id: str, timeout_s: float) -> RunSnapshot | None:
        snap = self.snapshots.get(run_id)
        if snap is not None and snap.status != "running":
            return snap
        return await _wait_for(self._waiters, run_id, timeout_s)

    # -- chat ---------------------------------------------------------------------------------
    def _delta(self, run_id: str, session_key: str, text: str, seq: int) -> None:
        state = self._chat.setdefault(run_id, _ChatState(session_key))
        state.text, state.seq = text, seq
        now = time.monotonic()
        if now - state.last_sent >= DELTA_INTERVAL_S:
            self._send_delta(run_id, state)
        elif state.timer is None:
            delay = DELTA_INTERVAL_S - (now - state.last_sent)
            state.timer = asyncio.get_running_loop().call_later(delay, self._send_delta, run_id, state)

    def _send_delta(self, run_id: str, state: _ChatState) -> None:
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        if state.text == state.sent_text or strip_silent(state.text) is None:
            return
        state.last_sent = time.monotonic()
        state.sent_text = state.text
        payload = {
            "runId": run_id,
            "sessionKey": state.session_key,
            "seq": state.seq,
            "state": "delta",
            "message": _assistant(state.text),
        }
        bus = self.bus
        bus.session_event("chat", payload, session_key=state.session_key, run_id=run_id, guard=READ, droppable=True)

    def _flush(self, run_id: str) -> None:
        state = self._chat.get(run_id)
        if state is not None and state.timer is not None:
            self._send_delta(run_id, state)

    def _final(self, run_id: str, event: dict[str, Any], kind: str) -> None:
        self._flush(run_id)
        state = self._chat.pop(run_id, None)
        text = state.text if state else ""
        payload: dict[str, Any] = {
            "runId": run_id,
            "sessionKey": event["sessionKey"],
            "seq": event["seq"],
            "state": kind,
        }
        if kind == "error":
            payload["errorMessage"] = event["data"].get("error")
            payload["errorKind"] = "timeout" if "timed out" in str(payload["errorMessage"]) else "unknown"
        elif text and strip_silent(text) is not None:
            payload["message"] = _assistant(text)
        if kind == "final":
            payload["stopReason"] = event["data"].get("stopReason")
        bus = self.bus
        bus.session_event("chat", payload, session_key=event["sessionKey"], run_id=run_id, guard=READ)
        bus.release_run(run_id)


def _bound(items: dict[str, Any], kept: int) -> None:
    """Keep a per-run dict to ``kept`` entries: past it, the oldest quarter goes (amortised)."""
    if len(items) > kept:
        for old in list(items)[: len(items) - kept + kept // 4]:
            del items[old]


def _resolve(waiters: dict[str, list[asyncio.Future[T]]], run_id: str, value: T) -> None:
    for fut in waiters.pop(run_id, []):
        if not fut.done():
            fut.set_result(value)


async def _wait_for(waiters: dict[str, list[asyncio.Future[T]]], run_id: str, timeout_s: float) -> T | None:
    """Wait for :func:`_resolve` of ``run_id``; None on timeout (the waiter is removed either way)."""
    fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    waiters.setdefault(run_id, []).append(fut)
    try:
        async with asyncio.timeout(timeout_s):
            return await fut
    except TimeoutError:
        return None
    finally:
        mine = waiters.get(run_id)
        if mine and fut in mine:
            mine.remove(fut)
            if not mine:
                del waiters[run_id]


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": int(time.time() * 1000)}


def link_run_ends(
    events: RunEvents,
    publish: Callable[[dict[str, Any]], object],
    subscribe: Callable[[Callable[[dict[str, Any]], None]], None],
) -> None:
    """Tell the other gateways of a cluster when a run ends here, and learn when one ends there:
    ``agent.wait`` and an idempotent retry answer on any gateway, whichever ran the run (they then
    read its outcome from the shared journal). ``publish`` sends a notice, ``subscribe`` takes the
    handler of received ones."""

    def heard(notice: dict[str, Any]) -> None:
        run_id, status = notice.get("runId"), notice.get("status")
        if not isinstance(run_id, str) or not isinstance(status, str):
            return
        started, ended, error = notice.get("startedAt"), notice.get("endedAt"), notice.get("error")
        events.finished(
            run_id,
            status,
            started if isinstance(started, int) else None,
            ended if isinstance(ended, int) else None,
            error if isinstance(error, str) else None,
            here=False,
        )

    def tell(snap: RunSnapshot) -> None:
        error = snap.error[:_NOTICE_ERROR_CHARS] if snap.error else None
        notice = {"runId": snap.run_id, "status": snap.status, "startedAt": snap.started_at}
        publish({**notice, "endedAt": snap.ended_at, "error": error})

    subscribe(heard)
    events.announce = tell
