"""Operator approvals at the gateway: the plugin approval manager and what both kinds share.

A request is broadcast to operators holding ``operator.approvals`` (droppable) and answered with
the decision once one resolves it, or ``decision: null`` when it times out. When no connection
but the requester could approve, the request expires at once (no approval route), as in the
reference. The exec approval manager is :mod:`homarus.gateway.services.exec_approvals`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from homarus.gateway.services.exec_approvals import has_approval_clients, resolved_event
from homarus.security.approvals import ApprovalManager, ApprovalRecord, plugin_remember_key
from homarus.security.scopes import APPROVALS

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.gateway.router import MethodCall

__all__ = [
    "EVENTS",
    "approve_tool_call",
    "await_decision",
    "build_plugin_approvals",
    "final_payload",
]

EVENT_REQUESTED: Final = "plugin.approval.requested"
EVENT_RESOLVED: Final = "plugin.approval.resolved"
EVENTS: Final = (EVENT_REQUESTED, EVENT_RESOLVED)


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
    if not has_approval_clients(call.gateway.bus, exclude=call.client.conn_id):
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


def approve_tool_call(gateway: GatewayContext) -> Callable[[dict[str, Any], int, asyncio.Event], Awaitable[str | None]]:
    """How a plugin-gated tool call asks the operators (clients with operator.approvals)."""

    async def approve(payload: dict[str, Any], timeout_ms: int, abort: asyncio.Event) -> str | None:
        return await gateway.plugin_approvals.ask(
            payload,
            timeout_ms=timeout_ms,
            abort=abort,
            remember_key=plugin_remember_key(payload.get("pluginId"), payload.get("toolName")),
            route_available=has_approval_clients(gateway.bus),
        )

    return approve


def build_plugin_approvals(gateway: GatewayContext) -> ApprovalManager:
    """The plugin approval manager with its events wired to the bus."""

    def requested(record: ApprovalRecord) -> None:
        gateway.bus.broadcast(EVENT_REQUESTED, record.summary(), guard=APPROVALS, droppable=True, cluster=True)

    def resolved(record: ApprovalRecord) -> None:
        # also sent for timeouts and cancellations (decision null), so operator UIs drop the prompt
        gateway.bus.broadcast(EVENT_RESOLVED, resolved_event(record), guard=APPROVALS, cluster=True)

    return ApprovalManager("plugin", on_requested=requested, on_resolved=resolved)
