"""Plugins → gateway: their methods, HTTP routes, chat commands, providers, services and injections.

Every surface a plugin registered is mounted here; a clash with a core name is a diagnostic on
that plugin, never a silent override.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from homarus.errors import RegistrationError
from homarus.gateway.http_common import bearer_auth
from homarus.gateway.router import AnyParams, MethodCall
from homarus.plugins.registry import NextTurnInjection, PluginRegistry, PluginRoute

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway

__all__ = ["CORE_PATHS", "install_plugins", "plugin_routes", "run_command"]

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


def install_plugins(gateway: Gateway, registry: PluginRegistry) -> None:
    for method in registry.methods.values():
        handler = method.handler

        async def call_plugin(call: MethodCall, params: AnyParams, handler: Any = handler) -> Any:
            ctx = {"client": call.client, "gateway": call.gateway, "method": call.method}
            result = handler(params.model_dump(), ctx)
            return await result if inspect.isawaitable(result) else result

        try:
            gateway.methods.register(
                method.name, call_plugin, scope=method.scope, params=AnyParams, owner=method.plugin_id
            )
        except RegistrationError as exc:
            registry.diagnose("error", f"gateway method refused: {exc.message}", plugin_id=method.plugin_id)
    for provider in registry.providers.values():
        if provider.provider_id in gateway.config.models.providers or provider.provider_id == "homarus":
            registry.diagnose(
                "error", f"provider id {provider.provider_id!r} is already configured", plugin_id=provider.plugin_id
            )
            continue
        gateway.models.add_plugin_provider(provider.provider_id, provider.provider, provider.models)
    queue = gateway.runtime.injections

    def inject(request: NextTurnInjection) -> Any:
        return queue.enqueue(
            request.session_key,
            request.plugin_id,
            request.text,
            idempotency_key=request.idempotency_key,
            placement=request.placement,
            ttl_ms=request.ttl_ms,
            metadata=request.metadata,
            plugin_name=request.plugin_name,
        ).to_json(request.session_key)

    registry.next_turn_injector = inject


def plugin_routes(gateway: Gateway, registry: PluginRegistry) -> list[Route]:
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


def _endpoint(gateway: Gateway, route: PluginRoute) -> Any:
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


async def run_command(gateway: Gateway, text: str, session_key: str) -> str | None:
    """Run ``/name args`` if a plugin registered ``name``; returns its reply (None = not a command)."""
    if not text.startswith("/"):
        return None
    name, _, args = text[1:].partition(" ")
    command = gateway.plugins.commands.get(name.strip().lower())
    if command is None:
        return None
    ctx = {"sessionKey": session_key, "pluginId": command.plugin_id}
    try:
        result = command.handler(args.strip(), ctx)
        if inspect.isawaitable(result):
            result = await asyncio.wait_for(result, 30.0)
    except Exception as exc:  # a failing command answers with its error, the chat goes on
        return f"/{name} failed: {exc}"
    return "" if result is None else str(result)
