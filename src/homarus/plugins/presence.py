"""Whether any plugin beyond the bundled ones could be found: a cheap look, for the gateway start.

Discovery proper (:mod:`homarus.plugins.discovery`) reads manifests and imports bundled features;
the gateway only pays for it at start when this says an installed plugin may be there (its hooks
must then be live from the first moment). The sources are discovery's, checked for existence only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

from homarus.entry_points import entry_points

if TYPE_CHECKING:
    from homarus.config.plugins import PluginsConfig

__all__ = ["ENTRY_POINT_GROUP", "installed_plugins_present"]

ENTRY_POINT_GROUP: Final = "homarus.plugins"


def installed_plugins_present(config: PluginsConfig, *, state_dir: Path, workspace: Path | None) -> bool:
    if not config.enabled:
        return False  # only bundled plugins are discovered then
    if config.load.paths or any(entry.path is not None for entry in config.entries.values()):
        return True
    if _has_plugin_dirs(state_dir / "extensions"):
        return True
    if workspace is not None and config.workspace.enabled and _has_plugin_dirs(workspace / ".homarus" / "extensions"):
        return True
    return bool(entry_points(ENTRY_POINT_GROUP))


def _has_plugin_dirs(root: Path) -> bool:
    try:
        return any(not child.name.startswith(".") for child in root.iterdir())
    except OSError:  # missing or unreadable: nothing discovery could load either
        return False
