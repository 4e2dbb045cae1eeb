"""`exec.approval.*` methods and events (openclaw-protocol.md §2.3, security.md §4.4).

``exec.approval.request`` registers a pending approval for one exact command text, broadcasts
``exec.approval.requested`` to operators holding ``operator.approvals`` and answers with the
decision once an operator resolves it (``exec.approval.resolve``) or it times out
(``decision: null``, default 30 min). ``twoPhase`` first acks ``{status: "accepted", ...}``.

Anti-replay: a record is bound to the exact command text, cwd, agent, session and run of the
request and to the requesting connection (or the same client instance). ``waitDecision`` only
answers that requester, and when it passes ``command``/``sessionKey``/``runId`` they must match
(``approval mismatch``); :func:`authorize` does the same check for in-process executors and
consumes an ``allow-once`` decision so it authorises exactly one run. A resolved id cannot be
registered again while it lingers. ``allow-always`` persists the per-segment patterns computed
at request time (shown to operators as ``request.allowAlwaysPatterns``) to the approvals file.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import Field

from homarus.errors import Forbidden, InvalidRequest, NotFound
from homarus.gateway.methods.approvals import (
    IdParams,
    ResolveParams,
    await_decision,
    final_payload,
    has_approval_clients,
    resolved_event,
)
from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.security.approvals import ApprovalManager, ApprovalOutcome, ApprovalRecord, Decision
from homarus.security.exec_analysis import analyze
from homarus.security.exec_approvals_file import add_patterns, approvals_path
from homarus.security.scopes import APPROVALS
from homarus.tools.exec import ExecApprover

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "EVENTS",
    "approver_for",
    "authorize",
    "binding_of",
    "install",
    "register",
    "request_payload",
]

log = logging.getLogger("homarus.exec_approvals")
EVENT_REQUESTED: Final = "exec.approval.requested"
EVENT_RESOLVED: Final = "exec.approval.resolved"
EVENTS: Final = (EVENT_REQUESTED, EVENT_RESOLVED)
DEFAULT_TIMEOUT_MS: Final = 1_800_000
MAX_TIMEOUT_MS: Final = 24 * 3_600_000
DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
MISMATCH: Final = "approval mismatch"
_CONSUMED: Final = "\x00consumed\x00"


class RequestParams(Params):
    id: str | None = Field(default=None, max_length=256)
    command: str | None = Field(default=None, max_length=100_000)
    command_argv: list[str] | None = Field(default=None, alias="commandArgv", max_length=1000)
    cwd: str | None = Field(default=None, max_length=4096)
    env: dict[str, str] | None = None
    node_id: str | None = Field(default=None, alias="nodeId", max_length=256)
    host: Literal["gateway", "node", "sandbox"] | None = None
    security: Literal["deny", "allowlist", "full"] | None = None
    ask: Literal["off", "on-miss", "always"] | None = None
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    resolved_path: str | None = Field(default=None, alias="resolvedPath", max_length=4096)
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    run_id: str | None = Field(default=None, alias="runId", max_length=256)
    timeout_ms: int = Field(default=DEFAULT_TIMEOUT_MS, alias="timeoutMs", ge=1, le=MAX_TIMEOUT_MS)
    two_phase: bool = Field(default=False, alias="twoPhase")


class WaitParams(IdParams):
    command: str | None = Field(default=None, max_length=100_000)
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    run_id: str | None = Field(default=None, alias="runId", max_length=256)


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


def _check_match(record: ApprovalRecord, command: str | None, session_key: str | None, run_id: str | None) -> None:
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


def approver_for(gateway: Gateway, manager: ApprovalManager) -> ExecApprover:
    """The ``exec`` tool's way to ask operators (lent to tools as ``services["exec_approvals"]``)."""

    async def approver(request: dict[str, Any], timeout_ms: int, abort: asyncio.Event | None) -> ApprovalOutcome:
        payload = request_payload(request)
        return await manager.ask_outcome(
            payload,
            timeout_ms=timeout_ms,
            abort=abort,
            allow_always=bool(payload["allowAlwaysPatterns"]),
            route_available=has_approval_clients(gateway),
        )

    return approver


def _allowed(record: ApprovalRecord) -> list[str]:
    return ["allow-once", "allow-always", "deny"] if record.allow_always else ["allow-once", "deny"]


def install(gateway: Gateway, *, path: str = DEFAULT_PATH) -> ApprovalManager:
    """Create the exec approval manager, wire its events to the bus, register the methods."""
    file_path = approvals_path(gateway.paths.state_dir)
    requesters: dict[str, tuple[str, str | None, str | None]] = {}  # id -> (conn, client, instance)

    def requested(record: ApprovalRecord) -> None:
        gateway.bus.broadcast(EVENT_REQUESTED, record.summary(), guard=APPROVALS, droppable=True)

    def resolved(record: ApprovalRecord) -> None:
        patterns = record.request.get("allowAlwaysPatterns") or []
        if record.decision == "allow-always" and patterns:
            try:
                add_patterns(file_path, list(patterns))
            except Exception:
                log.exception("could not persist allow-always patterns for %s", record.id)
        gateway.bus.broadcast(EVENT_RESOLVED, resolved_event(record), guard=APPROVALS)

    manager = ApprovalManager("exec", on_requested=requested, on_resolved=resolved)

    async def approval_request(call: MethodCall, p: RequestParams) -> dict[str, Any]:
        command = (p.command or "").strip() and p.command
        if not command and p.command_argv:
            command = " ".join(p.command_argv)
        if not command:
            raise InvalidRequest("command is required")
        if p.host == "node" and not p.node_id:
            raise InvalidRequest("nodeId is required for host=node")
        if p.id is not None:
            existing = manager.get(p.id.strip())
            if existing is not None and not existing.pending:
                raise InvalidRequest(f"approval id '{existing.id}' already resolved")
        analysis = analyze(command, path=path, allowlist=(), safe_bins=False, cwd=p.cwd)
        payload = request_payload(
            {
                "command": command,
                "commandArgv": p.command_argv,
                "cwd": p.cwd,
                "host": p.host or "gateway",
                "nodeId": p.node_id,
                "security": p.security,
                "ask": p.ask,
                "agentId": p.agent_id,
                "resolvedPath": p.resolved_path,
                "sessionKey": p.session_key,
                "runId": p.run_id,
                "envKeys": sorted(p.env) if p.env else None,
                "allowAlwaysPatterns": analysis.patterns,
            }
        )
        record = manager.request(payload, timeout_ms=p.timeout_ms, id=p.id, allow_always=bool(analysis.patterns))
        requesters[record.id] = (call.client.conn_id, call.client.client_id, call.client.instance_id)
        if len(requesters) > 2 * manager.max_pending:
            for stale in [k for k in requesters if manager.get(k) is None]:
                del requesters[stale]
        return await await_decision(call, manager, record, two_phase=p.two_phase)

    def _same_requester(call: MethodCall, record: ApprovalRecord) -> bool:
        conn, client, instance = requesters.get(record.id, ("", None, None))
        c = call.client
        return c.conn_id == conn or (instance is not None and (c.client_id, c.instance_id) == (client, instance))

    async def approval_wait(call: MethodCall, p: WaitParams) -> dict[str, Any]:
        record = manager.get(p.id.strip())
        if record is None:
            raise InvalidRequest("approval expired or not found")
        if not _same_requester(call, record):
            raise Forbidden(MISMATCH, details={"reason": "APPROVAL_REQUESTER_MISMATCH"})
        _check_match(record, p.command, p.session_key, p.run_id)
        try:
            await manager.wait(record.id)
        except NotFound:
            raise InvalidRequest("approval expired or not found") from None
        return final_payload(record)

    async def approval_get(call: MethodCall, p: IdParams) -> dict[str, Any]:
        record = manager.lookup_pending(p.id)
        req = record.request
        return {
            "id": record.id,
            "commandText": req["command"],
            "commandPreview": req["commandPreview"],
            "allowedDecisions": _allowed(record),
            "host": req["host"],
            "nodeId": req["nodeId"],
            "agentId": req["agentId"],
            "expiresAtMs": record.expires_at_ms,
        }

    async def approval_list(call: MethodCall, p: EmptyParams) -> list[dict[str, Any]]:
        return [r.summary() for r in sorted(manager.list(), key=lambda r: r.expires_at_ms)]

    async def approval_resolve(call: MethodCall, p: ResolveParams) -> dict[str, Any]:
        by = call.client.display_name or call.client.client_id or None
        manager.resolve(p.id, p.decision, resolved_by=by)
        return {"ok": True}

    m = gateway.methods
    m.register("exec.approval.request", approval_request, scope=APPROVALS, params=RequestParams)
    m.register("exec.approval.get", approval_get, scope=APPROVALS, params=IdParams)
    m.register("exec.approval.list", approval_list, scope=APPROVALS)
    m.register("exec.approval.waitDecision", approval_wait, scope=APPROVALS, params=WaitParams)
    m.register("exec.approval.resolve", approval_resolve, scope=APPROVALS, params=ResolveParams)
    return manager


def register(gateway: Gateway) -> None:
    """Same signature as the other method families (the manager is then only reachable via methods)."""
    install(gateway)
