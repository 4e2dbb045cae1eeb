"""The HTTP app of the gateway port: probes, security headers, error shapes.

Every other HTTP surface is a route passed in by the composition root (most of them
:class:`~homarus.gateway.http.lazy.LazyMount`s that import their module on the first request).
WebSocket upgrades never reach this app: the server's ASGI root sends them to the WS adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from homarus.errors import HomarusError
from homarus.gateway.errors import http_error_response, plain_error

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["SECURITY_HEADERS", "build_http_app", "probe_routes"]

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)
_PROBE_HEADERS = {"Cache-Control": "no-store"}


class SecurityHeaders:
    """Adds the security headers to every HTTP response (pure ASGI: no per-request objects)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def probe_routes(gateway: GatewayContext) -> list[Route]:
    async def live(request: Request) -> Response:
        return JSONResponse({"ok": True, "status": "live"}, headers=_PROBE_HEADERS)

    async def ready(request: Request) -> Response:
        ready = not gateway.shutting_down
        body: dict[str, Any] = {"ready": ready}
        if request.client is not None and request.client.host in ("127.0.0.1", "::1"):
            body["uptimeMs"] = gateway.uptime_ms()
            body["failing"] = [] if ready else ["shutdown"]
        return JSONResponse(body, status_code=200 if ready else 503, headers=_PROBE_HEADERS)

    methods = ["GET", "HEAD"]
    return [
        Route("/health", live, methods=methods),
        Route("/healthz", live, methods=methods),
        Route("/ready", ready, methods=methods),
        Route("/readyz", ready, methods=methods),
    ]


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        # Starlette builds Allow from a set; answer in a stable order (e.g. "GET, HEAD")
        allowed = sorted(m.strip() for m in (exc.headers or {}).get("Allow", "").split(",") if m.strip())
        return plain_error(405, "Method Not Allowed", headers={"Allow": ", ".join(allowed)})
    if exc.status_code == 404:
        return plain_error(404, "Not Found")
    return plain_error(exc.status_code, exc.detail, headers=dict(exc.headers) if exc.headers else None)


async def _homarus_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HomarusError)
    return http_error_response(exc)


async def _server_error(request: Request, exc: Exception) -> Response:
    return plain_error(500, "Internal Server Error")


def build_http_app(routes: Sequence[BaseRoute], lifespan: Any = None) -> ASGIApp:
    """The Starlette app with the gateway's error shapes, wrapped in the security headers."""
    app = Starlette(
        routes=list(routes),
        exception_handlers={HTTPException: _http_exception, HomarusError: _homarus_error, 500: _server_error},
        lifespan=lifespan,
    )
    return SecurityHeaders(app)
