"""Core chat slash commands answered without a model run: ``/approve``.

``/approve <id> allow-once|allow-always|deny`` resolves a pending exec or plugin approval from
the chat, for clients that have no approvals panel. Only a sender holding ``operator.approvals``
(or admin) may decide — the same rule as ``exec.approval.resolve`` — so a chat participant
cannot approve the commands its own messages caused. ``/approve`` alone lists what is pending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from homarus.errors import HomarusError
from homarus.security.scopes import ADMIN, APPROVALS

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.gateway.router import ClientInfo

__all__ = ["CORE_COMMANDS", "core_command"]

CORE_COMMANDS: Final = frozenset({"approve", "stop", "abort", "new", "reset"})
USAGE: Final = "Usage: /approve <id> allow-once|allow-always|deny"
_ALIASES: Final = {
    "allow-once": "allow-once",
    "once": "allow-once",
    "allow": "allow-once",
    "yes": "allow-once",
    "allow-always": "allow-always",
    "always": "allow-always",
    "deny": "deny",
    "no": "deny",
    "reject": "deny",
}


def _pending(gateway: GatewayContext) -> str:
    lines = []
    for manager in (gateway.exec_approvals, gateway.plugin_approvals):
        for record in manager.list():
            req = record.request
            what = req.get("commandPreview") or req.get("title") or req.get("toolName") or "?"
            lines.append(f"- {record.id} ({manager.kind}): {what}")
    return "\n".join(["Pending approvals:", *lines]) if lines else "No pending approvals."


def _approve(gateway: GatewayContext, client: ClientInfo, args: str) -> str:
    if APPROVALS not in client.scopes and ADMIN not in client.scopes:
        return "/approve needs the operator.approvals scope; nothing was decided."
    words = args.split()
    if not words:
        return _pending(gateway)
    if len(words) != 2 or words[1].lower() not in _ALIASES:
        return USAGE
    approval_id, decision = words[0], _ALIASES[words[1].lower()]
    manager = gateway.plugin_approvals if approval_id.startswith("plugin:") else gateway.exec_approvals
    by = client.display_name or client.client_id or "chat"
    try:
        record = manager.resolve(approval_id, decision, resolved_by=by)
    except HomarusError as exc:
        return f"/approve {approval_id}: {exc.message}"
    return f"Approval {record.id}: {decision}."


def core_command(gateway: GatewayContext, client: ClientInfo, text: str) -> str | None:
    """The reply of a core command in ``text`` (None: not one of them)."""
    if not text.startswith("/"):
        return None
    name, _, args = text[1:].partition(" ")
    if name.strip().lower() == "approve":
        return _approve(gateway, client, args.strip())
    return None
