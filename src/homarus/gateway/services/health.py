"""The health summary shared by the ``health`` method, ``hello-ok`` and the HTTP probes."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["HealthCache", "build_health"]


def build_health(gateway: GatewayContext) -> dict[str, Any]:
    started = time.perf_counter()
    cfg = gateway.config
    agents = []
    for agent_id in cfg.agents.ids:
        sessions_path = gateway.paths.state_dir / "agents" / agent_id / "sessions" / "sessions.sqlite"
        agents.append(
            {
                "agentId": agent_id,
                "isDefault": agent_id == cfg.agents.default_id,
                "heartbeat": None,
                "sessions": {"path": str(sessions_path), "count": 0, "recent": []},
            }
        )
    default = next(a for a in agents if a["isDefault"]) if agents else None
    channels: dict[str, Any] = {}
    labels: dict[str, str] = {}
    if gateway.built("channels"):  # an unconfigured channel layer is never built for a probe
        channels, labels, _lines = gateway.channels.manager.health()
    return {
        "ok": True,
        "ts": int(time.time() * 1000),
        "durationMs": round((time.perf_counter() - started) * 1000, 3),
        "channels": channels,
        "channelOrder": list(channels),
        "channelLabels": labels,
        "heartbeatSeconds": 0,
        "defaultAgentId": cfg.agents.default_id,
        "agents": agents,
        "sessions": default["sessions"] if default else {"path": "", "count": 0, "recent": []},
    }


class HealthCache:
    """The summary, rebuilt at most every ``ttl_s`` unless a caller asks for a fresh probe."""

    def __init__(self, gateway: GatewayContext, ttl_s: float) -> None:
        self.gateway = gateway
        self.ttl_s = ttl_s
        self._cached: tuple[float, dict[str, Any]] | None = None

    def summary(self, *, probe: bool = False) -> dict[str, Any]:
        now = time.monotonic()
        if not probe and self._cached is not None and now - self._cached[0] < self.ttl_s:
            return self._cached[1]
        summary = build_health(self.gateway)
        self._cached = (now, summary)
        return summary

    def invalidate(self) -> None:
        self._cached = None
