"""``hooks.status``: the HOOK.md hooks the gateway loaded (``<state>/hooks/<name>/``), in the
original's shape (``openclaw hooks list|check``), and the ones it refused with why.

Homarus's hooks are Python handlers with no install step and no requirements block, so their
requirements are empty and always satisfied; a hook that could not be loaded (a missing
handler, world-writable files, an unreadable HOOK.md) is listed under ``diagnostics``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.router import MethodCall, Params
from homarus.plugins.hookmd import FAMILIES, KNOWN_EVENTS

__all__: list[str] = []

_NONE: dict[str, list[str]] = {"bins": [], "anyBins": [], "env": [], "config": [], "os": []}


class StatusParams(Params):
    #: whose workspace to name (the hooks themselves are the gateway's, shared by every agent)
    agent_id: str | None = Field(default=None, alias="agentId", min_length=1, max_length=64)


async def hooks_status(call: MethodCall, p: StatusParams) -> dict[str, Any]:
    gw = call.gateway
    agent = p.agent_id or gw.config.agents.default_id
    if agent not in gw.config.agents.ids:
        raise InvalidRequest(f'unknown agent id "{agent}"')
    runner = gw.hookmd
    hooks = []
    for hook in runner.hooks:
        hooks.append(
            {
                "name": hook.name,
                "description": hook.description,
                "source": f"homarus-{hook.origin}",
                "filePath": str(hook.path / "HOOK.md"),
                "baseDir": str(hook.path),
                "handlerPath": str(hook.path / "handler.py"),
                "hookKey": hook.name,
                "events": list(hook.events),
                "unknownEvents": [e for e in hook.events if e not in KNOWN_EVENTS and e not in FAMILIES],
                "always": False,
                "enabledByConfig": True,
                "requirementsSatisfied": True,
                "loadable": True,
                "managedByPlugin": False,
                "requirements": _NONE,
                "missing": _NONE,
                "configChecks": [],
                "install": [],
            }
        )
    return {
        "workspaceDir": str(gw.workspace_dir(agent)),
        "managedHooksDir": str(gw.paths.state_dir / "hooks"),
        "hooks": hooks,
        "diagnostics": [{"level": d.level, "source": d.source, "message": d.message} for d in runner.diagnostics],
    }
