"""Plugins → gateway: their methods, model providers and next-turn injections (their chat commands
run through ``usecases/commands.py``).

Every surface a plugin registered is mounted here (HTTP routes: ``http/plugin_routes.py``); a
clash with a core name is a diagnostic on that plugin, never a silent override.
"""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

from homarus.errors import RegistrationError
from homarus.gateway.router import AnyParams, MethodCall

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.plugins.registry import NextTurnInjection, PluginRegistry
    from homarus.providers.registry import ModelRegistry

__all__ = ["add_plugin_providers", "install_plugins", "log_diagnostics"]

log = logging.getLogger("homarus.gateway")


def install_plugins(gateway: GatewayContext, registry: PluginRegistry) -> None:
    """Mount the plugins' methods and let them queue next-turn injections."""
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
    queue = gateway.injections

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


def add_plugin_providers(gateway: GatewayContext, registry: PluginRegistry, models: ModelRegistry) -> None:
    """Add the plugins' model providers to ``models`` (a configured provider id wins)."""
    for provider in registry.providers.values():
        if provider.provider_id in gateway.config.models.providers or provider.provider_id == "homarus":
            registry.diagnose(
                "error", f"provider id {provider.provider_id!r} is already configured", plugin_id=provider.plugin_id
            )
            continue
        models.add_plugin_provider(provider.provider_id, provider.provider, provider.models)


def log_diagnostics(registry: PluginRegistry) -> None:
    for diag in registry.diagnostics:
        (log.error if diag.level == "error" else log.warning)("plugin %s: %s", diag.plugin_id, diag.message)
