"""`plugins.list`: loaded plugins, their status and registrations, and every diagnostic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from homarus.gateway.router import EmptyParams, MethodCall

if TYPE_CHECKING:
    from homarus.plugins.registry import PluginRecord

__all__: list[str] = []


async def plugins_list(call: MethodCall, params: EmptyParams) -> dict[str, Any]:
    registry = call.gateway.plugins
    return {
        "plugins": [{**r.to_json(full=True), **_catalog_fields(r)} for r in registry.records.values()],
        "diagnostics": [d.to_json() for d in registry.diagnostics],
        # plugins are Python packages: installed and removed with pip, never by the gateway
        "mutationAllowed": False,
        "generation": 1,
    }


def _catalog_fields(record: PluginRecord) -> dict[str, Any]:
    """The original's catalog fields of one plugin (its Control UI lists them with these)."""
    return {
        "installed": True,
        "enabled": record.status != "disabled",
        "state": {"loaded": "enabled", "disabled": "disabled", "error": "error", "blocked": "blocked"}[record.status],
        "removable": False,
        "packageName": record.source.split(":", 1)[0] if record.origin == "entrypoint" else record.id,
        "featured": False,
        "order": 0,
        "hasIcon": False,
        "hasActivityIcon": False,
        "category": "tool",
        "categories": [],
        "runtime": {"state": "loaded" if record.status == "loaded" else "unloaded"},
    }
