"""The health summary shared by the ``health`` method, ``hello-ok`` and the HTTP probes."""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from homarus.errors import HomarusError

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

log = logging.getLogger("homarus.gateway")

__all__ = ["RECENT_SESSIONS", "HealthCache", "build_health", "process_memory", "session_summary"]

#: sessions listed per agent in the summary, newest first (the original lists 5)
RECENT_SESSIONS = 5


def session_summary(gateway: GatewayContext, agent_id: str) -> dict[str, Any]:
    """``{path, count, recent}`` of one agent's session index: the count is one row of the index
    and the recent ones a walk of its updated_at index, so this costs the same at 10 or 10,000
    sessions; an agent with nothing stored yet creates no file."""
    store = gateway.sessions.store(agent_id)
    try:
        count, rows = store.glance(RECENT_SESSIONS)
    except HomarusError as exc:  # a damaged index: health still answers (doctor says what to do)
        log.warning("health: %s", exc)
        count, rows = 0, []
    now = int(time.time() * 1000)
    recent = [
        {"key": key, "updatedAt": updated, "age": None if updated is None else max(0, now - updated)}
        for key, updated in rows
    ]
    return {"path": store.location, "count": count, "recent": recent}


def build_health(gateway: GatewayContext) -> dict[str, Any]:
    started = time.perf_counter()
    cfg = gateway.config
    agents = []
    for agent_id in cfg.agents.ids:
        agents.append(
            {
                "agentId": agent_id,
                "isDefault": agent_id == cfg.agents.default_id,
                "heartbeat": None,
                "sessions": session_summary(gateway, agent_id),
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


def process_memory() -> dict[str, int]:
    """The gateway process's resident memory in the original's ``processMemory`` shape (its V8 heap
    figures have no CPython counterpart and are left out), from ``/proc/self/statm``; empty elsewhere."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            resident = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return {}
    return {"rssBytes": resident * os.sysconf("SC_PAGE_SIZE")}
