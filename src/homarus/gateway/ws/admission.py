"""Admission of WebSocket clients: refuse an upgrade early, then check the ``connect`` request.

Before the handshake: a gateway shutting down, credentials in the URL, too many unauthenticated
sockets from one address, or an address locked out by failed guesses are refused with an HTTP
answer, before they cost a socket. In ``connect``: the device proof when one is sent, then the
shared secret (constant time); only a wrong secret counts as a guess. The shared secret without a
device grants scopes only to a local, direct connection.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs

from homarus.gateway.ws.device_pairing import device_by_token, pair_or_request
from homarus.protocol.frames import ErrorShape
from homarus.security.auth import check_shared_secret
from homarus.security.device import DeviceProof, verify_device
from homarus.security.scopes import ALL_OPERATOR_SCOPES

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.protocol.handshake import ConnectRequest

__all__ = ["PROBE_MODE", "Admission"]

#: the client mode of a reachability probe (the original's ``GATEWAY_CLIENT_MODES.PROBE``)
PROBE_MODE = "probe"

log = logging.getLogger("homarus.gateway")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Admitted:
    """A connect that passed: its scopes, and the paired device it proved (with a token to hand
    back once, when one was issued now)."""

    scopes: frozenset[str]
    device_id: str | None = None
    device_token: str | None = None
    token_issued_at: int | None = None


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

    async def _devices(self, work: Callable[[], T]) -> T:
        """Device table work: off the event loop when the tables are a cluster's database (a
        network away: a stalled query must not stall every connection), inline on the local file."""
        if self.gateway.cluster is None:
            return work()
        return await asyncio.to_thread(work)

    async def authenticate(
        self, req: ConnectRequest, ip: str, nonce: str = "", *, local: bool = False
    ) -> Admitted | ErrorShape:
        """Check the shared secret (or a paired device's token); the granted scopes, or the error."""
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
        requested = frozenset(s for s in (req.params.scopes or []) if s in ALL_OPERATOR_SCOPES)
        requested = requested if req.role == "operator" else frozenset()
        decision = check_shared_secret(
            auth.mode,  # type: ignore[arg-type]
            auth.shared_secret,
            creds.token if creds else None,
            creds.password if creds else None,
        )
        if not decision.ok:
            by_token = (
                await self._devices(lambda: device_by_token(self.gateway, req, requested))
                if req.params.device is not None
                else None
            )
            if by_token is not None:
                auth.limiter.reset(ip)
                return Admitted(by_token.scopes, by_token.device_id, None, by_token.issued_at)
            if limited and decision.code is not None and decision.code.endswith("MISMATCH"):
                # only a wrong secret is a guess; a missing one burns no slot
                auth.limiter.record_failure(ip)
            log.warning("auth failed from %s: %s", ip, decision.code)
            return ErrorShape(
                code="INVALID_REQUEST", message=decision.message or "unauthorized", details=decision.details()
            )
        auth.limiter.reset(ip)
        if req.params.device is None:
            # the shared secret without a device: full use from this machine (the local CLI); from
            # anywhere else it proves nothing about who connects, so no scopes (``health`` only),
            # as the original does: a remote app pairs its device first. A probe (the original
            # CLI's reachability check, ``client.mode: probe``) gets none either, as there: it asks
            # whether the gateway answers, and is owed nothing else (presence, status, config)
            if not local:
                log.warning("a device-less connection from %s got no scopes (pair a device)", ip)
            probe = req.params.client.mode == PROBE_MODE
            return Admitted(requested if local and not probe else frozenset())
        loop = asyncio.get_running_loop()
        admitted = await self._devices(
            lambda: pair_or_request(self.gateway, req, requested, ip, local=local, post=loop.call_soon_threadsafe)
        )
        if isinstance(admitted, ErrorShape):
            return admitted
        return Admitted(admitted.scopes, admitted.device_id, admitted.token, admitted.issued_at)

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
