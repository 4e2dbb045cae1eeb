"""Chat commands from a channel, answered without a model run — owners only.

``/new`` and ``/reset`` start a new conversation, ``/status`` describes the session, ``/model``
shows or sets its model, ``/stop`` aborts the running turn, ``/approve`` decides pending tool
approvals, ``/help`` lists these, and a plugin's ``/name`` runs the plugin's command. Anyone
else gets a short refusal (these change what the agent does for everyone sharing the session).
``/start`` (what Telegram sends first) and any other ``/word`` go to the agent as text.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from homarus.errors import HomarusError
from homarus.gateway.router import ClientInfo
from homarus.gateway.services.chat_commands import core_command
from homarus.gateway.services.plugins import run_command
from homarus.security.scopes import APPROVALS

if TYPE_CHECKING:
    from homarus.channels.access import Decision
    from homarus.channels.model import InboundMessage
    from homarus.gateway.context import GatewayContext

__all__ = ["OWNER_COMMANDS", "ChannelCommands"]

OWNER_COMMANDS: Final = frozenset({"new", "reset", "status", "model", "stop", "approve", "help"})
HELP: Final = (
    "Commands (owner only):\n/new — start a new conversation\n/status — this session\n"
    "/model [provider/model] — show or set the model\n/stop — stop the current reply\n"
    "/approve [id decision] — pending tool approvals"
)
NOT_OWNER: Final = "That command is for my owner."


class ChannelCommands:
    def __init__(self, gw: GatewayContext) -> None:
        self.gw = gw

    async def handle(self, msg: InboundMessage, decision: Decision, session_key: str) -> str | None:
        """The reply to a command in ``msg`` (None: not a command here, it goes to the agent)."""
        name = msg.command or ""
        if not name.startswith("/"):
            return None
        word = name[1:]
        args = msg.text.strip()[len(name) :].strip() if msg.text.strip().lower().startswith(name) else ""
        plugin = self.gw.built("extensions") and word in self.gw.plugins.commands
        if word not in OWNER_COMMANDS and not plugin:
            return None
        if not decision.owner:
            return NOT_OWNER
        key = self.gw.sessions.resolve_key(session_key)
        if word in ("new", "reset"):
            if self.gw.sessions.get(key) is not None:
                await asyncio.to_thread(self.gw.sessions.reset, key)
            return "New conversation started."
        if word == "status":
            return await asyncio.to_thread(self._status, session_key)
        if word == "model":
            return await self._model(key, args)
        if word == "stop":
            stopped = self.gw.runtime.abort(key.canonical, origin="chat-stop") if self.gw.built("runtime") else []
            return "Stopped." if stopped else "Nothing is running."
        if word == "approve":
            return core_command(self.gw, _owner_client(msg), f"/approve {args}".strip())
        if word == "help":
            return HELP
        return await run_command(self.gw, f"/{word} {args}".strip(), key.canonical) or "Done."

    def _status(self, session_key: str) -> str:
        key = self.gw.sessions.resolve_key(session_key)
        ref = self.gw.sessions.get(key)
        lines = [f"Session: {key.canonical}"]
        if ref is None:
            lines.append("No conversation yet.")
            return "\n".join(lines)
        entry = ref.entry
        model = entry.model_override or entry.model or self.gw.config.agents.defaults.model.primary or "(default)"
        lines += [
            f"Model: {model}",
            f"Tokens: {entry.total_tokens or 0}",
            f"Compactions: {entry.compaction_count or 0}",
        ]
        if entry.status:
            lines.append(f"Last run: {entry.status}")
        return "\n".join(lines)

    async def _model(self, key: object, args: str) -> str:
        from homarus.sessions.keys import SessionKey

        assert isinstance(key, SessionKey)
        if not args:
            ref = self.gw.sessions.get(key)
            current = (ref.entry.model_override if ref else None) or self.gw.config.agents.defaults.model.primary
            return f"Model: {current or '(default)'}"
        try:
            resolved = self.gw.models.resolve(args)
        except HomarusError as exc:
            return f"Unknown model {args!r}: {exc.message}"
        await asyncio.to_thread(self.gw.sessions.ensure, key)
        await asyncio.to_thread(self.gw.sessions.update_entry, key, {"modelOverride": resolved.info.ref})
        return f"Model set to {resolved.info.ref} for this conversation."


def _owner_client(msg: InboundMessage) -> ClientInfo:
    """The owner as an approvals-scoped client, for ``/approve`` (the same rule as the WS method)."""
    return ClientInfo(
        conn_id=f"chat:{msg.sender}",
        ip="",
        role="operator",
        scopes=frozenset({APPROVALS}),
        protocol=3,
        client_id=f"chat:{msg.channel}",
        client_mode="chat",
        client_version="",
        platform=msg.channel,
        display_name=msg.sender_name or msg.sender,
    )
