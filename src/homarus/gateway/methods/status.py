"""`status`: what is running, for operators (sensitive fields only for admins).

The original's CLI asks with ``includeChannelSummary`` / ``includeCliProjection`` (``openclaw
status``); both are accepted: the projection is the agent list the CLI prints and chooses from.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from pydantic import Field

from homarus import __version__
from homarus.gateway.router import MethodCall, Params
from homarus.gateway.services.health import process_memory
from homarus.security.scopes import ADMIN

__all__: list[str] = []


class StatusParams(Params):
    include_channel_summary: bool | None = Field(default=None, alias="includeChannelSummary")
    include_cli_projection: bool | None = Field(default=None, alias="includeCliProjection")


async def status(call: MethodCall, params: StatusParams) -> dict[str, Any]:
    gw = call.gateway
    cfg = gw.config
    admin = ADMIN in call.client.scopes
    health = gw.health_summary()
    summary: list[str] = []
    if gw.built("channels") and params.include_channel_summary is not False:
        _channels, _labels, summary = gw.channels.manager.health()
    agents = health["agents"]
    recent = sorted(
        (r for a in agents for r in a["sessions"]["recent"]), key=lambda r: r["updatedAt"] or 0, reverse=True
    )
    out: dict[str, Any] = {
        "runtimeVersion": __version__,
        "uptimeMs": gw.uptime_ms(),
        "heartbeat": {"defaultAgentId": cfg.agents.default_id, "agents": []},
        "channelSummary": summary,
        "queuedSystemEvents": [],
        "connections": {"count": len(gw.connections), "presence": len(gw.presence.entries)},
        "sessions": {
            "paths": [a["sessions"]["path"] for a in agents] if admin else [],
            "count": sum(a["sessions"]["count"] for a in agents),
            "defaults": {"model": None, "contextTokens": None},
            "recent": recent[:5],
            "byAgent": [
                {
                    "agentId": a["agentId"],
                    "path": a["sessions"]["path"] if admin else "[redacted]",
                    "count": a["sessions"]["count"],
                    "recent": a["sessions"]["recent"],
                }
                for a in agents
            ],
        },
        "events": {"seq": gw.bus.last_seq},
        # timer delay p99/max and CPU of the event loop over the last minute, in the original's shape
        "eventLoop": health["eventLoop"],
        "processMemory": process_memory(),
        # runs the last process accepted and did not finish: queued again, resumed, interrupted
        "recovery": gw.recovery.summary(),
    }
    # where the state lives; with PostgreSQL, the gateways sharing it (docs/scale-out.md)
    out["storage"] = await gw.cluster.status() if gw.cluster is not None else {"backend": "embedded"}
    if params.include_cli_projection:
        out["cliProjection"] = _cli_projection(call)
    out["pid"] = os.getpid()  # as the original, to any reader: it names no file and no secret
    if admin:
        out["gateway"] = {
            "bind": gw.host,
            "port": gw.options.port,
            "authMode": gw.auth.mode,
            "configPath": str(gw.paths.config_path),
            "stateDir": str(gw.paths.state_dir),
            "pid": os.getpid(),
            "python": platform.python_version(),
        }
    return out


def _cli_projection(call: MethodCall) -> dict[str, Any]:
    """The agents as the original's CLI reads them: which is the default, and whether a command
    must be told one (never here: a Homarus gateway always has a default agent)."""
    agents = call.gateway.config.agents
    rows = [{"id": e.id, **({"name": e.name} if e.name else {})} for e in agents.list] or [{"id": agents.default_id}]
    return {
        "agents": {
            "defaultId": agents.default_id,
            "ownership": "sole" if len(rows) == 1 else "configured",
            "selectionRequired": False,
            "rows": rows,
        },
        "updateChannel": None,
        # memory search is built in (the original's memory-core slot): off when the config turns it off
        "memoryPlugin": {"enabled": agents.defaults.memory_paths is not None, "slot": "memory-core"},
    }
