"""`plugins.list`: loaded plugins, their status and registrations, and every diagnostic."""

from __future__ import annotations

from typing import Any

from homarus.gateway.router import EmptyParams, MethodCall

__all__: list[str] = []


async def plugins_list(call: MethodCall, params: EmptyParams) -> dict[str, Any]:
    registry = call.gateway.plugins
    return {
        "plugins": [r.to_json(full=True) for r in registry.records.values()],
        "diagnostics": [d.to_json() for d in registry.diagnostics],
    }
