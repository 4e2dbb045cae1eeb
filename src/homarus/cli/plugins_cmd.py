"""`homarus plugins list|info|enable|disable|doctor`.

``list``, ``info`` and ``doctor`` load the plugins in this process exactly as the gateway does
(same discovery, gates, config validation and ``register(api)``), so what they report is what
the gateway would get. ``enable``/``disable`` only read manifests (no plugin code runs) and
write ``plugins.entries.<id>.enabled`` through the config store (validated, atomic).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from homarus.config.loader import StatePaths, load_config
from homarus.config.schema import HomarusConfig
from homarus.config.store import ConfigStore
from homarus.plugins.discovery import discover_plugins
from homarus.plugins.loader import default_workspace, disabled_reason, load_plugins
from homarus.plugins.registry import PluginRecord, PluginRegistry
from homarus.plugins.runner import HookRunner
from homarus.tools.base import ToolRegistry

__all__ = ["core_method_names", "run_plugins"]


def _out(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _err(message: str) -> None:
    sys.stderr.write(f"homarus: {message}\n")


def run_plugins(args: argparse.Namespace, paths: StatePaths) -> int:
    config = load_config(paths).config
    sub = args.plugins_command
    if sub in ("enable", "disable"):
        return _set_enabled(paths, config, args.id, sub == "enable")
    registry = load_registry(config, paths)
    if sub == "list":
        return _list(registry, as_json=args.json)
    if sub == "info":
        return _info(registry, args.id, as_json=args.json)
    if sub == "doctor":
        return _doctor(registry, as_json=args.json)
    _err("usage: homarus plugins {list,info,enable,disable,doctor}")
    return 2


def core_method_names() -> frozenset[str]:
    """The gateway's core method names (from its method table: nothing is imported for them)."""
    from homarus.gateway.methods import CORE_METHODS

    return frozenset(m.name for m in CORE_METHODS)


def load_registry(config: HomarusConfig, paths: StatePaths) -> PluginRegistry:
    quiet = logging.getLogger("homarus.plugins")  # diagnostics are printed by the command itself
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    return load_plugins(
        config,
        state_dir=paths.state_dir,
        workspace=default_workspace(config, paths.state_dir),
        runner=HookRunner(),
        tools=ToolRegistry(),
        reserved_methods=core_method_names(),
    )


def _list(registry: PluginRegistry, *, as_json: bool) -> int:
    rows = [r.to_json() for r in registry.records.values()]
    if as_json:
        _out(rows)
        return 0
    header = ("ID", "ORIGIN", "STATUS", "VERSION", "DIAGNOSTICS")
    table = [header] + [(r["id"], r["origin"], r["status"], r["version"] or "-", str(r["diagnostics"])) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    loose = [d for d in registry.diagnostics if d.plugin_id not in registry.records]
    if loose:
        print(f"\n{len(loose)} diagnostic(s) not tied to a plugin: run `homarus plugins doctor`")
    return 0


def _info(registry: PluginRegistry, plugin_id: str, *, as_json: bool) -> int:
    record = registry.get(plugin_id)
    if record is None:
        _err(f"no plugin with id {plugin_id!r} (see `homarus plugins list`)")
        return 1
    data = record.to_json(full=True)
    if as_json:
        _out(data)
        return 0
    _print_record(record)
    return 0


def _print_record(record: PluginRecord) -> None:
    print(f"{record.id}: {record.name or record.id}" + (f" {record.version}" if record.version else ""))
    if record.description:
        print(f"  {record.description}")
    print(f"  origin:  {record.origin}")
    print(f"  source:  {record.source}")
    print(f"  status:  {record.status}" + (f" ({record.reason})" if record.reason else ""))
    if record.manifest is not None:
        m = record.manifest
        if record.origin not in ("bundled", "entrypoint"):
            print(f"  entry:   {m.entry}")
        print(f"  contracts.tools: {', '.join(m.contracts.tools) or '-'}")
        print(f"  configSchema: {json.dumps(m.config_schema, ensure_ascii=False)}")
    regs = record.registrations.to_json()
    print("  registrations:" + ("" if any(regs.values()) else " none"))
    for kind, names in regs.items():
        if names:
            print(f"    {kind}: {', '.join(names)}")
    print("  diagnostics:" + ("" if record.diagnostics else " none"))
    for diag in record.diagnostics:
        print(f"    {diag.level}: {diag.message}")


def _doctor(registry: PluginRegistry, *, as_json: bool) -> int:
    errors = registry.errors
    if as_json:
        _out(
            {
                "ok": not errors,
                "plugins": [r.to_json() for r in registry.records.values()],
                "diagnostics": [d.to_json() for d in registry.diagnostics],
            }
        )
        return 1 if errors else 0
    counts: dict[str, int] = {}
    for record in registry.records.values():
        counts[record.status] = counts.get(record.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    print(f"{len(registry.records)} plugin(s): {summary or 'none'}")
    for diag in registry.diagnostics:
        print(str(diag))
    if not registry.diagnostics:
        print("no problems found")
    return 1 if errors else 0


def _set_enabled(paths: StatePaths, config: HomarusConfig, plugin_id: str, enabled: bool) -> int:
    pcfg = config.plugins
    found = discover_plugins(pcfg, state_dir=paths.state_dir, workspace=default_workspace(config, paths.state_dir))
    origins = {c.id: c.origin for c in found.candidates}
    if plugin_id not in origins:
        hint = ""
        if not pcfg.enabled:
            hint = " (plugins.enabled is false: only bundled plugins are discovered)"
        elif not pcfg.workspace.enabled:
            hint = " (workspace plugins are discovered only with plugins.workspace.enabled=true)"
        _err(f"no plugin with id {plugin_id!r}{hint}")
        return 1
    store = ConfigStore.open(paths)
    key = f"plugins.entries.{plugin_id}.enabled"
    if "." in plugin_id:  # set_path splits keys on dots; a merge patch names the id whole
        result = store.patch({"plugins": {"entries": {plugin_id: {"enabled": enabled}}}})
    else:
        result = store.set_path(key, enabled)
    state = "unchanged" if result.noop else f"written to {paths.config_path}"
    print(f"{'enabled' if enabled else 'disabled'}: {plugin_id} ({key} = {json.dumps(enabled)}; {state})")
    if enabled:
        reason = disabled_reason(plugin_id, origins[plugin_id], store.current.config.plugins)
        if reason:
            print(f"warning: {plugin_id} still does not load: {reason}")
    print("restart the gateway to apply")
    return 0
