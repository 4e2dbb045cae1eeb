"""The ``skills`` config section: where skills are found, which are on, and how much of the prompt they get.

``entries`` is keyed by skill name. ``allowBundled`` is None (every bundled skill allowed) or the
list of bundled skill names allowed; skills from other sources are not affected by it. The limits
bound the ``<available_skills>`` block of the system prompt, whatever is installed.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from homarus.config.base import ConfigModel

__all__ = ["SKILL_NAME_PATTERN", "SkillEntryConfig", "SkillsConfig", "SkillsLimits", "SkillsLoadConfig"]

#: lowercase letters, digits and hyphens; also a safe directory name under ``$STATE/skills``
SKILL_NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
_ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


class SkillsLoadConfig(ConfigModel):
    #: more directories of skills (lowest precedence before the bundled ones)
    extra_dirs: tuple[str, ...] = ()


class SkillEntryConfig(ConfigModel):
    enabled: bool = True
    #: env vars that satisfy the skill's ``requires.env`` (values are never shown in status)
    env: dict[str, str] | None = None
    #: free-form settings for the skill; satisfies ``requires.config`` keys
    config: dict[str, Any] | None = None

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        for name in v or {}:
            if not re.fullmatch(_ENV_NAME_PATTERN, name):
                raise ValueError(f"not an environment variable name: {name!r}")
        return v


class SkillsLimits(ConfigModel):
    max_skills_in_prompt: int = Field(150, ge=0, le=10_000)
    max_prompt_chars: int = Field(30_000, ge=0, le=1_000_000)


class SkillsConfig(ConfigModel):
    load: SkillsLoadConfig = Field(default_factory=SkillsLoadConfig)
    entries: dict[str, SkillEntryConfig] = Field(default_factory=dict)
    #: bundled skill names allowed; None = all of them
    allow_bundled: tuple[str, ...] | None = None
    limits: SkillsLimits = Field(default_factory=SkillsLimits)
