"""Chat commands from a channel, answered without a model run — owners only.

``/new`` and ``/reset`` start a new conversation, ``/status`` describes the session, ``/model``
shows or sets its model, ``/compact`` summarises the conversation so far (with an optional focus),
``/stop`` aborts the running turn, ``/approve`` decides pending tool approvals, ``/help`` lists
these, and a plugin's ``/name`` runs the plugin's command. Anyone else gets a short refusal (these
change what the agent does for everyone sharing the session). ``/start`` (what Telegram sends
first) and any other ``/word`` go to the agent as text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from homarus.errors import HomarusError, InvalidRequest
from homarus.security.scopes import APPROVALS
from homarus.usecases.commands import ApprovalsHost, PluginsHost, core_command, run_command

if TYPE_CHECKING:
    from homarus.agents.runtime import AgentRuntime
    from homarus.channels.access import Decision
    from homarus.channels.model import InboundMessage
    from homarus.config.schema import HomarusConfig
    from homarus.providers.registry import ModelRegistry
    from homarus.sessions.keys import SessionKey
    from homarus.sessions.manager import SessionManager

__all__ = ["CHAT_COMMANDS", "OWNER_COMMANDS", "ChannelCommands", "ChatCommand", "CommandsHost"]


@dataclass(frozen=True, slots=True)
class ChatCommand:
    name: str
    description: str
    #: what follows the name, as ``/help`` shows it ("" when it takes nothing)
    args: str = ""
    #: the original's catalog group (``commands.list``)
    category: str = "session"
    listed: bool = True


#: the chat commands, in ``/help``'s order (``commands.list`` answers the same table)
CHAT_COMMANDS: Final = (
    ChatCommand("new", "start a new conversation"),
    ChatCommand("reset", "start a new conversation", listed=False),
    ChatCommand("status", "this session", category="status"),
    ChatCommand("model", "show or set the model", "[provider/model]", "options"),
    ChatCommand("compact", "summarise the conversation so far", "[focus]"),
    ChatCommand("stop", "stop the current reply"),
    ChatCommand("approve", "pending tool approvals", "[id decision]", "management"),
    ChatCommand("help", "these commands", category="status", listed=False),
)
OWNER_COMMANDS: Final = frozenset(c.name for c in CHAT_COMMANDS)
HELP: Final = "Commands (owner only):\n" + "\n".join(
    f"/{c.name}{' ' + c.args if c.args else ''} — {c.description}" for c in CHAT_COMMANDS if c.listed
)
NOT_OWNER: Final = "That command is for my owner."


class CommandsHost(ApprovalsHost, PluginsHost, Protocol):
    """What the owner commands use: the session, its model, its running turn, the approvals."""

    @property
    def config(self) -> HomarusConfig: ...

    sessions: SessionManager
    runtime: AgentRuntime
    models: ModelRegistry


class ChannelCommands:
    def __init__(self, host: CommandsHost) -> None:
        self.host = host

    async def handle(self, msg: InboundMessage, decision: Decision, session_key: str) -> str | None:
        """The reply to a command in ``msg`` (None: not a command here, it goes to the agent)."""
        name = msg.command or ""
        if not name.startswith("/"):
            return None
        word = name[1:]
        args = msg.text.strip()[len(name) :].strip() if msg.text.strip().lower().startswith(name) else ""
        plugin = self.host.built("extensions") and word in self.host.plugins.commands
        if word not in OWNER_COMMANDS and not plugin:
            return None
        if not decision.owner:
            return NOT_OWNER
        key = self.host.sessions.resolve_key(session_key)
        if word in ("new", "reset"):
            if self.host.sessions.get(key) is not None:
                await asyncio.to_thread(self.host.sessions.reset, key)
            return "New conversation started."
        if word == "status":
            return await asyncio.to_thread(self._status, session_key)
        if word == "model":
            return await self._model(key, args)
        if word == "compact":
            return await self._compact(key, args)
        if word == "stop":
            stopped = self.host.runtime.abort(key.canonical, origin="chat-stop") if self.host.built("runtime") else []
            return "Stopped." if stopped else "Nothing is running."
        if word == "approve":
            who = msg.sender_name or msg.sender
            return core_command(self.host, frozenset({APPROVALS}), who, f"/approve {args}".strip())
        if word == "help":
            return HELP
        return await run_command(self.host, f"/{word} {args}".strip(), key.canonical) or "Done."

    async def _compact(self, key: SessionKey, focus: str) -> str:
        if not self.host.built("runtime") or await asyncio.to_thread(self.host.sessions.get, key) is None:
            return "Nothing to compact yet."
        try:
            report = await self.host.runtime.compact(key, instructions=focus or None)
        except InvalidRequest:
            return "A reply is still on its way: /compact again when it is done."
        if not report.compacted:
            return f"Not compacted: {report.reason}."
        return f"Compacted: the context went from ~{report.tokens_before} to ~{report.tokens_after} tokens."

    def _status(self, session_key: str) -> str:
        key = self.host.sessions.resolve_key(session_key)
        ref = self.host.sessions.get(key)
        lines = [f"Session: {key.canonical}"]
        if ref is None:
            lines.append("No conversation yet.")
            return "\n".join(lines)
        entry = ref.entry
        model = entry.model_override or entry.model or self.host.config.agents.defaults.model.primary or "(default)"
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
            ref = self.host.sessions.get(key)
            current = (ref.entry.model_override if ref else None) or self.host.config.agents.defaults.model.primary
            return f"Model: {current or '(default)'}"
        try:
            resolved = self.host.models.resolve(args)
        except HomarusError as exc:
            return f"Unknown model {args!r}: {exc.message}"
        await asyncio.to_thread(self.host.sessions.ensure, key)
        await asyncio.to_thread(self.host.sessions.update_entry, key, {"modelOverride": resolved.info.ref})
        return f"Model set to {resolved.info.ref} for this conversation."
