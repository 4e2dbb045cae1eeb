"""HTTP routes that plugins registered, mounted beside the gateway's own (never over them)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from homarus.gateway.http.common import bearer_auth

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.plugins.registry import PluginRegistry, PluginRoute

__all__ = ["CORE_PATHS", "plugin_routes"]

#: HTTP paths the gateway serves itself; a plugin route may not shadow them
CORE_PATHS = (
    "/health",
    "/healthz",
    "/ready",
    "/readyz",
    "/tools/invoke",
    "/hooks",
    "/v1",
    "/sessions",
    "/assets",
    "/__homarus",
)


def plugin_routes(gateway: GatewayContext, registry: PluginRegistry) -> list[Route]:
    routes: list[Route] = []
    for route in registry.routes:
        root = route.path.rstrip("/") == ""  # would shadow the control UI and everything else
        if root or any(
            route.path == p or route.path.startswith(p + "/") or p.startswith(route.path + "/") for p in CORE_PATHS
        ):
            registry.diagnose(
                "error", f"HTTP route {route.path} clashes with a gateway path; refused", plugin_id=route.plugin_id
            )
            continue
        path = route.path if route.match == "exact" else route.path.rstrip("/") + "/{rest:path}"
        routes.append(Route(path, _endpoint(gateway, route), methods=None))
        if route.match == "prefix":
            routes.append(Route(route.path.rstrip("/") or "/", _endpoint(gateway, route), methods=None))
    return routes


def _endpoint(gateway: GatewayContext, route: PluginRoute) -> Any:
    async def endpoint(request: Request) -> Response:
        if route.auth == "gateway":
            denied = bearer_auth(gateway, request)
            if denied is not None:
                return denied
        result = route.handler(request)
        response = await result if inspect.isawaitable(result) else result
        if not isinstance(response, Response):
            raise TypeError(f"plugin {route.plugin_id} route {route.path} returned {type(response).__name__}")
        return response

    return endpoint
