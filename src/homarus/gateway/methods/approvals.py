"""`plugin.approval.*` methods and events (shapes mirror `exec.approval.*`).

``plugin.approval.request`` registers a pending approval, broadcasts
``plugin.approval.requested`` to operators holding ``operator.approvals`` (droppable) and answers
with the decision once an operator resolves it (``plugin.approval.resolve``) or it times out
(``decision: null``). With ``twoPhase`` a first ``{status: "accepted", ...}`` response carries
the id, so the requester can also ``plugin.approval.waitDecision``. When no other connection could
approve, the request expires at once with ``decision: null``, as in the reference.

The manager is the gateway's ``plugin_approvals`` (the agent runtime uses it in-process for
``requireApproval``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import Field

from homarus.errors import InvalidRequest, NotFound
from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.gateway.services.approvals import await_decision, final_payload
from homarus.gateway.services.cluster_approvals import resolve_approval
from homarus.security.approvals import plugin_remember_key

if TYPE_CHECKING:
    pass

__all__ = ["IdParams", "RequestParams", "ResolveParams"]

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
    manager = call.gateway.plugin_approvals
    record = manager.request(
        payload, timeout_ms=p.timeout_ms, remember_key=plugin_remember_key(p.plugin_id, p.tool_name)
    )
    if not record.pending:  # answered from the allow-always memory
        return final_payload(record)
    return await await_decision(call, manager, record, two_phase=p.two_phase)


async def approval_wait(call: MethodCall, p: IdParams) -> dict[str, Any]:
    manager = call.gateway.plugin_approvals
    record = manager.get(p.id.strip())
    if record is None:
        raise InvalidRequest("approval expired or not found")
    try:
        await manager.wait(record.id)
    except NotFound:
        raise InvalidRequest("approval expired or not found") from None
    return final_payload(record)


async def approval_list(call: MethodCall, p: EmptyParams) -> list[dict[str, Any]]:
    return [r.summary() for r in call.gateway.plugin_approvals.list()]


async def approval_resolve(call: MethodCall, p: ResolveParams) -> dict[str, Any]:
    by = call.client.display_name or call.client.client_id or None
    await resolve_approval(call.gateway.cluster_approvals, call.gateway.plugin_approvals, p.id, p.decision, by)
    return {"ok": True}
