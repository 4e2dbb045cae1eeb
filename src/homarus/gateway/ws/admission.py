"""Admission of WebSocket clients: refuse an upgrade early, then check the ``connect`` request.

Before the handshake: a gateway shutting down, credentials in the URL, too many unauthenticated
sockets from one address, or an address locked out by failed guesses are refused with an HTTP
answer, before they cost a socket. In ``connect``: the device proof when one is sent, then the
shared secret (constant time); only a wrong secret counts as a guess.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from homarus.protocol.frames import ErrorShape
from homarus.security.auth import check_shared_secret
from homarus.security.device import DeviceProof, verify_device
from homarus.security.scopes import ALL_OPERATOR_SCOPES

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.protocol.handshake import ConnectRequest

__all__ = ["Admission"]

log = logging.getLogger("homarus.gateway")


class Admission:
    def __init__(self, gateway: GatewayContext) -> None:
        self.gateway = gateway
        self._preauth: dict[str, int] = {}

    def upgrade_refusal(self, scope: dict[str, Any], ip: str) -> tuple[int, str, dict[str, str]] | None:
        """Why a WebSocket upgrade must be refused (HTTP status, text, headers), or None."""
        gw = self.gateway
        if gw.shutting_down:
            return 503, "Gateway is shutting down", {}
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if any(k.lower() in ("token", "password", "auth") for k in query):
            return 400, "Credentials must be sent in the connect request, not in the URL.", {}
        if self._preauth.get(ip, 0) >= gw.options.max_preauth_per_ip:
            return 503, "Too many unauthenticated sockets", {}
        if gw.auth.limited(ip) and (wait := gw.auth.limiter.retry_after(ip)):
            # a locked-out address is refused before it costs a socket and a handshake
            return (
                429,
                "Too many failed authentication attempts. Please try again later.",
                {"retry-after": str(max(1, math.ceil(wait)))},
            )
        return None

    def enter(self, ip: str) -> None:
        self._preauth[ip] = self._preauth.get(ip, 0) + 1

    def leave(self, ip: str) -> None:
        n = self._preauth.get(ip, 0) - 1
        if n > 0:
            self._preauth[ip] = n
        else:
            self._preauth.pop(ip, None)

    def authenticate(self, req: ConnectRequest, ip: str, nonce: str = "") -> frozenset[str] | ErrorShape:
        """Check the shared secret; returns the granted scopes or the error to send."""
        auth = self.gateway.auth
        limited = auth.limited(ip)
        if limited and (wait := auth.limiter.retry_after(ip)) is not None:
            return ErrorShape(
                code="INVALID_REQUEST",
                message="unauthorized: too many failed authentication attempts (retry later)",
                details={
                    "code": "AUTH_RATE_LIMITED",
                    "authReason": "rate_limited",
                    "recommendedNextStep": "wait_then_retry",
                    "retryAfterMs": int(wait * 1000),
                },
                retryable=True,
                retry_after_ms=int(wait * 1000),
            )
        creds = req.params.auth
        if req.params.device is not None:
            failure = self._device_failure(req, nonce)
            if failure is not None:
                return failure
        decision = check_shared_secret(
            auth.mode,  # type: ignore[arg-type]
            auth.shared_secret,
            creds.token if creds else None,
            creds.password if creds else None,
        )
        if not decision.ok:
            if limited and decision.code is not None and decision.code.endswith("MISMATCH"):
                # only a wrong secret is a guess; a missing one burns no slot
                auth.limiter.record_failure(ip)
            log.warning("auth failed from %s: %s", ip, decision.code)
            return ErrorShape(
                code="INVALID_REQUEST", message=decision.message or "unauthorized", details=decision.details()
            )
        auth.limiter.reset(ip)
        if req.role != "operator":
            return frozenset()
        requested = req.params.scopes or []
        return frozenset(s for s in requested if s in ALL_OPERATOR_SCOPES)

    @staticmethod
    def _device_failure(req: ConnectRequest, nonce: str) -> ErrorShape | None:
        device = req.params.device
        assert device is not None
        creds = req.params.auth
        c = req.params.client
        failure = verify_device(
            DeviceProof(device.id, device.public_key, device.signature, device.signed_at, device.nonce),
            challenge_nonce=nonce,
            now_ms=int(time.time() * 1000),
            client_id=c.id,
            client_mode=c.mode,
            role=req.role,
            scopes=list(req.params.scopes or []),
            token=(creds.token or creds.device_token or creds.bootstrap_token or "") if creds else "",
            platform=c.platform,
            device_family=c.device_family,
        )
        if failure is None:
            return None
        return ErrorShape(
            code="INVALID_REQUEST", message=failure.message, details={"code": failure.code, "reason": failure.reason}
        )
