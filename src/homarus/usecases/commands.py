"""Slash commands answered without a model run, from any chat surface: ``/approve`` and the
plugins' commands.

``/approve <id> allow-once|allow-always|deny`` resolves a pending exec or plugin approval from
the chat, for clients that have no approvals panel. Only a sender holding ``operator.approvals``
(or admin) may decide — the same rule as ``exec.approval.resolve`` — so a chat participant
cannot approve the commands its own messages caused. ``/approve`` alone lists what is pending.
A plugin's ``/name args`` runs the command the plugin registered (30 s at most; its failure is the
answer, the chat goes on).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Final, Protocol

from homarus.errors import HomarusError
from homarus.security.scopes import ADMIN, APPROVALS

if TYPE_CHECKING:
    from homarus.plugins.registry import PluginRegistry
    from homarus.security.approvals import ApprovalRecord

__all__ = ["CORE_COMMANDS", "ApprovalDesk", "ApprovalsHost", "PluginsHost", "core_command", "run_command"]

CORE_COMMANDS: Final = frozenset({"approve", "stop", "abort", "new", "reset"})
USAGE: Final = "Usage: /approve <id> allow-once|allow-always|deny"
PLUGIN_COMMAND_TIMEOUT_S: Final = 30.0
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


class ApprovalDesk(Protocol):
    """Where one kind of approval waits (exec, plugin)."""

    @property
    def kind(self) -> str: ...
    def list(self) -> list[ApprovalRecord]: ...
    def resolve(self, id_or_prefix: str, decision: str, *, resolved_by: str | None) -> ApprovalRecord: ...


class ApprovalsHost(Protocol):
    @property
    def exec_approvals(self) -> ApprovalDesk: ...
    @property
    def plugin_approvals(self) -> ApprovalDesk: ...


class PluginsHost(Protocol):
    @property
    def plugins(self) -> PluginRegistry: ...
    def built(self, service: str) -> bool: ...


def _pending(host: ApprovalsHost) -> str:
    lines = []
    for desk in (host.exec_approvals, host.plugin_approvals):
        for record in desk.list():
            req = record.request
            what = req.get("commandPreview") or req.get("title") or req.get("toolName") or "?"
            lines.append(f"- {record.id} ({desk.kind}): {what}")
    return "\n".join(["Pending approvals:", *lines]) if lines else "No pending approvals."


def _approve(host: ApprovalsHost, scopes: frozenset[str], by: str, args: str) -> str:
    if APPROVALS not in scopes and ADMIN not in scopes:
        return "/approve needs the operator.approvals scope; nothing was decided."
    words = args.split()
    if not words:
        return _pending(host)
    if len(words) != 2 or words[1].lower() not in _ALIASES:
        return USAGE
    approval_id, decision = words[0], _ALIASES[words[1].lower()]
    desk = host.plugin_approvals if approval_id.startswith("plugin:") else host.exec_approvals
    try:
        record = desk.resolve(approval_id, decision, resolved_by=by)
    except HomarusError as exc:
        return f"/approve {approval_id}: {exc.message}"
    return f"Approval {record.id}: {decision}."


def core_command(host: ApprovalsHost, scopes: frozenset[str], by: str, text: str) -> str | None:
    """The reply of a core command in ``text`` (None: not one of them), asked by someone holding
    ``scopes`` and named ``by`` in what it records."""
    if not text.startswith("/"):
        return None
    name, _, args = text[1:].partition(" ")
    if name.strip().lower() == "approve":
        return _approve(host, scopes, by, args.strip())
    return None


async def run_command(host: PluginsHost, text: str, session_key: str) -> str | None:
    """Run ``/name args`` if a plugin registered ``name``; returns its reply (None = not a command)."""
    if not text.startswith("/") or not host.built("extensions"):
        return None  # plugins that register commands are loaded at start
    name, _, args = text[1:].partition(" ")
    command = host.plugins.commands.get(name.strip().lower())
    if command is None:
        return None
    ctx = {"sessionKey": session_key, "pluginId": command.plugin_id}
    try:
        result = command.handler(args.strip(), ctx)
        if inspect.isawaitable(result):
            async with asyncio.timeout(PLUGIN_COMMAND_TIMEOUT_S):
                result = await result
    except Exception as exc:  # a failing command answers with its error, the chat goes on
        return f"/{name} failed: {exc}"
    return "" if result is None else str(result)
