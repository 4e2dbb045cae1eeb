"""`status`: what is running, for operators (sensitive fields only for admins)."""

from __future__ import annotations

import os
import platform
from typing import Any

from homarus import __version__
from homarus.gateway.router import EmptyParams, MethodCall
from homarus.security.scopes import ADMIN

__all__: list[str] = []


async def status(call: MethodCall, params: EmptyParams) -> dict[str, Any]:
    gw = call.gateway
    cfg = gw.config
    health = gw.health_summary()
    summary: list[str] = []
    if gw.built("channels"):
        _channels, _labels, summary = gw.channels.manager.health()
    out: dict[str, Any] = {
        "runtimeVersion": __version__,
        "uptimeMs": gw.uptime_ms(),
        "heartbeat": {"defaultAgentId": cfg.agents.default_id, "agents": []},
        "channelSummary": summary,
        "queuedSystemEvents": [],
        "connections": {"count": len(gw.connections), "presence": len(gw.presence.entries)},
        "sessions": {
            "paths": [a["sessions"]["path"] for a in health["agents"]] if ADMIN in call.client.scopes else [],
            "count": sum(a["sessions"]["count"] for a in health["agents"]),
            "defaults": {"model": None, "contextTokens": None},
            "recent": [],
            "byAgent": [{"agentId": a["agentId"], "count": a["sessions"]["count"]} for a in health["agents"]],
        },
        "events": {"seq": gw.bus.last_seq},
        # timer delay p99/max and CPU of the event loop over the last minute, in the original's shape
        "eventLoop": health["eventLoop"],
        # runs the last process accepted and did not finish: queued again, resumed, interrupted
        "recovery": gw.recovery.summary(),
    }
    if ADMIN in call.client.scopes:
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
