"""`exec.approval.*` methods (openclaw-protocol.md §2.3, security.md §4.4).

``exec.approval.request`` registers a pending approval for one exact command text, broadcasts
``exec.approval.requested`` to operators holding ``operator.approvals`` and answers with the
decision once an operator resolves it (``exec.approval.resolve``) or it times out
(``decision: null``, default 30 min). ``twoPhase`` first acks ``{status: "accepted", ...}``.
The manager and the anti-replay rules are :mod:`homarus.gateway.services.exec_approvals`.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from homarus.errors import Forbidden, InvalidRequest, NotFound
from homarus.gateway.methods.approvals import IdParams, ResolveParams
from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.gateway.services.approvals import await_decision, final_payload
from homarus.gateway.services.cluster_approvals import resolve_approval
from homarus.gateway.services.exec_approvals import MISMATCH, check_match, request_payload
from homarus.protocol.compat import INTERNAL, Unsupported, compat_params
from homarus.security.approvals import ApprovalRecord
from homarus.security.exec_analysis import analyze

__all__ = ["DEFAULT_TIMEOUT_MS", "ExecResolveParams", "IdParams", "RequestParams", "WaitParams"]

DEFAULT_TIMEOUT_MS: Final = 1_800_000
MAX_TIMEOUT_MS: Final = 24 * 3_600_000
DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"


_ROUTING = "approvals go to every operator holding operator.approvals and to chat owners; no per-request routing"


@compat_params(
    inert={
        "approvalReviewerDeviceIds": _ROUTING,
        "deliverToApprovalClientsOnly": _ROUTING,
        "requireDeliveryRoute": _ROUTING,
        "suppressDelivery": _ROUTING,
        "turnSourceAccountId": _ROUTING,
        "turnSourceChannel": _ROUTING,
        "turnSourceThreadId": _ROUTING,
        "turnSourceTo": _ROUTING,
        "commandSpans": "the command is shown as given; Homarus parses it itself to decide",
        "systemRunPlan": INTERNAL,
        "scope": "message-send scopes belong to the original's message tool approvals",
        "sessionId": "the request names its session by sessionKey",
        "toolCallId": "the request names its run by runId",
        "warningText": "the operator sees the command, its host and working directory",
    }
)
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
    #: decisions the operator may not pick (the original allows only ``["allow-always"]``)
    unavailable_decisions: list[Literal["allow-always"]] | None = Field(
        default=None, alias="unavailableDecisions", min_length=1, max_length=1
    )


@compat_params(
    inert={"reviewer": "the decision records who resolved it from the connection (resolvedBy)"},
    unsupported={"grantExpiresInDays": Unsupported("an allow-always decision lasts until it is removed")},
)
class ExecResolveParams(ResolveParams):
    pass


class WaitParams(IdParams):
    command: str | None = Field(default=None, max_length=100_000)
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    run_id: str | None = Field(default=None, alias="runId", max_length=256)


def _allowed(record: ApprovalRecord) -> list[str]:
    return ["allow-once", "allow-always", "deny"] if record.allow_always else ["allow-once", "deny"]


async def approval_request(call: MethodCall, p: RequestParams) -> dict[str, Any]:
    manager = call.gateway.exec_approvals
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
    analysis = analyze(command, path=DEFAULT_PATH, allowlist=(), safe_bins=False, cwd=p.cwd)
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
    allow_always = bool(analysis.patterns) and not p.unavailable_decisions
    record = manager.request(payload, timeout_ms=p.timeout_ms, id=p.id, allow_always=allow_always)
    manager.note_requester(record.id, call.client)
    return await await_decision(call, manager, record, two_phase=p.two_phase)


async def approval_wait(call: MethodCall, p: WaitParams) -> dict[str, Any]:
    manager = call.gateway.exec_approvals
    record = manager.get(p.id.strip())
    if record is None:
        raise InvalidRequest("approval expired or not found")
    if not manager.same_requester(record.id, call.client):
        raise Forbidden(MISMATCH, details={"reason": "APPROVAL_REQUESTER_MISMATCH"})
    check_match(record, p.command, p.session_key, p.run_id)
    try:
        await manager.wait(record.id)
    except NotFound:
        raise InvalidRequest("approval expired or not found") from None
    return final_payload(record)


async def approval_get(call: MethodCall, p: IdParams) -> dict[str, Any]:
    record = call.gateway.exec_approvals.lookup_pending(p.id)
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
    return [r.summary() for r in sorted(call.gateway.exec_approvals.list(), key=lambda r: r.expires_at_ms)]


async def approval_resolve(call: MethodCall, p: ExecResolveParams) -> dict[str, Any]:
    by = call.client.display_name or call.client.client_id or None
    await resolve_approval(call.gateway.cluster_approvals, call.gateway.exec_approvals, p.id, p.decision, by)
    return {"ok": True}


async def approvals_get(call: MethodCall, p: Params) -> dict[str, Any]:
    """``exec.approvals.get``: the host's approvals in the original's shape (Homarus keeps one
    allowlist for every agent: it is shown under the ``*`` agent); on a cluster, the shared row."""
    import asyncio
    import hashlib

    from homarus.gateway.services.exec_approvals import approvals_source

    source = approvals_source(call.gateway.paths.state_dir, call.gateway.cluster)
    raw, current = await asyncio.to_thread(source.read)
    policy = current.policy
    defaults: dict[str, Any] = {"security": policy.security, "ask": policy.ask, "askFallback": policy.ask_fallback}
    file: dict[str, Any] = {
        "version": 1,
        "defaults": defaults,
        "agents": {"*": {"allowlist": [{"pattern": pattern} for pattern in current.patterns]}}
        if current.patterns
        else {},
    }
    return {
        "path": source.location,
        "exists": raw is not None,
        "file": file,
        "hash": hashlib.sha256(raw or b"").hexdigest(),
        "resolvedDefaults": {**defaults, "autoAllowSkills": False},
    }


class GrantsListParams(Params):
    limit: int | None = Field(default=None, ge=1, le=500)


class GrantRevokeParams(Params):
    grant_id: str = Field(alias="grantId", min_length=1, max_length=256)


async def grants_list(call: MethodCall, p: GrantsListParams) -> dict[str, Any]:
    """The original's standing grants are minted for one cron job's command by an approval; Homarus
    mints none (an allow-always decision goes to the exec approvals file, ``exec.approvals.get``),
    so there are none to list."""
    return {"grants": []}


async def grant_revoke(call: MethodCall, p: GrantRevokeParams) -> dict[str, Any]:
    return {"outcome": "not-found"}
