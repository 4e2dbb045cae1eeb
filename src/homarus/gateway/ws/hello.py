"""``hello-ok``: what a client learns once its ``connect`` is accepted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from homarus import __version__
from homarus.protocol.limits import MAX_PAYLOAD_BYTES
from homarus.security.scopes import ADMIN

if TYPE_CHECKING:
    from homarus.gateway.client import ClientInfo
    from homarus.gateway.context import GatewayContext

__all__ = ["GATEWAY_EVENTS", "hello_payload"]

GATEWAY_EVENTS: Final = (
    "connect.challenge",
    "tick",
    "presence",
    "health",
    "shutdown",
    "config.changed",
    "agent",
    "chat",
    "sessions.changed",
    "plugin.approval.requested",
    "plugin.approval.resolved",
    "exec.approval.requested",
    "cron",
    "heartbeat",
    "exec.approval.resolved",
    "channels.pairing.requested",
    "channels.pairing.resolved",
    "device.pair.requested",
    "device.pair.resolved",
)


SERVER_CAPABILITIES: Final = ("published-model-catalog",)


def hello_payload(gateway: GatewayContext, info: ClientInfo) -> dict[str, Any]:
    cfg = gateway.config
    snapshot: dict[str, Any] = {
        "presence": gateway.presence.list(),
        "health": gateway.health_summary(),
        "stateVersion": gateway.state_version(),
        "uptimeMs": gateway.uptime_ms(),
        "sessionDefaults": {
            "defaultAgentId": cfg.agents.default_id,
            "mainKey": cfg.session.main_key,
            "mainSessionKey": f"agent:{cfg.agents.default_id}:{cfg.session.main_key}",
            "scope": cfg.session.scope,
        },
    }
    if ADMIN in info.scopes:
        snapshot.update(
            configPath=str(gateway.paths.config_path),
            stateDir=str(gateway.paths.state_dir),
            authMode=gateway.auth.mode,
        )
    hello: dict[str, Any] = {
        "type": "hello-ok",
        "protocol": info.protocol,
        "server": {"version": __version__, "connId": info.conn_id, "bootId": gateway.boot_id},
        "features": {
            "methods": gateway.methods.advertised(),
            "events": list(GATEWAY_EVENTS),
            # the original's named capabilities its CLI checks before some calls (models list)
            "capabilities": list(SERVER_CAPABILITIES),
        },
        "snapshot": snapshot,
        "policy": {
            "maxPayload": MAX_PAYLOAD_BYTES,
            "maxBufferedBytes": gateway.options.max_buffered_bytes,
            "tickIntervalMs": int(gateway.options.tick_interval_s * 1000),
        },
    }
    # required from protocol 4, optional before: sent to both, so a v3 client (the original CLI's
    # probe) learns what it was granted
    hello["auth"] = {"method": gateway.auth.mode, "role": info.role, "scopes": sorted(info.scopes)}
    return hello
