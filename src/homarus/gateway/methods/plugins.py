"""`plugins.list`: loaded plugins, their status and registrations, and every diagnostic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from homarus.gateway.router import EmptyParams, MethodCall
from homarus.security.scopes import READ

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway

__all__ = ["register"]


async def plugins_list(call: MethodCall, params: EmptyParams) -> dict[str, Any]:
    registry = call.gateway.plugins
    return {
        "plugins": [r.to_json(full=True) for r in registry.records.values()],
        "diagnostics": [d.to_json() for d in registry.diagnostics],
    }


def register(gateway: Gateway) -> None:
    gateway.methods.register("plugins.list", plugins_list, scope=READ)
