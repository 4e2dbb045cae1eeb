"""``sessions.changed``: the targeted event that tells subscribed connections a session changed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from homarus.sessions.keys import SessionKey
    from homarus.usecases.ports import Publisher

__all__ = ["SessionWatchers", "emit_session_changed"]


class SessionWatchers(Protocol):
    @property
    def bus(self) -> Publisher: ...

    #: connection ids that asked for ``sessions.changed``
    session_subscribers: set[str]


def emit_session_changed(host: SessionWatchers, key: SessionKey, reason: str, **extra: Any) -> None:
    """Tell `sessions.subscribe` connections that a session changed (targeted, no seq), here and
    on the other gateways of a cluster (whose subscribers see the same sessions)."""
    payload = {"sessionKey": key.canonical, "reason": reason, "ts": int(time.time() * 1000), **extra}
    host.bus.send_to(list(host.session_subscribers), "sessions.changed", payload, cluster=True)
