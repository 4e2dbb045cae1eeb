"""``sessions.changed``: the targeted event that tells subscribed connections a session changed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.sessions.keys import SessionKey

__all__ = ["emit_session_changed"]


def emit_session_changed(gateway: GatewayContext, key: SessionKey, reason: str, **extra: Any) -> None:
    """Tell `sessions.subscribe` connections that a session changed (targeted, no seq)."""
    if not gateway.session_subscribers:
        return
    payload = {"sessionKey": key.canonical, "reason": reason, "ts": int(time.time() * 1000), **extra}
    gateway.bus.send_to(list(gateway.session_subscribers), "sessions.changed", payload)
