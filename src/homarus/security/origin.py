"""Browser origin check for WebSocket clients (protocol §1.4 check h).

Browsers let any page open a WebSocket to any host and only tell the server where the page came
from (``Origin``). A page on another site must not be able to drive the gateway through a user's
browser, so a socket that carries an ``Origin`` is accepted only when that origin is the gateway
itself (same host and port as the ``Host`` the browser connected to) or is listed in
``gateway.controlUi.allowedOrigins``. Clients without ``Origin`` (CLI, scripts, native apps) are
not browsers and are not affected; they still need the token.

There is deliberately no "any loopback origin" rule: another local web server (a dev server on
``localhost:3000``) is exactly the cross-origin page this check exists to refuse.

DNS rebinding: a site can make its own name resolve to 127.0.0.1, so its page, its ``Origin`` and
the ``Host`` it sends all say ``evil.example:18789``, and "same host" holds. A gateway bound to
loopback therefore accepts the same-host rule only for loopback hosts (``127.x``, ``::1``,
``localhost``); names it is reached by on purpose go in ``allowedOrigins``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from homarus.config.control_ui import normalize_origin

__all__ = ["ORIGIN_NOT_ALLOWED", "OriginRefusal", "check_origin"]

ORIGIN_NOT_ALLOWED = (
    "origin not allowed (open the Control UI from the gateway host or allow it in gateway.controlUi.allowedOrigins)"
)


@dataclass(frozen=True, slots=True)
class OriginRefusal:
    #: machine-readable why: ``origin-invalid`` | ``origin-mismatch`` | ``host-not-local``
    reason: str
    origin: str


def check_origin(
    origin: str | None, host: str | None, allowed: Sequence[str], *, loopback_only: bool = False
) -> OriginRefusal | None:
    """None when the socket may proceed, else why it may not.

    ``allowed`` holds normalized origins (``ControlUiConfig.allowed_origins``) or ``"*"``;
    ``loopback_only`` (the gateway listens on loopback) limits the same-host rule to loopback hosts.
    """
    if origin is None:
        return None
    if "*" in allowed:
        return None
    normalized = normalize_origin(origin)
    if normalized is None:
        return OriginRefusal("origin-invalid", origin[:200])
    if normalized in allowed:
        return None
    if host and _same_host(normalized, host):
        if loopback_only and not _is_loopback(urlsplit(normalized).hostname or ""):
            return OriginRefusal("host-not-local", origin[:200])
        return None
    return OriginRefusal("origin-mismatch", origin[:200])


def _is_loopback(hostname: str) -> bool:
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return hostname == "localhost"


def _same_host(normalized_origin: str, host: str) -> bool:
    """Whether ``Host`` names the same host:port as the origin (the page came from this gateway)."""
    scheme = urlsplit(normalized_origin).scheme
    if any(c in host for c in "/?#@ \t"):
        return False
    return normalize_origin(f"{scheme}://{host}") == normalized_origin
