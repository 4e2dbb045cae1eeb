"""Pieces every authenticated HTTP endpoint shares: bearer auth with a failure budget, bounded JSON bodies."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from homarus.gateway.errors import error_response, retry_after
from homarus.security.auth import secrets_equal

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["BodyError", "bearer_auth", "json_error", "read_body", "read_json_body"]

BODY_TIMEOUT_S = 30.0


class BodyError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Response:
    """The ``gateway`` family's error (``gateway/errors.py``)."""
    return error_response("gateway", status, message, kind=kind, headers=headers)


def bearer_auth(gateway: GatewayContext, request: Request) -> Response | None:
    """None when the request carries the gateway secret; else the 401/429 response to send."""
    ip = request.client.host if request.client else "unknown"
    auth = gateway.auth
    limited = auth.limited(ip)
    if limited and (wait := auth.limiter.retry_after(ip)) is not None:
        message = "Too many failed authentication attempts. Please try again later."
        return error_response("openai", 429, message, kind="rate_limited", headers=retry_after(wait))
    secret = auth.shared_secret
    if auth.mode == "none":
        return None
    header = request.headers.get("authorization", "")
    scheme, _, provided = header.partition(" ")
    if scheme.lower() == "bearer" and provided and secret and secrets_equal(provided.strip(), secret):
        auth.limiter.reset(ip)
        return None
    if limited and provided:
        auth.limiter.record_failure(ip)
    return error_response("openai", 401, "Unauthorized", kind="unauthorized")


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body, or BodyError 413 (too large, declared or streamed) or 408 (slower than 30 s)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BodyError(413, "Payload too large")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise BodyError(413, "Payload too large")
                chunks.append(chunk)
    except TimeoutError:
        raise BodyError(408, "Request body timeout") from None
    return b"".join(chunks)


async def read_json_body(request: Request, max_bytes: int) -> Any:
    """The JSON body (empty = {}), or BodyError 413 (too large), 408 (too slow), 400 (not JSON)."""
    raw = await read_body(request, max_bytes)
    if not raw.strip():
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BodyError(400, "Invalid JSON body") from None
