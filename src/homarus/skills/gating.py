"""Whether a discovered skill is offered, and if not, every reason why.

Requirements come from the skill (``requires``: binaries on ``PATH``, environment variables,
config keys, operating systems); switches from the config (``skills.entries.<name>.enabled``,
``skills.allowBundled`` for bundled skills, ``agents.list[].skills`` per agent). All reasons are
collected, not just the first, so ``skills status`` tells an operator everything to fix at once.
Nothing here runs a program: binaries are only looked up with :func:`shutil.which`.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from homarus.config.schema import HomarusConfig
from homarus.skills.model import Skill

__all__ = ["Gate", "GateInputs", "config_value", "evaluate"]


@dataclass(slots=True)
class GateInputs:
    config: HomarusConfig
    agent_id: str | None = None
    env: Mapping[str, str] | None = None
    platform: str = sys.platform
    which: Callable[[str], str | None] = shutil.which
    #: the config as JSON (camelCase keys), computed on first use
    _json: dict[str, Any] | None = None

    def config_json(self) -> dict[str, Any]:
        if self._json is None:
            self._json = self.config.model_dump(mode="json", by_alias=True, exclude_none=True)
        return self._json


@dataclass(slots=True)
class Gate:
    eligible: bool
    reasons: list[str] = field(default_factory=list)
    disabled: bool = False
    blocked_by_allowlist: bool = False
    missing: dict[str, list[str]] = field(default_factory=lambda: {"bins": [], "env": [], "config": [], "os": []})

    def to_json(self) -> dict[str, Any]:
        return {
            "eligible": self.eligible,
            "disabled": self.disabled,
            "blockedByAllowlist": self.blocked_by_allowlist,
            "missing": self.missing,
            "reasons": self.reasons,
        }


def config_value(data: Any, dotted: str) -> Any:
    """The value at ``a.b.c`` in nested dicts, or None when absent."""
    cur = data
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def evaluate(skill: Skill, inputs: GateInputs) -> Gate:
    cfg = inputs.config
    gate = Gate(eligible=True)
    entry = cfg.skills.entries.get(skill.name)
    if entry is not None and not entry.enabled:
        gate.disabled = True
        gate.reasons.append(f"disabled in config (skills.entries.{skill.name}.enabled is false)")
    allowed = cfg.skills.allow_bundled
    if skill.source == "bundled" and allowed is not None and skill.name not in allowed:
        gate.blocked_by_allowlist = True
        gate.reasons.append("bundled skill not listed in skills.allowBundled")
    if inputs.agent_id is not None:
        agent = next((a for a in cfg.agents.list if a.id == inputs.agent_id), None)
        if agent is not None and agent.skills is not None and skill.name not in agent.skills:
            gate.blocked_by_allowlist = True
            gate.reasons.append(f"not in agents.list[{inputs.agent_id}].skills")
    req = skill.meta.requires
    for b in req.bins:
        if inputs.which(b) is None:
            gate.missing["bins"].append(b)
    env = inputs.env if inputs.env is not None else {}
    given = entry.env if entry is not None and entry.env else {}
    for e in req.env:
        if not env.get(e) and not given.get(e):
            gate.missing["env"].append(e)
    own = entry.config if entry is not None and entry.config else {}
    for key in req.config:
        if not config_value(own, key) and not config_value(inputs.config_json(), key):
            gate.missing["config"].append(key)
    if req.os and inputs.platform not in req.os:
        gate.missing["os"] = list(req.os)
    labels = {"bins": "binaries not on PATH", "env": "env vars not set", "config": "config keys not set"}
    for kind, label in labels.items():
        if gate.missing[kind]:
            gate.reasons.append(f"{label}: {', '.join(gate.missing[kind])}")
    if gate.missing["os"]:
        gate.reasons.append(f"needs OS {' or '.join(req.os)} (this is {inputs.platform})")
    gate.eligible = not gate.reasons
    return gate
