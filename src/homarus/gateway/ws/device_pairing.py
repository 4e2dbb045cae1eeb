"""What ``connect`` does with a device whose proof verified (openclaw-protocol.md §1.6).

* With the shared secret: a paired device gets a fresh device token in ``hello-ok.auth`` (its
  pairing unchanged: only an approval changes what it was approved for); an
  unpaired one (or one asking for a role or more scopes than it was approved for) is paired
  silently when the connection is local and direct (loopback, no forwarding headers) and it is not
  a scope upgrade; otherwise a pairing request waits for an operator (``device.pair.requested``)
  and the connect fails ``NOT_PAIRED`` / ``PAIRING_REQUIRED`` with its ``requestId``.
* Without the shared secret: the device's own token (``auth.deviceToken``, else ``auth.token``)
  for the requested role admits it, with the requested scopes bounded by the approved ones.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from homarus.errors import RateLimited
from homarus.protocol.frames import ErrorShape
from homarus.security.scopes import PAIRING

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.protocol.handshake import ConnectRequest

__all__ = ["DeviceAdmission", "device_by_token", "pair_or_request"]

log = logging.getLogger("homarus.gateway")

PAIRING_REQUIRED = "pairing required"


@dataclass(frozen=True, slots=True)
class DeviceAdmission:
    device_id: str
    scopes: frozenset[str]
    #: a freshly issued token to hand back once (None when the device came with its token)
    token: str | None
    issued_at: int | None


def _meta(req: ConnectRequest) -> dict[str, Any]:
    c = req.params.client
    return {
        "displayName": c.display_name,
        "platform": c.platform,
        "clientId": c.id,
        "clientMode": c.mode,
        "deviceFamily": c.device_family,
    }


def pair_or_request(
    gw: GatewayContext,
    req: ConnectRequest,
    scopes: frozenset[str],
    ip: str,
    *,
    local: bool,
    post: Callable[[Callable[[], object]], object] | None = None,
) -> DeviceAdmission | ErrorShape:
    """The connection holds the shared secret and a verified device: admit and pair, or ask.

    ``post`` runs the announcement of a new request on the event loop when this runs in a worker
    thread (the device tables are a cluster's database)."""
    device = req.params.device
    assert device is not None
    store = gw.devices
    paired = store.get(device.id)
    reason = None
    if paired is None:
        reason = "not-paired"
    elif paired.role != req.role:
        reason = "role-upgrade"
    elif not scopes <= set(paired.scopes):
        reason = "scope-upgrade"
    if reason is None and paired is not None:
        # already paired: a fresh token, and the pairing as it was approved (asking for fewer
        # scopes this time narrows this connection, never the pairing)
        token = store.rotate(device.id, req.role)
        store.seen(device.id)
        return DeviceAdmission(device.id, scopes & set(paired.scopes), token, store.issued_at(device.id, req.role))
    if local and reason != "scope-upgrade":
        token = store.pair(device.id, device.public_key, req.role, sorted(scopes), _meta(req), "local connection")
        log.info("device %s paired from a local connection (%s)", device.id[:12], reason)
        return DeviceAdmission(device.id, scopes, token, store.issued_at(device.id, req.role))
    try:
        pending, created = store.request(device.id, device.public_key, req.role, sorted(scopes), _meta(req), ip)
    except RateLimited as exc:
        return ErrorShape(code="UNAVAILABLE", message=exc.message, retryable=True, retry_after_ms=60_000)
    if created:
        event = {**pending.to_json(), "reason": reason}
        announce = functools.partial(gw.bus.broadcast, "device.pair.requested", event, guard=PAIRING)
        if post is None:
            announce()
        else:
            post(announce)
        log.warning("device %s from %s waits for pairing approval (%s)", device.id[:12], ip, reason)
    return ErrorShape(
        code="NOT_PAIRED",
        message=PAIRING_REQUIRED,
        details={"code": "PAIRING_REQUIRED", "requestId": pending.request_id, "reason": reason},
    )


def device_by_token(gw: GatewayContext, req: ConnectRequest, requested: frozenset[str]) -> DeviceAdmission | None:
    """The connection has no valid shared secret: its device token, if any, for its role."""
    device = req.params.device
    creds = req.params.auth
    if device is None or creds is None:
        return None
    token = creds.device_token or creds.token
    if not token or not gw.devices.token_ok(device.id, req.role, token):
        return None
    paired = gw.devices.get(device.id)
    if paired is None or paired.public_key.strip() != device.public_key.strip():
        return None
    gw.devices.seen(device.id)
    granted = requested & set(paired.scopes) if requested else frozenset(paired.scopes)
    return DeviceAdmission(device.id, granted, None, gw.devices.issued_at(device.id, req.role))
