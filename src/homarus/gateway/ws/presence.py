"""Presence: who is connected (operators and nodes, not one-shot CLI calls), with its version."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homarus.gateway.client import ClientInfo

__all__ = ["Presence", "presence_entry"]


@dataclass(slots=True)
class Presence:
    version: int = 1
    health_version: int = 1
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, conn_id: str, info: ClientInfo) -> bool:
        """Record a connection; False when it does not count (a CLI call)."""
        if info.client_mode == "cli":
            return False
        self.entries[conn_id] = presence_entry(info)
        self.version += 1
        return True

    def remove(self, conn_id: str) -> bool:
        if self.entries.pop(conn_id, None) is None:
            return False
        self.version += 1
        return True

    def list(self) -> list[dict[str, Any]]:
        return list(self.entries.values())

    def state_version(self) -> dict[str, int]:
        return {"presence": self.version, "health": self.health_version}


def presence_entry(info: ClientInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "host": info.display_name or info.client_id,
        "clientId": info.client_id,
        "ip": info.ip,
        "version": info.client_version,
        "platform": info.platform,
        "mode": info.client_mode,
        "reason": "connect",
        "ts": info.connected_at_ms,
        "roles": [info.role],
        "scopes": sorted(info.scopes),
    }
    for key, value in (
        ("instanceId", info.instance_id),
        # the paired device behind the socket: the Devices page joins presence to devices by it
        ("deviceId", info.device_id),
        ("deviceFamily", info.device_family),
        ("modelIdentifier", info.model_identifier),
        ("text", info.display_name),
    ):
        if value:
            entry[key] = value
    return entry
