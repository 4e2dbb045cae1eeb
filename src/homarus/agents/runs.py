"""Active runs by session: abort handles, steering and follow-up queues, completion futures."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from homarus.messages import UserMessage
from homarus.usage.ledger import ModelTally

__all__ = ["ActiveRun", "RunOutcome", "RunRegistry"]

Status = Literal["ok", "error", "timeout", "aborted"]


@dataclass
class RunOutcome:
    run_id: str
    session_key: str
    status: Status
    text: str = ""
    started_at: int = 0
    ended_at: int = 0
    stop_reason: str = "stop"
    error: str | None = None
    model: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    #: the reply was only the silent token: deliver nothing
    silent: bool = False

    def to_payload(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "durationMs": max(0, self.ended_at - self.started_at),
            "stopReason": self.stop_reason,
            "model": self.model,
        }
        if self.status in ("aborted", "timeout"):
            meta["aborted"] = True
        if self.status == "timeout":
            meta["timedOut"] = True
        if self.usage:
            meta["usage"] = self.usage
        payload: dict[str, Any] = {"text": self.text} if self.text and not self.silent else {}
        if self.status == "error":
            payload = {"text": self.error or "error", "isError": True}
        return {"payloads": [payload] if payload else [], "meta": meta}


@dataclass
class ActiveRun:
    run_id: str
    session_key: str
    #: the trust of the request that started it (``RunRequest.trust``): only requests of the same
    #: trust are steered into it
    trust: str = "owner"
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    steering: list[UserMessage] = field(default_factory=list)
    follow_ups: list[UserMessage] = field(default_factory=list)
    #: extra run ids whose messages were merged into this run (steered in)
    merged_run_ids: list[str] = field(default_factory=list)
    #: id() of a steered message → the run it came from (its transcript entry names that run)
    owners: dict[int, str] = field(default_factory=dict)
    started_at: int = field(default_factory=lambda: int(time.time() * 1000))
    streaming: bool = False
    compacting: bool = False
    timed_out: bool = False
    abort_origin: str | None = None
    #: the run's audit writer (a RunAudit), when the gateway keeps an audit trail
    audit: Any = None
    #: (provider, model) → its calls' tokens and cost in this run (``homarus.usage``); a few entries
    model_usage: dict[tuple[str, str], ModelTally] = field(default_factory=dict)
    done: asyncio.Future[RunOutcome] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def take_steering(self) -> list[UserMessage]:
        out, self.steering = self.steering, []
        return out

    def take_follow_ups(self) -> list[UserMessage]:
        out, self.follow_ups = self.follow_ups, []
        return out


class RunRegistry:
    def __init__(self) -> None:
        self._by_session: dict[str, ActiveRun] = {}
        self._by_run: dict[str, ActiveRun] = {}

    def start(self, run: ActiveRun) -> None:
        self._by_session[run.session_key] = run
        self._by_run[run.run_id] = run

    def end(self, run: ActiveRun) -> None:
        if self._by_session.get(run.session_key) is run:
            del self._by_session[run.session_key]
        self._by_run.pop(run.run_id, None)
        for merged in run.merged_run_ids:
            self._by_run.pop(merged, None)

    def __len__(self) -> int:
        """Runs executing now (each is forgotten when it ends)."""
        return len(self._by_run)

    def for_session(self, session_key: str) -> ActiveRun | None:
        return self._by_session.get(session_key)

    def by_run_id(self, run_id: str) -> ActiveRun | None:
        return self._by_run.get(run_id)

    def alias(self, run_id: str, run: ActiveRun) -> None:
        run.merged_run_ids.append(run_id)
        self._by_run[run_id] = run

    def all(self) -> list[ActiveRun]:
        return list(self._by_session.values())
