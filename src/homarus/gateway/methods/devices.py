"""``device.pair.list|approve|reject|remove|rename`` and ``device.token.rotate|revoke``
(operator.pairing, as the original's method scopes). Removing a device or revoking or rotating its
token closes the device's open sockets at once (4001): what it could do ends with the answer; on a
cluster the other gateways close theirs when the ``devices`` notice reaches them."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from homarus.errors import Forbidden, InvalidRequest, NotFound
from homarus.gateway.router import MethodCall, Params
from homarus.patterns import Pattern
from homarus.protocol.limits import CloseCode
from homarus.security.devices import NOTICE_CHANNEL
from homarus.security.scopes import ADMIN, PAIRING

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["close_device_sockets"]

_ID = Field(min_length=1, max_length=128)


class RequestParams(Params):
    request_id: str = Field(alias="requestId", min_length=1, max_length=64)


class DeviceParams(Params):
    device_id: str = Field(alias="deviceId", min_length=1, max_length=128)


class RenameParams(DeviceParams):
    #: the original's name for the operator's own label of a device (its CLI and UI send it)
    label: str = Field(min_length=1, max_length=64)


class TokenParams(DeviceParams):
    role: Annotated[str, Pattern("^(operator|node)$")] = "operator"


def _device_sockets(gateway: GatewayContext) -> list[tuple[Any, str]]:
    """The open connections that belong to a paired device, with the device's id."""
    return [
        (conn, info.device_id)
        for conn in list(gateway.connections.values())
        if (info := getattr(conn, "info", None)) is not None and info.device_id
    ]


def close_device_sockets(gateway: GatewayContext, device_id: str, reason: str) -> int:
    """Close this gateway's sockets of ``device_id`` (4001); how many."""
    closed = 0
    for conn, owner in _device_sockets(gateway):
        if owner == device_id:
            conn.close(CloseCode.AUTH_CHANGED, reason)
            closed += 1
    return closed


def _close_device(call: MethodCall, device_id: str, reason: str) -> int:
    """Here at once; on a cluster, the other gateways close theirs when told (a ``devices`` notice)."""
    cluster = call.gateway.cluster
    if cluster is not None:
        _ = call.gateway.spawn(cluster.notices.publish(NOTICE_CHANNEL, {"close": device_id, "reason": reason}))
    return close_device_sockets(call.gateway, device_id, reason)


def _resolved(call: MethodCall, request_id: str, device_id: str, decision: str) -> None:
    payload = {"requestId": request_id, "deviceId": device_id, "decision": decision, "ts": int(time.time() * 1000)}
    call.gateway.bus.broadcast("device.pair.resolved", payload, guard=PAIRING)


async def pair_list(call: MethodCall, p: Params) -> dict[str, Any]:
    store = call.gateway.devices
    pending = await asyncio.to_thread(store.pending)
    paired = await asyncio.to_thread(store.paired)
    online = {device_id for _, device_id in _device_sockets(call.gateway)}
    # each paired device says whether it has a socket open now (the original's Devices page shows
    # "offline" otherwise, the Control UI's own device included)
    listed = [d.to_json() | {"connected": d.device_id in online} for d in paired]
    return {"pending": [r.to_json() for r in pending], "paired": listed}


async def pair_approve(call: MethodCall, p: RequestParams) -> dict[str, Any]:
    store = call.gateway.devices
    waiting = next((r for r in await asyncio.to_thread(store.pending) if r.request_id == p.request_id), None)
    if waiting is not None and ADMIN not in call.client.scopes:
        beyond = sorted(set(waiting.scopes) - set(call.client.scopes))
        if beyond:  # nobody hands out more than they hold; the request stays for someone who may
            raise Forbidden(
                f"approving this device would grant scopes you do not hold: {', '.join(beyond)}",
                details={"missingScopes": beyond},
            )
    request = await asyncio.to_thread(store.take, p.request_id)
    by = call.client.display_name or call.client.client_id
    meta = {**request.meta, "approvedBy": by}
    await asyncio.to_thread(
        store.pair, request.device_id, request.public_key, request.role, list(request.scopes), meta, by
    )
    # the token issued here is not shown: the device gets its own on its next connect
    _resolved(call, request.request_id, request.device_id, "approved")
    device = await asyncio.to_thread(store.get, request.device_id)
    return {"requestId": request.request_id, "device": device.to_json() if device else None}


async def pair_reject(call: MethodCall, p: RequestParams) -> dict[str, Any]:
    request = await asyncio.to_thread(call.gateway.devices.take, p.request_id)
    _resolved(call, request.request_id, request.device_id, "rejected")
    return {"requestId": request.request_id, "deviceId": request.device_id}


async def pair_remove(call: MethodCall, p: DeviceParams) -> dict[str, Any]:
    if not await asyncio.to_thread(call.gateway.devices.remove, p.device_id):
        raise NotFound(f"unknown device: {p.device_id}")
    closed = _close_device(call, p.device_id, "device removed")
    return {"deviceId": p.device_id, "removed": True, "closedConnections": closed}


async def pair_rename(call: MethodCall, p: RenameParams) -> dict[str, Any]:
    label = p.label.strip()
    if not label:
        raise InvalidRequest("label required")
    if not await asyncio.to_thread(call.gateway.devices.rename, p.device_id, label):
        raise NotFound("unknown deviceId")
    return {"deviceId": p.device_id, "label": label}


async def token_rotate(call: MethodCall, p: TokenParams) -> dict[str, Any]:
    token = await asyncio.to_thread(call.gateway.devices.rotate, p.device_id, p.role)
    closed = _close_device(call, p.device_id, "device token rotated")
    return {"deviceId": p.device_id, "role": p.role, "token": token, "closedConnections": closed}


async def token_revoke(call: MethodCall, p: TokenParams) -> dict[str, Any]:
    if not await asyncio.to_thread(call.gateway.devices.revoke, p.device_id, p.role):
        raise NotFound(f"no {p.role} token for device {p.device_id}")
    closed = _close_device(call, p.device_id, "device token revoked")
    return {"deviceId": p.device_id, "role": p.role, "revoked": True, "closedConnections": closed}
