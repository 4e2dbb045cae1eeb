"""A small protocol-3 WebSocket client used by `homarus gateway call` and `homarus health`."""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import uuid
from typing import TYPE_CHECKING, Any

from homarus import __version__
from homarus.security.scopes import ADMIN, APPROVALS, PAIRING, READ, WRITE

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["GatewayCallError", "GatewayUnreachable", "call", "call_gateway", "fail", "gateway_target"]

OPERATOR_SCOPES = [ADMIN, READ, WRITE, APPROVALS, PAIRING]


class GatewayUnreachable(Exception):
    """No gateway answered at the URL (not running, wrong port, or the socket closed on us)."""


def gateway_target(paths: StatePaths, url: str | None = None, token: str | None = None) -> tuple[str, str | None]:
    """The gateway's URL and token: the flags, else the config file, else the stored token."""
    from homarus.config.loader import load_config
    from homarus.security.token_store import read_token

    cfg = load_config(paths).config
    if token is None and cfg.gateway.auth.token is not None:
        token = cfg.gateway.auth.token.get_secret_value()
    if token is None:
        token = read_token(paths.token_path)
    return url or f"ws://127.0.0.1:{cfg.gateway.port}", token


def call(args: Any, paths: StatePaths, method: str, params: Any = None) -> Any:
    """One method call for a CLI command with :func:`client_args` options.

    Raises :class:`GatewayCallError` when the gateway answered with an error and
    :class:`GatewayUnreachable` when no gateway answered.
    """
    url, token = gateway_target(paths, getattr(args, "url", None), getattr(args, "token", None))
    try:
        return asyncio.run(call_gateway(url, token, method, params, timeout=getattr(args, "timeout", 30.0)))
    except GatewayCallError:
        raise
    except (OSError, TimeoutError) as exc:
        raise GatewayUnreachable(f"cannot reach the gateway at {url}: {str(exc) or type(exc).__name__}") from None
    except Exception as exc:  # websockets raises its own ConnectionClosed/InvalidStatus types
        raise GatewayUnreachable(f"gateway call failed: {type(exc).__name__}: {exc}") from None


def fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"homarus: {message}\n")
    return code


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
    scopes: list[str] | None = None,
) -> Any:
    """Connect, authenticate (asking for ``scopes``, by default an operator's), call one method and
    return its payload (raises on error)."""
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
                        "scopes": OPERATOR_SCOPES if scopes is None else scopes,
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
