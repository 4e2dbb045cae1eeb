"""`health` (always allowed) and the health summary shared with hello-ok and HTTP probes."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic import Field

from homarus.gateway.router import MethodCall, Params
from homarus.security.scopes import READ

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway

__all__ = ["build_health", "register"]


class HealthParams(Params):
    probe: bool | None = Field(default=None)


def build_health(gateway: Gateway) -> dict[str, Any]:
    started = time.perf_counter()
    cfg = gateway.config
    agents = []
    for agent_id in cfg.agents.ids:
        sessions_path = gateway.paths.state_dir / "agents" / agent_id / "sessions" / "sessions.json"
        agents.append(
            {
                "agentId": agent_id,
                "isDefault": agent_id == cfg.agents.default_id,
                "heartbeat": None,
                "sessions": {"path": str(sessions_path), "count": 0, "recent": []},
            }
        )
    default = next(a for a in agents if a["isDefault"]) if agents else None
    return {
        "ok": True,
        "ts": int(time.time() * 1000),
        "durationMs": round((time.perf_counter() - started) * 1000, 3),
        "channels": {},
        "channelOrder": [],
        "channelLabels": {},
        "heartbeatSeconds": 0,
        "defaultAgentId": cfg.agents.default_id,
        "agents": agents,
        "sessions": default["sessions"] if default else {"path": "", "count": 0, "recent": []},
    }


async def health(call: MethodCall, params: HealthParams) -> dict[str, Any]:
    return call.gateway.health_summary(probe=bool(params.probe))


async def system_presence(call: MethodCall, params: Params) -> list[dict[str, Any]]:
    return call.gateway.presence_list()


def register(gateway: Gateway) -> None:
    gateway.methods.register("health", health, scope=None, params=HealthParams)
    gateway.methods.register("system-presence", system_presence, scope=READ)
