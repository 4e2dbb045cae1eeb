"""Build plugin directories and load them the way the gateway does."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homarus.config.schema import HomarusConfig
from homarus.plugins.discovery import BundledPlugin
from homarus.plugins.loader import load_plugins
from homarus.plugins.manifest import MANIFEST_FILE
from homarus.plugins.registry import PluginRegistry
from homarus.plugins.runner import HookRunner
from homarus.tools.base import ToolRegistry

NOOP = "def register(api):\n    pass\n"


def make_plugin(
    root: Path,
    plugin_id: str,
    code: str = NOOP,
    *,
    manifest: dict[str, Any] | str | None = None,
    dirname: str | None = None,
    entry: str = "plugin.py",
    **manifest_fields: Any,
) -> Path:
    """``root/<dirname or id>/`` with a manifest and an entry file (0755 dirs, 0644 files)."""
    d = root / (dirname or plugin_id)
    d.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    d.chmod(0o755)
    if manifest is None:
        manifest = {"id": plugin_id, "configSchema": {"type": "object"}, **manifest_fields}
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (d / MANIFEST_FILE).write_text(text, encoding="utf-8")
    (d / entry).write_text(textwrap.dedent(code), encoding="utf-8")
    (d / entry).chmod(0o644)
    return d


def config_with(plugins: dict[str, Any] | None = None, **other: Any) -> HomarusConfig:
    return HomarusConfig.model_validate({"plugins": plugins or {}, **other})


@dataclass
class Loaded:
    registry: PluginRegistry
    runner: HookRunner
    tools: ToolRegistry

    def status(self, plugin_id: str) -> str:
        record = self.registry.get(plugin_id)
        assert record is not None, f"no record for {plugin_id}: {list(self.registry.records)}"
        return record.status

    def messages(self, plugin_id: str | None = None, level: str | None = None) -> list[str]:
        return [
            d.message
            for d in self.registry.diagnostics
            if (plugin_id is None or d.plugin_id == plugin_id) and (level is None or d.level == level)
        ]


def load(
    state_dir: Path,
    plugins: dict[str, Any] | None = None,
    *,
    workspace: Path | None = None,
    reserved_methods: frozenset[str] = frozenset(),
    reserved_commands: frozenset[str] = frozenset(),
    bundled: tuple[BundledPlugin, ...] = (),
    uid: int | None = None,
    config: HomarusConfig | None = None,
) -> Loaded:
    """Load with ``plugins`` as the config section; no bundled plugins unless asked for."""
    runner = HookRunner()
    tools = ToolRegistry()
    registry = load_plugins(
        config or config_with(plugins),
        state_dir=state_dir,
        workspace=workspace,
        runner=runner,
        tools=tools,
        reserved_methods=reserved_methods,
        reserved_commands=reserved_commands,
        bundled=bundled,
        uid=uid,
    )
    return Loaded(registry, runner, tools)
