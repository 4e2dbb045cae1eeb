"""Protocol constants (numbers match the original gateway's protocol 3)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CLOSE_REASON_MAX_BYTES",
    "HANDSHAKE_TIMEOUT_S",
    "MAX_BUFFERED_BYTES",
    "MAX_PAYLOAD_BYTES",
    "MAX_PREAUTH_PAYLOAD_BYTES",
    "PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOLS",
    "TICK_INTERVAL_MS",
    "CloseCode",
    "truncate_reason",
]

PROTOCOL_VERSION: Final = 3
#: versions this server can speak, most preferred first (4 = the original's 2026.9 clients)
SUPPORTED_PROTOCOLS: Final = (3, 4)
MAX_PAYLOAD_BYTES: Final = 25 * 1024 * 1024
MAX_BUFFERED_BYTES: Final = 50 * 1024 * 1024
MAX_PREAUTH_PAYLOAD_BYTES: Final = 64 * 1024
TICK_INTERVAL_MS: Final = 30_000
HANDSHAKE_TIMEOUT_S: Final = 10.0
CLOSE_REASON_MAX_BYTES: Final = 120


class CloseCode:
    """WebSocket close codes the gateway uses, with the situations that produce them."""

    NORMAL: Final = 1000  # handshake timeout, unparseable pre-hello frame
    PROTOCOL_ERROR: Final = 1002  # protocol version mismatch
    POLICY_VIOLATION: Final = 1008  # handshake/auth failure, slow consumer
    MESSAGE_TOO_BIG: Final = 1009  # pre-auth frame over 64 KiB
    SERVICE_RESTART: Final = 1012  # gateway shutting down
    AUTH_CHANGED: Final = 4001


def truncate_reason(reason: str) -> str:
    """Close reasons travel in one control frame: cut to 120 bytes on a character boundary."""
    raw = reason.encode("utf-8")
    if len(raw) <= CLOSE_REASON_MAX_BYTES:
        return reason
    return raw[:CLOSE_REASON_MAX_BYTES].decode("utf-8", errors="ignore")
