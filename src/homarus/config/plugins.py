"""The ``plugins`` section: which plugins load, from where, with which config and hook policy.

```json5
plugins: {
  enabled: true,                      // false: no discovery at all (bundled features still load)
  allow: ["audit-log"],               // non-empty: only these ids load (bundled ones are exempt)
  deny: [],                           // always wins
  load: { paths: ["~/dev/my-plugin"] },
  workspace: { enabled: false },      // <workspace>/.homarus/extensions/ is off unless enabled
  entries: { "audit-log": {
    enabled: true, path: "~/dev/audit-log", config: { ... },
    hooks: { timeoutMs: 30000, timeouts: { before_tool_call: 5000 },
             allowConversationAccess: false, allowPromptInjection: true } } },
}
```
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from homarus.config.base import ConfigModel

__all__ = [
    "MAX_HOOK_TIMEOUT_MS",
    "PLUGIN_ID_PATTERN",
    "PluginEntryConfig",
    "PluginHooksConfig",
    "PluginLoadConfig",
    "PluginWorkspaceConfig",
    "PluginsConfig",
]

#: a plugin id: the manifest ``id`` and the ``plugins.entries`` key
PLUGIN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
MAX_HOOK_TIMEOUT_MS = 600_000
_ID_RE = re.compile(PLUGIN_ID_PATTERN)


def _check_ids(ids: tuple[str, ...] | list[str], where: str) -> None:
    for plugin_id in ids:
        if not _ID_RE.match(plugin_id):
            raise ValueError(f"{where}: {plugin_id!r} is not a valid plugin id (pattern {PLUGIN_ID_PATTERN})")


class PluginHooksConfig(ConfigModel):
    """Hook policy of one plugin: timeouts and the two gates checked when it calls ``api.on``."""

    #: timeout of every handler of this plugin (overrides the handler's own and the hook's default)
    timeout_ms: int | None = Field(None, ge=1, le=MAX_HOOK_TIMEOUT_MS)
    #: per-hook timeouts (snake_case hook names), the most specific setting
    timeouts: dict[str, int] = Field(default_factory=dict)
    #: hooks that see conversation content; None = allowed for bundled plugins only
    allow_conversation_access: bool | None = None
    #: false refuses hooks that add text to the prompt and next-turn injections
    allow_prompt_injection: bool = True

    @field_validator("timeouts")
    @classmethod
    def _timeouts(cls, v: dict[str, int]) -> dict[str, int]:
        for hook, ms in v.items():
            if not 1 <= ms <= MAX_HOOK_TIMEOUT_MS:
                raise ValueError(f"timeouts.{hook} must be an integer from 1 to {MAX_HOOK_TIMEOUT_MS} (ms)")
        return v


class PluginEntryConfig(ConfigModel):
    """``plugins.entries.<id>``."""

    #: false keeps the entry (and its config) but does not load the plugin
    enabled: bool = True
    #: a plugin directory pinned for this id: the highest-precedence source (relative to the state dir)
    path: str | None = Field(None, min_length=1)
    #: validated against the manifest's ``configSchema``; the plugin sees it as ``api.plugin_config``
    config: dict[str, Any] = Field(default_factory=dict)
    hooks: PluginHooksConfig = Field(default_factory=PluginHooksConfig)


class PluginLoadConfig(ConfigModel):
    #: extra plugin directories: a plugin dir (with homarus.plugin.json) or a dir of plugin dirs
    paths: tuple[str, ...] = ()


class PluginWorkspaceConfig(ConfigModel):
    #: load plugins from ``<workspace>/.homarus/extensions/`` (code from a workspace is untrusted)
    enabled: bool = False


class PluginsConfig(ConfigModel):
    enabled: bool = True
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    load: PluginLoadConfig = Field(default_factory=PluginLoadConfig)
    workspace: PluginWorkspaceConfig = Field(default_factory=PluginWorkspaceConfig)
    entries: dict[str, PluginEntryConfig] = Field(default_factory=dict)

    @field_validator("allow", "deny")
    @classmethod
    def _list_ids(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        _check_ids(v, "plugins")
        return v

    @field_validator("entries")
    @classmethod
    def _entry_ids(cls, v: dict[str, PluginEntryConfig]) -> dict[str, PluginEntryConfig]:
        _check_ids(list(v), "plugins.entries")
        return v

    def entry(self, plugin_id: str) -> PluginEntryConfig:
        """The entry of ``plugin_id`` (defaults when the config has none)."""
        return self.entries.get(plugin_id) or _DEFAULT_ENTRY


_DEFAULT_ENTRY = PluginEntryConfig()
