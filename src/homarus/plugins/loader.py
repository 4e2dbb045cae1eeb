"""Load plugins: discover, decide enablement, validate config, import, call ``register(api)``.

Order per plugin: enablement (``plugins.deny`` > ``plugins.allow`` > ``entries.<id>.enabled``)
→ safety gates and manifest problems (``blocked`` / ``error``) → ``entries.<id>.config`` against
the manifest's ``configSchema`` → import → synchronous ``register(api)``. A plugin that fails
at import or in ``register`` is an ``error`` and everything it registered is rolled back;
loading continues with the next plugin. Nothing here raises for a plugin's fault.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from homarus.config.plugins import PluginsConfig
from homarus.config.schema import HomarusConfig
from homarus.plugins.api import PluginApi
from homarus.plugins.discovery import BUNDLED_PLUGINS, BundledPlugin, Candidate, discover_plugins, resolve_object
from homarus.plugins.manifest import ManifestError, PluginManifest, parse_manifest, validate_plugin_config
from homarus.plugins.registry import PluginRecord, PluginRegistry, ToolSink
from homarus.plugins.runner import HookRunner

__all__ = ["default_workspace", "load_plugins", "module_name_for"]

FAILED = "plugin failed during register"


def default_workspace(config: HomarusConfig, state_dir: Path) -> Path:
    """The default agent's workspace (where ``.homarus/extensions/`` is looked for)."""
    return config.agents.workspace_for(config.agents.default_id, state_dir)


def module_name_for(plugin_id: str) -> str:
    """The ``sys.modules`` name a directory plugin is imported under."""
    return "homarus_plugin_" + re.sub(r"[^a-z0-9_]", "_", plugin_id)


def load_plugins(
    config: HomarusConfig,
    *,
    state_dir: Path,
    workspace: Path | None,
    runner: HookRunner,
    tools: ToolSink,
    reserved_methods: frozenset[str],
    reserved_commands: frozenset[str] = frozenset(),
    bundled: Iterable[BundledPlugin] = BUNDLED_PLUGINS,
    uid: int | None = None,
) -> PluginRegistry:
    """Discover and load every plugin; hooks go into ``runner``, tools into ``tools``.

    ``reserved_methods`` / ``reserved_commands`` are the core gateway method and chat command
    names a plugin may not take. Returns the registry of records, diagnostics and surfaces.
    """
    pcfg = config.plugins
    registry = PluginRegistry()
    found = discover_plugins(pcfg, state_dir=state_dir, workspace=workspace, bundled=bundled, uid=uid)
    for cand in found.candidates:
        registry.add_record(_record(cand))
    for diag in found.diagnostics:
        registry.add_diagnostic(diag)
    _check_config_refs(pcfg, registry)
    ctx = _LoadContext(
        config=pcfg,
        registry=registry,
        runner=runner,
        tools=tools,
        state_dir=state_dir,
        reserved_methods=reserved_methods,
        reserved_commands=reserved_commands,
        reserved_providers=frozenset({"homarus", *config.models.providers}),
    )
    for cand in found.candidates:
        ctx.load(cand, registry.records[cand.id])
    return registry


def _record(cand: Candidate) -> PluginRecord:
    m = cand.manifest
    return PluginRecord(
        id=cand.id,
        origin=cand.origin,
        source=cand.source,
        name=(m.display_name if m else cand.id),
        version=m.version if m else None,
        description=m.description if m else None,
        manifest=m,
        root_dir=cand.root,
    )


def _check_config_refs(pcfg: PluginsConfig, registry: PluginRegistry) -> None:
    known = set(registry.records)
    refs = [(f"plugins.entries.{i}", i) for i in pcfg.entries]
    refs += [("plugins.allow", i) for i in pcfg.allow] + [("plugins.deny", i) for i in pcfg.deny]
    for where, plugin_id in refs:
        if plugin_id not in known:
            registry.diagnose(
                "warn", f"stale config entry ignored: {where} names {plugin_id!r}, no such plugin", source="config"
            )
    for plugin_id, entry in pcfg.entries.items():
        for hook in entry.hooks.timeouts:
            from homarus.plugins.hookspecs import HOOKS  # only when a timeout is configured

            if hook not in HOOKS:
                registry.diagnose(
                    "warn",
                    f"plugins.entries.{plugin_id}.hooks.timeouts: unknown hook {hook!r} ignored",
                    plugin_id=plugin_id if plugin_id in known else None,
                    source="config",
                )


def disabled_reason(plugin_id: str, origin: str, pcfg: PluginsConfig) -> str:
    """Why config keeps ``plugin_id`` from loading ("" = it may load)."""
    if plugin_id in pcfg.deny:
        return "listed in plugins.deny"
    if pcfg.allow and origin != "bundled" and plugin_id not in pcfg.allow:
        return "not listed in plugins.allow"
    if not pcfg.entry(plugin_id).enabled:
        return f"plugins.entries.{plugin_id}.enabled is false"
    return ""


class _LoadContext:
    def __init__(
        self,
        *,
        config: PluginsConfig,
        registry: PluginRegistry,
        runner: HookRunner,
        tools: ToolSink,
        state_dir: Path,
        reserved_methods: frozenset[str],
        reserved_commands: frozenset[str],
        reserved_providers: frozenset[str],
    ) -> None:
        self.config = config
        self.registry = registry
        self.runner = runner
        self.tools = tools
        self.state_dir = state_dir
        self.reserved_methods = reserved_methods
        self.reserved_commands = reserved_commands
        self.reserved_providers = reserved_providers
        self._module_names: dict[str, str] = {}

    def module_name(self, plugin_id: str) -> str:
        """A module name unique within this load (ids that sanitize alike get a suffix)."""
        if plugin_id not in self._module_names:
            base = name = module_name_for(plugin_id)
            n = 1
            while name in self._module_names.values():
                n += 1
                name = f"{base}_{n}"
            self._module_names[plugin_id] = name
        return self._module_names[plugin_id]

    def fail(self, record: PluginRecord, status: str, message: str) -> None:
        record.status = "blocked" if status == "blocked" else "error"
        self.registry.diagnose("error", message, plugin_id=record.id, source=record.source)

    def load(self, cand: Candidate, record: PluginRecord) -> None:
        reason = disabled_reason(cand.id, cand.origin, self.config)
        if reason:
            record.status, record.reason = "disabled", reason
            return
        if cand.blocked:
            return self.fail(record, "blocked", f"plugin blocked: {cand.blocked}")
        if cand.problem:
            return self.fail(record, "error", cand.problem)
        if cand.unknown_keys:
            self.registry.diagnose(
                "warn", f"manifest: unknown key(s) ignored: {', '.join(cand.unknown_keys)}", plugin_id=cand.id
            )
        manifest = cand.manifest
        if manifest is not None and not self._config_ok(record, manifest):
            return None
        try:
            target = self._import(cand)
        except (Exception, SystemExit) as exc:
            if cand.entry_file is not None:
                _forget_modules(self.module_name(cand.id))
            return self.fail(record, "error", f"{FAILED}: import raised {exc!r}")
        if manifest is None:  # entry point without a manifest file: the object's ``manifest``
            data = getattr(target, "manifest", None)
            if data is None:
                return self.fail(
                    record, "error", "no homarus.plugin.json next to the module and no `manifest` attribute"
                )
            try:
                manifest = parse_manifest(data, source=cand.source)
            except ManifestError as exc:
                return self.fail(record, "error", exc.message)
            if manifest.id != cand.id:
                return self.fail(record, "error", f"manifest id {manifest.id!r} differs from entry point {cand.id!r}")
            updated = _record(Candidate(cand.id, cand.origin, cand.source, root=cand.root, manifest=manifest))
            record.name, record.version, record.description = updated.name, updated.version, updated.description
            record.manifest = manifest
            if not self._config_ok(record, manifest):
                return None
        register = getattr(target, "register", None)
        if register is None and inspect.isfunction(target):
            register = target
        if not callable(register):
            return self.fail(record, "error", "plugin has no register(api)")
        self._register(record, manifest, register)
        return None

    def _config_ok(self, record: PluginRecord, manifest: PluginManifest) -> bool:
        problems = validate_plugin_config(manifest, self.config.entry(record.id).config)
        if problems:
            self.fail(record, "error", f"invalid plugins.entries.{record.id}.config: {'; '.join(problems)}")
            return False
        return True

    def _import(self, cand: Candidate) -> Any:
        if cand.target is not None:
            return cand.target
        if cand.entry_file is not None:
            return _import_file(self.module_name(cand.id), cand.entry_file)
        assert cand.module is not None
        return resolve_object(importlib.import_module(cand.module), cand.attr)

    def _register(self, record: PluginRecord, manifest: PluginManifest, register: Any) -> None:
        api = PluginApi(
            record=record,
            manifest=manifest,
            registry=self.registry,
            runner=self.runner,
            tools=self.tools,
            entry=self.config.entry(record.id),
            state_dir=self.state_dir,
            reserved_methods=self.reserved_methods,
            reserved_commands=self.reserved_commands,
            reserved_providers=self.reserved_providers,
        )
        try:
            result = register(api)
        except (Exception, SystemExit) as exc:
            api.close()
            self.rollback(record.id)
            return self.fail(record, "error", f"{FAILED}: {exc!r}")
        api.close()
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            self.registry.diagnose(
                "warn", "register returned a coroutine; async registration is ignored", plugin_id=record.id
            )
        record.status = "loaded"
        return None

    def rollback(self, plugin_id: str) -> None:
        """Remove everything ``plugin_id`` registered: hooks, tools, methods, routes, ..."""
        self.runner.remove_plugin(plugin_id)
        for name in self.registry.drop_plugin(plugin_id):
            self.tools.unregister(name)


def _import_file(module_name: str, entry: Path) -> ModuleType:
    """Import ``entry`` as the package ``module_name`` (so ``from . import x`` reaches its siblings)."""
    _forget_modules(module_name)
    spec = importlib.util.spec_from_file_location(module_name, entry, submodule_search_locations=[str(entry.parent)])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {entry}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _forget_modules(module_name: str) -> None:
    for name in [n for n in sys.modules if n == module_name or n.startswith(module_name + ".")]:
        del sys.modules[name]
