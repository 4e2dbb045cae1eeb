"""`plugin.approval.*` methods and events (shapes mirror `exec.approval.*`).

``plugin.approval.request`` registers a pending approval, broadcasts
``plugin.approval.requested`` to operators holding ``operator.approvals`` (droppable) and answers
with the decision once an operator resolves it (``plugin.approval.resolve``) or it times out
(``decision: null``). With ``twoPhase`` a first ``{status: "accepted", ...}`` response carries
the id, so the requester can also ``plugin.approval.waitDecision``. When no other connection could
approve, the request expires at once with ``decision: null``, as in the reference.

``install(gateway)`` builds the :class:`ApprovalManager` and registers the methods; the gateway
keeps the manager (the agent runtime uses it in-process for ``requireApproval``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import Field

from homarus.errors import InvalidRequest, NotFound
from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.security.approvals import ApprovalManager, ApprovalRecord, plugin_remember_key
from homarus.security.scopes import APPROVALS, scope_allows

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway

__all__ = ["EVENTS", "await_decision", "final_payload", "has_approval_clients", "install", "register", "resolved_event"]

EVENT_REQUESTED: Final = "plugin.approval.requested"
EVENT_RESOLVED: Final = "plugin.approval.resolved"
EVENTS: Final = (EVENT_REQUESTED, EVENT_RESOLVED)
DEFAULT_TIMEOUT_MS: Final = 120_000
MAX_TIMEOUT_MS: Final = 3_600_000


class RequestParams(Params):
    plugin_id: str | None = Field(default=None, alias="pluginId", min_length=1, max_length=256)
    title: str = Field(min_length=1, max_length=80)
    description: str = Field(default="", max_length=256)
    severity: Literal["info", "warning", "critical"] | None = None
    tool_name: str | None = Field(default=None, alias="toolName", max_length=256)
    tool_call_id: str | None = Field(default=None, alias="toolCallId", max_length=256)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    timeout_ms: int = Field(default=DEFAULT_TIMEOUT_MS, alias="timeoutMs", ge=1, le=MAX_TIMEOUT_MS)
    two_phase: bool = Field(default=False, alias="twoPhase")


class IdParams(Params):
    id: str = Field(min_length=1, max_length=512)


class ResolveParams(Params):
    id: str = Field(min_length=1, max_length=512)
    decision: str = Field(max_length=64)


def has_approval_clients(gateway: Gateway, *, exclude: str | None = None) -> bool:
    """Whether an operator connection other than ``exclude`` may resolve approvals."""
    return any(
        r.conn_id != exclude and r.role == "operator" and scope_allows(r.scopes, APPROVALS)
        for r in gateway.bus.recipients()
    )


def final_payload(record: ApprovalRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "decision": record.decision,
        "createdAtMs": record.created_at_ms,
        "expiresAtMs": record.expires_at_ms,
    }


async def await_decision(
    call: MethodCall, manager: ApprovalManager, record: ApprovalRecord, *, two_phase: bool
) -> dict[str, Any]:
    """The final answer to an ``*.approval.request``: expired at once when no operator but the
    requester could decide, else (after the ``accepted`` ack of a two-phase request) the decision."""
    if not has_approval_clients(call.gateway, exclude=call.client.conn_id):
        manager.expire(record.id, "no-approval-route")
        return final_payload(record)
    if two_phase:
        call.ack(
            {
                "status": "accepted",
                "id": record.id,
                "createdAtMs": record.created_at_ms,
                "expiresAtMs": record.expires_at_ms,
            }
        )
    await manager.wait(record.id)
    return final_payload(record)


def resolved_event(record: ApprovalRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "decision": record.decision,
        "resolvedBy": record.resolved_by,
        "ts": record.resolved_at_ms,
        "request": record.request,
    }


def install(gateway: Gateway) -> ApprovalManager:
    """Create the plugin approval manager, wire its events to the bus, register the methods."""

    def requested(record: ApprovalRecord) -> None:
        gateway.bus.broadcast(EVENT_REQUESTED, record.summary(), guard=APPROVALS, droppable=True)

    def resolved(record: ApprovalRecord) -> None:
        # also sent for timeouts and cancellations (decision null), so operator UIs drop the prompt
        gateway.bus.broadcast(EVENT_RESOLVED, resolved_event(record), guard=APPROVALS)

    manager = ApprovalManager("plugin", on_requested=requested, on_resolved=resolved)

    async def approval_request(call: MethodCall, p: RequestParams) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "pluginId": p.plugin_id,
            "title": p.title,
            "description": p.description,
            "severity": p.severity,
            "toolName": p.tool_name,
            "toolCallId": p.tool_call_id,
            "agentId": p.agent_id,
            "sessionKey": p.session_key,
        }
        record = manager.request(
            payload, timeout_ms=p.timeout_ms, remember_key=plugin_remember_key(p.plugin_id, p.tool_name)
        )
        if not record.pending:  # answered from the allow-always memory
            return final_payload(record)
        return await await_decision(call, manager, record, two_phase=p.two_phase)

    async def approval_wait(call: MethodCall, p: IdParams) -> dict[str, Any]:
        record = manager.get(p.id.strip())
        if record is None:
            raise InvalidRequest("approval expired or not found")
        try:
            await manager.wait(record.id)
        except NotFound:
            raise InvalidRequest("approval expired or not found") from None
        return final_payload(record)

    async def approval_list(call: MethodCall, p: EmptyParams) -> list[dict[str, Any]]:
        return [r.summary() for r in manager.list()]

    async def approval_resolve(call: MethodCall, p: ResolveParams) -> dict[str, Any]:
        by = call.client.display_name or call.client.client_id or None
        manager.resolve(p.id, p.decision, resolved_by=by)
        return {"ok": True}

    m = gateway.methods
    m.register("plugin.approval.request", approval_request, scope=APPROVALS, params=RequestParams)
    m.register("plugin.approval.waitDecision", approval_wait, scope=APPROVALS, params=IdParams)
    m.register("plugin.approval.list", approval_list, scope=APPROVALS)
    m.register("plugin.approval.resolve", approval_resolve, scope=APPROVALS, params=ResolveParams)
    return manager


def register(gateway: Gateway) -> None:
    """Same signature as the other method families (the manager is then only reachable via methods)."""
    install(gateway)
