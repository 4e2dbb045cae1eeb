"""``commands.list``: the chat commands an owner can send on any channel, and the plugins', in the
original's catalog shape (clients offer them as a menu and complete them as one types ``/``).

Homarus's commands work as text only (``/name args`` in a message; no platform-native command
menus are registered), so every entry is ``scope: "text"``; asked for ``native`` commands, the
list is empty rather than wrong.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from homarus.gateway.router import MethodCall, Params
from homarus.usecases.chat.commands import CHAT_COMMANDS

__all__: list[str] = []


class ListParams(Params):
    session_key: str | None = Field(default=None, alias="sessionKey", min_length=1, max_length=512)
    agent_id: str | None = Field(default=None, alias="agentId", min_length=1, max_length=64)
    provider: str | None = Field(default=None, min_length=1, max_length=64)
    scope: Literal["text", "native", "both"] | None = None
    include_args: bool | None = Field(default=None, alias="includeArgs")


def _entry(
    name: str, description: str, source: str, category: str | None, args: str, *, with_args: bool
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "nativeName": name,
        "textAliases": [f"/{name}"],
        "description": description[:200],
        "source": source,
        "scope": "text",
        "acceptsArgs": bool(args),
    }
    if category is not None:
        entry["category"] = category
    if with_args and args:
        entry["args"] = [{"name": "args", "description": args, "type": "string"}]
    return entry


async def commands_list(call: MethodCall, p: ListParams) -> dict[str, Any]:
    if p.scope == "native":
        return {"commands": []}
    full = bool(p.include_args)
    out = [_entry(c.name, c.description, "native", c.category, c.args, with_args=full) for c in CHAT_COMMANDS]
    gw = call.gateway
    if gw.built("extensions"):  # plugins loaded: their /commands too (what follows the name is theirs)
        for name, cmd in sorted(gw.plugins.commands.items()):
            description = cmd.description or f"{cmd.plugin_id} command"
            out.append(_entry(name, description, "plugin", None, "", with_args=False) | {"acceptsArgs": True})
    return {"commands": out[:500]}
