"""The ``agents.defaults.sandbox`` section: where and how sandboxed sessions run commands.

Wire it with one line in :class:`homarus.config.agents.AgentsDefaults`::

    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from homarus.config.base import ConfigModel

__all__ = ["SandboxConfig", "SandboxLimits", "SandboxPrune"]


class SandboxLimits(ConfigModel):
    """Resource limits of each sandboxed command (rlimits; bubblewrap has no cgroup knobs)."""

    #: RLIMIT_AS (virtual memory) in MiB
    memory_mb: int = Field(2048, ge=64, le=1_048_576)
    #: RLIMIT_NPROC: processes of the sandbox user (counted per host uid)
    pids: int = Field(256, ge=8, le=65_536)
    #: RLIMIT_CPU: CPU seconds of each process
    cpu_seconds: int = Field(600, ge=1, le=86_400)
    #: RLIMIT_FSIZE: the largest file a process may write, in MiB
    file_size_mb: int = Field(1024, ge=1, le=1_048_576)


class SandboxPrune(ConfigModel):
    idle_hours: int = Field(24, ge=0)
    max_age_days: int = Field(7, ge=0)


class SandboxConfig(ConfigModel):
    #: ``off``; ``non-main``: every session but the main one; ``all``
    mode: Literal["off", "non-main", "all"] = "off"
    #: one sandbox workspace per session, per agent, or one shared by all
    scope: Literal["session", "agent", "shared"] = "agent"
    #: ``none``: an isolated workspace; ``ro``: plus the agent workspace read-only at /agent;
    #: ``rw``: the agent workspace read-write at /workspace
    workspace_access: Literal["none", "ro", "rw"] = "none"
    backend: Literal["bwrap", "docker", "auto"] = "auto"
    #: where the isolated workspaces live (default: ``$STATE/sandboxes``)
    workspace_root: str | None = None
    network: Literal["none", "allow"] = "none"
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    prune: SandboxPrune = Field(default_factory=SandboxPrune)
