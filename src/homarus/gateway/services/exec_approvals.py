"""The exec approval manager: one exact command, bound to who asked, persisted when always allowed.

Anti-replay: a record is bound to the exact command text, cwd, agent, session and run of the
request and to the requesting connection (or the same client instance). ``waitDecision`` only
answers that requester, and when it passes ``command``/``sessionKey``/``runId`` they must match
(``approval mismatch``); :func:`authorize` does the same check for in-process executors and
consumes an ``allow-once`` decision so it authorises exactly one run. ``allow-always`` persists
the per-segment patterns computed at request time (shown to operators as
``request.allowAlwaysPatterns``) to the approvals file.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any, Final, Protocol

from homarus.errors import Forbidden, NotFound
from homarus.security.approvals import ApprovalManager, ApprovalOutcome, ApprovalRecord, Decision
from homarus.security.exec_approvals_file import ApprovalsSource, FileApprovals, approvals_path
from homarus.security.scopes import APPROVALS, scope_allows

if TYPE_CHECKING:
    from pathlib import Path

    from homarus.config.paths import StatePaths
    from homarus.gateway.client import ClientInfo
    from homarus.gateway.events import EventBus
    from homarus.storage.cluster import Cluster
    from homarus.tools.services import ExecApprover

__all__ = [
    "EVENTS",
    "MISMATCH",
    "ExecApprovals",
    "ExecApprovalsHost",
    "approvals_source",
    "authorize",
    "binding_of",
    "check_match",
    "has_approval_clients",
    "request_payload",
    "resolved_event",
]

log = logging.getLogger("homarus.exec_approvals")
EVENT_REQUESTED: Final = "exec.approval.requested"
EVENT_RESOLVED: Final = "exec.approval.resolved"
EVENTS: Final = (EVENT_REQUESTED, EVENT_RESOLVED)
MISMATCH: Final = "approval mismatch"
_CONSUMED: Final = "\x00consumed\x00"


def binding_of(
    command: str, *, cwd: str | None, agent_id: str | None, session_key: str | None, run_id: str | None
) -> str:
    """sha256 of the canonical plan an approval authorises."""
    plan = {"command": command, "cwd": cwd, "agentId": agent_id, "sessionKey": session_key, "runId": run_id}
    return hashlib.sha256(json.dumps(plan, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def request_payload(fields: dict[str, Any]) -> dict[str, Any]:
    """The stored/broadcast request: ``fields`` plus the preview and the anti-replay binding."""
    command = str(fields["command"])
    payload = {
        "commandArgv": None,
        "host": "gateway",
        "nodeId": None,
        "resolvedPath": None,
        "envKeys": None,
        "allowAlwaysPatterns": [],
        **fields,
        "commandPreview": command if len(command) <= 200 else command[:199] + "…",
    }
    payload["binding"] = binding_of(
        command,
        cwd=payload.get("cwd"),
        agent_id=payload.get("agentId"),
        session_key=payload.get("sessionKey"),
        run_id=payload.get("runId"),
    )
    return payload


def check_match(record: ApprovalRecord, command: str | None, session_key: str | None, run_id: str | None) -> None:
    req = record.request
    for given, key in ((command, "command"), (session_key, "sessionKey"), (run_id, "runId")):
        if given is not None and given != req.get(key):
            raise Forbidden(MISMATCH, details={"reason": "APPROVAL_MISMATCH", "field": key})


def authorize(
    manager: ApprovalManager,
    id: str,
    *,
    command: str,
    cwd: str | None = None,
    agent_id: str | None = None,
    session_key: str | None = None,
    run_id: str | None = None,
) -> Decision:
    """The decision for ``id`` if it authorises exactly this run; ``allow-once`` is consumed.

    Raises NotFound for an unknown/expired/undecided id and Forbidden (``approval mismatch``)
    when anything in the bound plan differs or an allow-once decision was already used.
    """
    record = manager.get(id)
    if record is None or record.pending or record.decision is None:
        raise NotFound("unknown or expired approval id", details={"reason": "APPROVAL_NOT_FOUND"})
    want = binding_of(command, cwd=cwd, agent_id=agent_id, session_key=session_key, run_id=run_id)
    if want != record.request.get("binding"):
        raise Forbidden(MISMATCH, details={"reason": "APPROVAL_MISMATCH"})
    if record.decision == "allow-once":
        key = f"{_CONSUMED}{record.id}"
        if manager.remembers(key):
            raise Forbidden(MISMATCH, details={"reason": "APPROVAL_ALREADY_USED"})
        manager.remember(key)
    return record.decision


def has_approval_clients(bus: EventBus, *, exclude: str | None = None) -> bool:
    """Whether an operator connection other than ``exclude`` may resolve approvals (in a cluster,
    one may be connected to another gateway: the request waits for its timeout there too)."""
    return bus.relay is not None or any(
        r.conn_id != exclude and r.role == "operator" and scope_allows(r.scopes, APPROVALS) for r in bus.recipients()
    )


def resolved_event(record: ApprovalRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "decision": record.decision,
        "resolvedBy": record.resolved_by,
        "ts": record.resolved_at_ms,
        "request": record.request,
    }


def approvals_source(state_dir: Path, cluster: Cluster | None) -> ApprovalsSource:
    """The host's exec approvals: the state dir's file, or the row every gateway of a cluster shares."""
    if cluster is not None:
        from homarus.security.pg_exec_approvals import PgExecApprovals

        return PgExecApprovals(cluster.blocking)
    return FileApprovals(approvals_path(state_dir))


class ExecApprovalsHost(Protocol):
    """What the exec approvals use: the state dir (allow-always patterns) and the event bus."""

    paths: StatePaths
    bus: EventBus


class ExecApprovals(ApprovalManager):
    """The ``exec`` approval manager, which also remembers who asked for each approval."""

    def __init__(self, gateway: ExecApprovalsHost, source: ApprovalsSource | None = None) -> None:
        self.gateway = gateway
        #: where allow-always patterns go: the state dir's file, or the cluster's row
        self.source = source or FileApprovals(approvals_path(gateway.paths.state_dir))
        #: approval id -> (connection id, client id, client instance id) of the requester
        self._requesters: dict[str, tuple[str, str | None, str | None]] = {}
        #: other ways to reach an operator (a chat owner): ``can_route(payload)`` and ``notify(record)``
        self.routes: list[Any] = []
        super().__init__("exec", on_requested=self._requested, on_resolved=self._resolved)

    def _requested(self, record: ApprovalRecord) -> None:
        self.gateway.bus.broadcast(EVENT_REQUESTED, record.summary(), guard=APPROVALS, droppable=True, cluster=True)
        for route in self.routes:
            try:
                route.notify(record)
            except Exception:
                log.exception("an approval route failed to announce %s", record.id)

    def _resolved(self, record: ApprovalRecord) -> None:
        patterns = record.request.get("allowAlwaysPatterns") or []
        if record.decision == "allow-always" and patterns:
            try:
                # written before the resolution is told, so the run's next command already sees
                # it (one row update on a cluster: a human's decision is worth the wait on the loop)
                self.source.add_patterns(list(patterns))
            except Exception:
                log.exception("could not persist allow-always patterns for %s", record.id)
        self.gateway.bus.broadcast(EVENT_RESOLVED, resolved_event(record), guard=APPROVALS, cluster=True)

    def note_requester(self, approval_id: str, client: ClientInfo) -> None:
        self._requesters[approval_id] = (client.conn_id, client.client_id, client.instance_id)
        if len(self._requesters) > 2 * self.max_pending:
            for stale in [k for k in self._requesters if self.get(k) is None]:
                del self._requesters[stale]

    def same_requester(self, approval_id: str, client: ClientInfo) -> bool:
        conn, client_id, instance = self._requesters.get(approval_id, ("", None, None))
        return client.conn_id == conn or (
            instance is not None and (client.client_id, client.instance_id) == (client_id, instance)
        )

    def approver(self) -> ExecApprover:
        """The ``exec`` tool's way to ask operators (lent to tools as ``services["exec_approvals"]``)."""

        async def approver(request: dict[str, Any], timeout_ms: int, abort: asyncio.Event | None) -> ApprovalOutcome:
            payload = request_payload(request)
            return await self.ask_outcome(
                payload,
                timeout_ms=timeout_ms,
                abort=abort,
                allow_always=bool(payload["allowAlwaysPatterns"]),
                route_available=has_approval_clients(self.gateway.bus)
                or any(r.can_route(payload) for r in self.routes),
            )

        return approver
