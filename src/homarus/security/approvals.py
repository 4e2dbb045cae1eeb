"""Pending operator approvals: request, wait, resolve (pure asyncio, no gateway imports).

One :class:`ApprovalManager` per kind ("plugin" now, "exec" later). A request gets a unique id
(plugin ids start with ``plugin:``) and a deadline; waiters get ``allow-once``, ``allow-always``,
``deny`` or ``None`` (timed out, cancelled, or no approval route: the caller treats it as deny).
Resolved records linger ``linger_s`` so a late ``wait`` still learns the decision, then vanish.
Everything is bounded: pending records (refused with Unavailable past ``max_pending``), lingering
records and the allow-always memory (oldest dropped first).

Expiry and lingering run on loop timers and are also checked lazily against ``clock`` on every
access, so tests can drive them with an injected clock. All methods must be called on the event
loop's thread (``request`` needs a running loop).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from homarus.errors import InvalidRequest, NotFound, Unavailable

__all__ = [
    "DECISIONS",
    "ApprovalManager",
    "ApprovalOutcome",
    "ApprovalRecord",
    "Decision",
    "EndReason",
    "plugin_remember_key",
]

log = logging.getLogger("homarus.approvals")

Decision = Literal["allow-once", "allow-always", "deny"]
#: why a record ended: an operator decided, its deadline passed, its waiter aborted, no route
EndReason = Literal["resolved", "timeout", "cancelled", "no-approval-route", "shutdown"]
DECISIONS: Final[frozenset[str]] = frozenset({"allow-once", "allow-always", "deny"})
NOT_FOUND_MESSAGE: Final = "unknown or expired approval id"
MAX_PENDING: Final = 1000
MAX_LINGERING: Final = 1000
MAX_REMEMBERED: Final = 1000
MAX_ID_LENGTH: Final = 256


def plugin_remember_key(plugin_id: str | None, tool_name: str | None) -> str | None:
    """The allow-always memory key of one plugin's approvals for one tool (None: not rememberable).

    Shared by the gateway methods and in-process requesters so both see the same memory.
    """
    if not plugin_id or not tool_name:
        return None
    return f"{plugin_id}\x00{tool_name}"


def _not_found() -> NotFound:
    return NotFound(NOT_FOUND_MESSAGE, details={"reason": "APPROVAL_NOT_FOUND"})


@dataclass(frozen=True, slots=True)
class ApprovalOutcome:
    """How an in-process request ended: the decision, or why there is none."""

    id: str | None
    decision: Decision | None
    reason: EndReason | None
    resolved_by: str | None = None


@dataclass(slots=True, eq=False)
class ApprovalRecord:
    """One approval request and, once ended, its outcome."""

    id: str
    kind: str
    request: dict[str, Any]
    created_at_ms: int
    expires_at_ms: int
    decision: Decision | None = None
    resolved_by: str | None = None
    resolved_at_ms: int | None = None
    #: None while pending
    reason: EndReason | None = None
    allow_always: bool = True
    remember_key: str | None = None
    _future: asyncio.Future[Decision | None] | None = field(default=None, repr=False)
    _timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    @property
    def pending(self) -> bool:
        return self.resolved_at_ms is None

    def summary(self) -> dict[str, Any]:
        """The wire shape of list items and ``*.approval.requested`` events."""
        return {
            "id": self.id,
            "request": self.request,
            "createdAtMs": self.created_at_ms,
            "expiresAtMs": self.expires_at_ms,
        }


class ApprovalManager:
    """Pending approvals of one kind, with their waiters, deadlines and the allow-always memory."""

    def __init__(
        self,
        kind: str,
        *,
        on_requested: Callable[[ApprovalRecord], None],
        on_resolved: Callable[[ApprovalRecord], None],
        linger_s: float = 15.0,
        clock: Callable[[], float] = time.time,
        max_pending: int = MAX_PENDING,
        max_lingering: int = MAX_LINGERING,
        max_remembered: int = MAX_REMEMBERED,
    ) -> None:
        if not kind or ":" in kind:
            raise ValueError(f"invalid approval kind {kind!r}")
        self.kind = kind
        self._on_requested = on_requested
        self._on_resolved = on_resolved
        self.linger_s = linger_s
        self._clock = clock
        self.max_pending = max_pending
        self.max_lingering = max_lingering
        self.max_remembered = max_remembered
        self._prefix = f"{kind}:" if kind == "plugin" else ""
        self._records: dict[str, ApprovalRecord] = {}  # insertion order = creation order
        self._remembered: dict[str, None] = {}  # ordered set, oldest first

    # -- queries --------------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def list(self) -> list[ApprovalRecord]:
        """Pending records, oldest first."""
        self._sweep()
        return [r for r in self._records.values() if r.pending]

    def get(self, id: str) -> ApprovalRecord | None:
        """A pending or lingering record by its full id."""
        self._sweep()
        return self._records.get(id)

    def __len__(self) -> int:
        return len(self.list())

    # -- request and wait -----------------------------------------------------------------------
    def request(
        self,
        payload: dict[str, Any],
        *,
        timeout_ms: int,
        id: str | None = None,
        allow_always: bool = True,
        remember_key: str | None = None,
    ) -> ApprovalRecord:
        """Register a pending approval and announce it (``on_requested``).

        With a ``remember_key`` an operator already answered allow-always, the record is created
        already resolved (``allow-always``, resolved by ``"remembered"``) and nothing is announced.
        """
        loop = asyncio.get_running_loop()
        if timeout_ms < 0:
            raise InvalidRequest("timeoutMs must be >= 0")
        self._sweep()
        approval_id = self._new_id(id)
        existing = self._records.get(approval_id)
        if existing is not None:
            if existing.pending:
                raise InvalidRequest("approval id already pending")
            self._drop(existing)
        if sum(1 for r in self._records.values() if r.pending) >= self.max_pending:
            raise Unavailable("too many pending approvals; try again later", retryable=True, retry_after_ms=1000)
        now = self.now_ms()
        record = ApprovalRecord(
            id=approval_id,
            kind=self.kind,
            request=payload,
            created_at_ms=now,
            expires_at_ms=now + timeout_ms,
            allow_always=allow_always,
            remember_key=remember_key,
        )
        record._future = loop.create_future()
        self._records[approval_id] = record
        if allow_always and remember_key is not None and remember_key in self._remembered:
            self._remembered[remember_key] = self._remembered.pop(remember_key)  # refresh its age
            self._finish(record, "allow-always", "resolved", resolved_by="remembered", announce=False)
            return record
        record._timer = loop.call_later(timeout_ms / 1000, self._expire_if_pending, record)
        self._call(self._on_requested, record)
        return record

    async def wait(self, id: str, *, abort: asyncio.Event | None = None) -> Decision | None:
        """The decision for ``id`` (full id), or None when it timed out or was cancelled.

        Setting ``abort`` while waiting cancels the approval itself (reason ``cancelled``): the
        requester gave up, so operators should no longer be asked.
        """
        record = self.get(id)
        if record is None or record._future is None:
            raise _not_found()
        future = record._future
        if future.done():
            return future.result()
        if abort is None:
            return await asyncio.shield(future)
        if abort.is_set():
            self._finish(record, None, "cancelled")
            return None
        aborted = asyncio.ensure_future(abort.wait())
        try:
            racers: set[asyncio.Future[Any]] = {future, aborted}
            await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        if not future.done():
            self._finish(record, None, "cancelled")
        return future.result()

    async def ask(
        self,
        payload: dict[str, Any],
        *,
        timeout_ms: int,
        abort: asyncio.Event | None = None,
        remember_key: str | None = None,
        route_available: bool = True,
    ) -> Decision | None:
        """Request and wait in one step (in-process requesters); None = timed out, cancelled, no route."""
        outcome = await self.ask_outcome(
            payload, timeout_ms=timeout_ms, abort=abort, remember_key=remember_key, route_available=route_available
        )
        return outcome.decision

    async def ask_outcome(
        self,
        payload: dict[str, Any],
        *,
        timeout_ms: int,
        abort: asyncio.Event | None = None,
        remember_key: str | None = None,
        route_available: bool = True,
        allow_always: bool = True,
    ) -> ApprovalOutcome:
        """Like :meth:`ask`, also saying why there is no decision (exec's askFallback needs it)."""
        if abort is not None and abort.is_set():
            return ApprovalOutcome(None, None, "cancelled")  # the run is already aborted: ask nobody
        record = self.request(payload, timeout_ms=timeout_ms, remember_key=remember_key, allow_always=allow_always)
        if record.pending and not route_available:
            self.expire(record.id, "no-approval-route")
        decision = await self.wait(record.id, abort=abort)
        return ApprovalOutcome(record.id, decision, record.reason, record.resolved_by)

    # -- resolution -------------------------------------------------------------------------------
    def resolve(self, id_or_prefix: str, decision: str, *, resolved_by: str | None) -> ApprovalRecord:
        """Record an operator's decision for a pending approval (full id or a unique prefix)."""
        if decision not in DECISIONS:
            raise InvalidRequest("invalid decision")
        record = self.lookup_pending(id_or_prefix)
        if decision == "allow-always" and not record.allow_always:
            raise InvalidRequest(
                "allow-always is unavailable for this approval",
                details={"reason": "APPROVAL_ALLOW_ALWAYS_UNAVAILABLE", "allowedDecisions": ["allow-once", "deny"]},
            )
        self._finish(record, cast(Decision, decision), "resolved", resolved_by=resolved_by)
        return record

    def expire(self, id: str, reason: EndReason = "timeout") -> ApprovalRecord:
        """End a pending approval now with no decision (e.g. ``no-approval-route``)."""
        record = self.get(id)
        if record is None or not record.pending:
            raise _not_found()
        self._finish(record, None, reason)
        return record

    def cancel_all(self, reason: EndReason = "shutdown") -> int:
        """End every pending approval with no decision (gateway shutdown); returns how many."""
        pending = self.list()
        for record in pending:
            self._finish(record, None, reason)
        return len(pending)

    def lookup_pending(self, id_or_prefix: str) -> ApprovalRecord:
        """The pending record ``id_or_prefix`` names: exact id first, then a unique prefix.

        A prefix may omit the kind prefix (``plugin:``), which operators rarely type.
        """
        self._sweep()
        text = id_or_prefix.strip()
        if not text:
            raise _not_found()
        exact = self._records.get(text)
        if exact is not None:
            if not exact.pending:
                raise _not_found()
            return exact
        matches = [
            r
            for r in self._records.values()
            if r.pending and (r.id.startswith(text) or (self._prefix and r.id[len(self._prefix) :].startswith(text)))
        ]
        if not matches:
            raise _not_found()
        if len(matches) > 1:
            raise InvalidRequest("ambiguous approval id prefix; use the full id")
        return matches[0]

    # -- allow-always memory ----------------------------------------------------------------------
    def remembers(self, key: str) -> bool:
        return key in self._remembered

    def remember(self, key: str) -> None:
        self._remembered.pop(key, None)
        self._remembered[key] = None
        while len(self._remembered) > self.max_remembered:
            self._remembered.pop(next(iter(self._remembered)))

    def forget(self, key: str) -> bool:
        if key not in self._remembered:
            return False
        del self._remembered[key]
        return True

    def remembered(self) -> builtins.list[str]:
        return list(self._remembered)

    # -- internals --------------------------------------------------------------------------------
    def _new_id(self, requested: str | None) -> str:
        if requested is None:
            return f"{self._prefix}{uuid.uuid4()}"
        text = requested.strip()
        if not text or len(text) > MAX_ID_LENGTH:
            raise InvalidRequest("invalid approval id")
        if self._prefix:
            return text if text.startswith(self._prefix) else f"{self._prefix}{text}"
        if text.startswith("plugin:"):
            raise InvalidRequest("approval ids starting with 'plugin:' are reserved")
        return text

    def _finish(
        self,
        record: ApprovalRecord,
        decision: Decision | None,
        reason: EndReason,
        *,
        resolved_by: str | None = None,
        announce: bool = True,
    ) -> None:
        if not record.pending:
            return
        record.decision = decision
        record.reason = reason
        record.resolved_by = resolved_by
        record.resolved_at_ms = self.now_ms()
        if record._timer is not None:
            record._timer.cancel()
            record._timer = None
        if record._future is not None and not record._future.done():
            record._future.set_result(decision)
        if decision == "allow-always" and record.remember_key is not None:
            self.remember(record.remember_key)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            record._timer = loop.call_later(self.linger_s, self._forget_record, record)
        self._bound_lingering()
        if announce:
            self._call(self._on_resolved, record)

    def _expire_if_pending(self, record: ApprovalRecord) -> None:
        if self._records.get(record.id) is record:
            self._finish(record, None, "timeout")

    def _forget_record(self, record: ApprovalRecord) -> None:
        if self._records.get(record.id) is record and not record.pending:
            self._drop(record)

    def _drop(self, record: ApprovalRecord) -> None:
        if record._timer is not None:
            record._timer.cancel()
            record._timer = None
        if self._records.get(record.id) is record:
            del self._records[record.id]

    def _bound_lingering(self) -> None:
        done = [r for r in self._records.values() if not r.pending]
        for record in done[: max(0, len(done) - self.max_lingering)]:
            self._drop(record)

    def _sweep(self) -> None:
        """Expire overdue pending records and drop records that lingered long enough."""
        now = self.now_ms()
        linger_ms = self.linger_s * 1000
        for record in list(self._records.values()):
            if record.pending and now >= record.expires_at_ms:
                self._finish(record, None, "timeout")
            if record.resolved_at_ms is not None and now >= record.resolved_at_ms + linger_ms:
                self._drop(record)

    @staticmethod
    def _call(callback: Callable[[ApprovalRecord], None], record: ApprovalRecord) -> None:
        try:
            callback(record)
        except Exception:  # a failing listener must not break the approval itself
            log.exception("approval listener failed for %s", record.id)
