"""Run the gateway under uvicorn: the ASGI root, the route table, and a graceful shutdown.

The ASGI root sends WebSocket upgrades (any path) to the WS adapter and everything else to the
HTTP app. Each HTTP surface is mounted by path and imported on its first request
(:class:`~homarus.gateway.http.lazy.LazyMount`), so an unused surface costs nothing.
"""

from __future__ import annotations

import asyncio
import errno
import importlib
import logging
import socket
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from homarus.config.paths import StatePaths
from homarus.config.store import ConfigStore
from homarus.gateway.app import Gateway, GatewayOptions
from homarus.gateway.http.asgi import build_http_app, probe_routes
from homarus.gateway.http.control_ui import control_ui_routes
from homarus.gateway.http.lazy import LazyMount
from homarus.gateway.uvicorn_parts import uvicorn_config_and_server
from homarus.gateway.ws.uvicorn_ws import protocol_class
from homarus.protocol.limits import MAX_PAYLOAD_BYTES

if TYPE_CHECKING:
    from uvicorn.config import Config as UvicornConfig
    from uvicorn.server import Server as UvicornServer
else:
    UvicornConfig, UvicornServer = uvicorn_config_and_server()

__all__ = ["GatewayServer", "build_asgi", "build_gateway", "make_server", "serve"]

log = logging.getLogger("homarus.gateway")
_HTTP = "homarus.gateway.http."


class GatewayServer(UvicornServer):
    """uvicorn server that lets the gateway say goodbye before connections are cut."""

    def __init__(self, config: UvicornConfig, gateway: Gateway) -> None:
        super().__init__(config)
        self.gateway = gateway

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.gateway.shutdown()
        await super().shutdown(sockets)

    @property
    def bound_port(self) -> int | None:
        for server in getattr(self, "servers", []):
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        return None


def build_gateway(paths: StatePaths, options: GatewayOptions | None = None) -> Gateway:
    store = ConfigStore.open(paths)
    gateway = Gateway(paths, store, options)
    gateway.auth.check_bind_policy(gateway.host)
    return gateway


def _routes(gateway: Gateway) -> list[BaseRoute]:
    routes: list[BaseRoute] = [
        LazyMount("/tools/invoke", _HTTP + "tools_invoke:tools_invoke_routes", gateway),
        LazyMount("/sessions", _HTTP + "session_history:session_routes", gateway),
        LazyMount("/v1", _HTTP + "openai_chat:openai_routes", gateway),
        LazyMount(lambda: gateway.config.hooks.path, _HTTP + "hooks:hooks_routes", gateway),
    ]
    if gateway.config.present("channels"):
        from homarus.gateway.http.channel_webhooks import ChannelWebhooks

        routes.append(ChannelWebhooks(gateway))
    if gateway.built("extensions"):
        from homarus.gateway.http.plugin_routes import plugin_routes

        routes += plugin_routes(gateway, gateway.plugins)
    return [*routes, *control_ui_routes(gateway)]  # the UI's catch-all GET must stay last


_WS_MODULE = "homarus.gateway.ws.connection"


def build_asgi(gateway: Gateway, extra_routes: Sequence[BaseRoute] = ()) -> ASGIApp:
    """The ASGI root: WebSocket upgrades to the WS adapter, the rest to the HTTP app."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await gateway.startup()
        yield
        await gateway.shutdown()

    http_app = build_http_app([*probe_routes(gateway), *extra_routes], lifespan)

    async def root(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # the protocol stack (frames, handshake, device proofs) loads with the first client, in
            # a worker thread: ~100 ms of imports on the loop would stall every other client
            if _WS_MODULE not in sys.modules:
                await asyncio.to_thread(importlib.import_module, _WS_MODULE)
            from homarus.gateway.ws.connection import WSConnection

            await WSConnection(gateway, gateway.ws, dict(scope), receive, send).run()
            return
        await http_app(scope, receive, send)

    return root


def make_server(gateway: Gateway, *, sock: socket.socket | None = None, log_level: str = "warning") -> GatewayServer:
    port = gateway.options.port if gateway.options.port is not None else gateway.config.gateway.port
    config = UvicornConfig(
        build_asgi(gateway, extra_routes=_routes(gateway)),
        host=gateway.host,
        port=port,
        ws=protocol_class(),
        ws_max_size=MAX_PAYLOAD_BYTES,
        ws_per_message_deflate=False,
        lifespan="on",
        log_level=log_level,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=5,
    )
    return GatewayServer(config, gateway)


async def serve(
    gateway: Gateway, *, on_ready: Callable[[GatewayServer], Any] | None = None, log_level: str = "warning"
) -> None:
    server = make_server(gateway, log_level=log_level)
    _check_free(gateway.host, server.config.port)  # uvicorn would sys.exit() from inside the loop
    await gateway.open_storage()  # a database that cannot be had stops the start, before the port is bound
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():  # noqa: ASYNC110 - uvicorn exposes no started event
        await asyncio.sleep(0.005)
    if server.started:
        gateway.on_listening(server.bound_port or 0)
        if on_ready is not None:
            on_ready(server)
    await task
    if not server.started:
        raise OSError(f"could not listen on {gateway.host}:{server.config.port}")


def _check_free(host: str, port: int) -> None:
    """Bind as uvicorn will (``SO_REUSEADDR``) and let go: a port in use is an OSError saying so."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            why = "in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise OSError(f"cannot listen on {host}:{port}: {why}") from None
