"""Who is on the other end of a connection: :class:`ClientInfo` (set by the handshake, read by
methods, presence, approvals and the audit trail)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ClientInfo"]


@dataclass(slots=True)
class ClientInfo:
    """What the gateway knows about an authenticated connection."""

    conn_id: str
    ip: str
    role: str
    scopes: frozenset[str]
    protocol: int
    client_id: str
    client_mode: str
    client_version: str
    platform: str
    instance_id: str | None = None
    display_name: str | None = None
    device_family: str | None = None
    model_identifier: str | None = None
    caps: frozenset[str] = frozenset()
    connected_at_ms: int = 0
    #: the paired device this connection proved it holds (None: no device, or not paired)
    device_id: str | None = None

    def origin(self) -> dict[str, Any]:
        """Who this is, for the audit trail (no secrets: ids and names the client declared)."""
        return {
            "kind": "connection",
            "connId": self.conn_id,
            "clientId": self.client_id,
            "displayName": self.display_name,
            "mode": self.client_mode,
            "ip": self.ip,
        }
