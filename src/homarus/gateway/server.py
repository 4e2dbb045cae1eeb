"""Run the gateway under uvicorn: bind, serve, and shut down gracefully on SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

from starlette.routing import Route
from uvicorn.config import Config as UvicornConfig
from uvicorn.server import Server as UvicornServer

from homarus.config.loader import StatePaths
from homarus.config.store import ConfigStore
from homarus.gateway.app import Gateway, GatewayOptions
from homarus.gateway.control_ui import control_ui_routes
from homarus.gateway.hooks_http import hooks_routes
from homarus.gateway.http import build_asgi
from homarus.gateway.openai_http import openai_routes
from homarus.gateway.plugin_wiring import plugin_routes
from homarus.gateway.session_http import session_routes
from homarus.gateway.tools_http import tools_invoke_route
from homarus.gateway.uvicorn_ws import protocol_class
from homarus.protocol.limits import MAX_PAYLOAD_BYTES

__all__ = ["GatewayServer", "build_gateway", "serve"]

log = logging.getLogger("homarus.gateway")


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
    gateway.check_bind_policy()
    return gateway


def _routes(gateway: Gateway) -> list[Route]:
    return [
        tools_invoke_route(gateway),
        *session_routes(gateway),
        *openai_routes(gateway),
        *hooks_routes(gateway),
        *plugin_routes(gateway, gateway.plugins),
        *control_ui_routes(gateway),  # its catch-all GET must stay last
    ]


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
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():  # noqa: ASYNC110 - uvicorn exposes no started event
        await asyncio.sleep(0.005)
    if server.started:
        gateway.on_listening(server.bound_port or 0)
        if on_ready is not None:
            on_ready(server)
    await task
    if not server.started:
        raise OSError(f"could not listen on {gateway.host}:{gateway.options.port}")
