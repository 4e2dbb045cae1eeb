"""Skill directories that loaded plugins ship (``manifest.skills``), for skill discovery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from homarus.skills.catalog import PluginSkillDir

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["plugin_skill_dirs"]


def plugin_skill_dirs(gateway: GatewayContext) -> list[PluginSkillDir]:
    out: list[PluginSkillDir] = []
    for rec in gateway.plugins.records.values():
        if rec.status == "loaded" and rec.manifest is not None and rec.root_dir is not None:
            out.extend(PluginSkillDir(rec.id, rec.root_dir, rel) for rel in rec.manifest.skills or ())
    return out
