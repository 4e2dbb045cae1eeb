"""A small protocol-3 WebSocket client used by `homarus gateway call` and `homarus health`."""

from __future__ import annotations

import asyncio
import json
import platform
import uuid
from typing import Any

from homarus import __version__
from homarus.security.scopes import ADMIN, APPROVALS, PAIRING, READ, WRITE

__all__ = ["GatewayCallError", "call_gateway"]

OPERATOR_SCOPES = [ADMIN, READ, WRITE, APPROVALS, PAIRING]


class GatewayCallError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", "error"))
        self.error = error


async def call_gateway(
    url: str,
    token: str | None,
    method: str,
    params: Any = None,
    *,
    timeout: float = 30.0,
    expect_final: bool = False,
) -> Any:
    """Connect, authenticate, call one method and return its payload (raises on error)."""
    from websockets.asyncio.client import connect

    async with asyncio.timeout(timeout), connect(url, max_size=None, open_timeout=timeout) as ws:
        challenge = json.loads(await ws.recv())
        if challenge.get("event") != "connect.challenge":
            raise GatewayCallError({"code": "PROTOCOL", "message": "gateway did not send connect.challenge"})
        connect_id = str(uuid.uuid4())
        await ws.send(
            json.dumps(
                {
                    "type": "req",
                    "id": connect_id,
                    "method": "connect",
                    "params": {
                        "minProtocol": 3,
                        "maxProtocol": 3,
                        "client": {
                            "id": "homarus-cli",
                            "version": __version__,
                            "platform": platform.system().lower(),
                            "mode": "cli",
                            "instanceId": str(uuid.uuid4()),
                        },
                        "role": "operator",
                        "scopes": OPERATOR_SCOPES,
                        **({"auth": {"token": token}} if token else {}),
                    },
                }
            )
        )
        hello = await _response(ws, connect_id, expect_final=False)
        del hello
        call_id = str(uuid.uuid4())
        await ws.send(json.dumps({"type": "req", "id": call_id, "method": method, "params": params or {}}))
        return await _response(ws, call_id, expect_final=expect_final)


async def _response(ws: Any, request_id: str, *, expect_final: bool) -> Any:
    while True:
        frame = json.loads(await ws.recv())
        if frame.get("type") != "res" or frame.get("id") != request_id:
            continue
        if not frame.get("ok"):
            raise GatewayCallError(frame.get("error") or {"message": "request failed"})
        payload = frame.get("payload")
        if expect_final and isinstance(payload, dict) and payload.get("status") == "accepted":
            continue
        return payload
