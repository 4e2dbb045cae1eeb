"""One resolved view of the skills for an agent: discovery, then gating, then status rows.

Used the same way by the run (prompt and ``read`` roots), the gateway methods and the CLI, so
what ``skills status`` says is what the model gets. :func:`plugin_skill_sources` turns plugin
manifests' ``skills`` entries into sources; a declared directory must stay inside its plugin.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homarus.config.schema import HomarusConfig
from homarus.skills.discovery import BUNDLED_DIR, Discovery, Problem, SkillSource, discover, inside
from homarus.skills.gating import Gate, GateInputs, evaluate
from homarus.skills.model import Skill
from homarus.skills.prompt import SkillsPrompt, render_skills_prompt

__all__ = [
    "PluginSkillDir",
    "SkillState",
    "SkillsView",
    "installed_dir",
    "load_view",
    "plugin_skill_sources",
    "skill_sources",
]


@dataclass(frozen=True, slots=True)
class PluginSkillDir:
    plugin_id: str
    plugin_root: Path
    #: as written in the manifest, relative to the plugin root
    rel: str


@dataclass(frozen=True, slots=True)
class SkillState:
    skill: Skill
    gate: Gate
    #: lower-precedence skills of the same name this one hides
    shadows: tuple[Skill, ...] = ()

    def to_json(self) -> dict[str, Any]:
        meta = self.skill.meta
        out: dict[str, Any] = {
            "name": self.skill.name,
            "skillKey": self.skill.name,
            "description": self.skill.description,
            "source": self.skill.source,
            "origin": self.skill.origin,
            "filePath": str(self.skill.file),
            "baseDir": str(self.skill.base_dir),
            "requirements": {**meta.requires.model_dump(mode="json"), "anyBins": []},
            **self.gate.to_json(),
            # the original's catalog fields: Homarus skills have no alternative binaries, agent
            # filters or installers of their own (``homarus skills install`` fetches whole skills)
            "bundled": self.skill.source == "bundled",
            "always": False,
            "blockedByAgentFilter": False,
            "platformIncompatible": bool(self.gate.missing.get("os")),
            "modelVisible": self.gate.eligible,
            "userInvocable": False,
            "commandVisible": False,
            "configChecks": [
                {"path": path, "satisfied": path not in self.gate.missing.get("config", [])}
                for path in meta.requires.config
            ],
            "install": [],
        }
        out["missing"] = {**self.gate.missing, "anyBins": []}
        if meta.homepage:
            out["homepage"] = meta.homepage
        if meta.emoji:
            out["emoji"] = meta.emoji
        if meta.version:
            out["version"] = meta.version
        if self.shadows:
            out["shadows"] = [{"source": s.source, "origin": s.origin, "filePath": str(s.file)} for s in self.shadows]
        return out


@dataclass(slots=True)
class SkillsView:
    workspace: Path
    installed: Path
    states: list[SkillState] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def eligible(self) -> list[Skill]:
        return [s.skill for s in self.states if s.gate.eligible]

    def get(self, name: str) -> SkillState | None:
        return next((s for s in self.states if s.skill.name == name), None)

    def prompt(self, cfg: HomarusConfig) -> SkillsPrompt:
        lim = cfg.skills.limits
        return render_skills_prompt(self.eligible(), max_count=lim.max_skills_in_prompt, max_chars=lim.max_prompt_chars)


def installed_dir(state_dir: Path) -> Path:
    return state_dir / "skills"


def plugin_skill_sources(dirs: Iterable[PluginSkillDir]) -> tuple[list[SkillSource], list[Problem]]:
    sources: list[SkillSource] = []
    problems: list[Problem] = []
    for d in dirs:
        target = d.plugin_root / d.rel
        real_root = os.path.realpath(d.plugin_root)
        if os.path.isabs(d.rel) or not inside(os.path.realpath(target), real_root):
            problems.append(
                Problem("error", "plugin", str(target), f"plugin {d.plugin_id}: skills dir {d.rel!r} leaves the plugin")
            )
            continue
        sources.append(SkillSource("plugin", target, f"plugin:{d.plugin_id}"))
    return sources, problems


def skill_sources(
    cfg: HomarusConfig, *, workspace: Path, state_dir: Path, plugin_sources: Iterable[SkillSource] = ()
) -> list[SkillSource]:
    """Every source in precedence order."""
    sources = [
        SkillSource("workspace", workspace / "skills", "workspace", confine=workspace),
        SkillSource("installed", installed_dir(state_dir), "installed"),
        *plugin_sources,
    ]
    for i, raw in enumerate(cfg.skills.load.extra_dirs):
        sources.append(SkillSource("extra", Path(raw).expanduser(), f"skills.load.extraDirs[{i}]"))
    sources.append(SkillSource("bundled", BUNDLED_DIR, "bundled"))
    return sources


def load_view(
    cfg: HomarusConfig,
    *,
    workspace: Path,
    state_dir: Path,
    agent_id: str | None = None,
    plugin_dirs: Iterable[PluginSkillDir] = (),
    env: Mapping[str, str] | None = None,
    gate_inputs: GateInputs | None = None,
) -> SkillsView:
    plugin_sources, problems = plugin_skill_sources(plugin_dirs)
    found: Discovery = discover(
        skill_sources(cfg, workspace=workspace, state_dir=state_dir, plugin_sources=plugin_sources)
    )
    inputs = gate_inputs or GateInputs(cfg, agent_id=agent_id, env=os.environ if env is None else env)
    shadows: dict[str, list[Skill]] = {}
    for s in found.shadowed:
        shadows.setdefault(s.by.name, []).append(s.skill)
    states = [
        SkillState(skill, evaluate(skill, inputs), tuple(shadows.get(name, ())))
        for name, skill in sorted(found.skills.items())
    ]
    return SkillsView(workspace, installed_dir(state_dir), states, [*problems, *found.problems])
