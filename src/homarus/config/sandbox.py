"""The ``agents.defaults.sandbox`` section: where and how sandboxed sessions run commands.

Wire it with one line in :class:`homarus.config.agents.AgentsDefaults`::

    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from homarus.config.base import ConfigModel
from homarus.patterns import Pattern

__all__ = [
    "SandboxBrowserConfig",
    "SandboxConfig",
    "SandboxDockerConfig",
    "SandboxLimits",
    "SandboxPrune",
    "SandboxUlimit",
]


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


class SandboxUlimit(ConfigModel):
    """``--ulimit name=soft:hard``; a missing bound takes the other's value."""

    soft: int | None = Field(None, ge=-1)
    hard: int | None = Field(None, ge=-1)


class SandboxDockerConfig(ConfigModel):
    """The container of the Docker backend (``docker create`` arguments).

    Only shapes are checked here; what would weaken the isolation (host network, unconfined
    profiles, blocked bind sources, option injection) is refused by
    :mod:`homarus.sandbox.docker_args` when the container is created.
    """

    image: str = Field("homarus-sandbox:bookworm-slim", min_length=1)
    #: container names are ``<prefix><slug of the scope key>-<hash>``
    container_prefix: Annotated[str, Pattern(r"^[a-z0-9][a-z0-9_.-]{0,31}$")] = "homarus-sbx-"
    workdir: Annotated[str, Pattern(r"^/")] = "/workspace"
    read_only_root: bool = True
    tmpfs: list[str] = Field(default_factory=lambda: ["/tmp", "/var/tmp", "/run"])  # noqa: S108
    #: ``none``, ``bridge`` or a network name; ``host`` is refused, ``container:<id>`` needs the danger flag
    network: str = Field("none", min_length=1)
    #: the image's sandbox user (as in the bubblewrap backend); as root, new isolated workspaces go to it
    user: str | None = "65534:65534"
    #: ``ALL`` is always dropped, listed or not
    cap_drop: list[str] = Field(default_factory=lambda: ["ALL"])
    #: credential-like keys are stripped
    env: dict[str, str] = Field(default_factory=lambda: {"LANG": "C.UTF-8"})
    pids_limit: int | None = Field(None, ge=1)
    #: docker sizes: ``512m``, ``2g`` or bytes
    memory: str | int | None = None
    memory_swap: str | int | None = None
    cpus: float | None = Field(None, gt=0)
    ulimits: dict[str, int | str | SandboxUlimit] = Field(default_factory=dict)
    seccomp_profile: str | None = None
    apparmor_profile: str | None = None
    dns: list[str] = Field(default_factory=list)
    #: ``host:ip``
    extra_hosts: list[str] = Field(default_factory=list)
    #: ``<source>:<target>[:ro|rw]``, sources under the sandbox or agent workspace
    binds: list[str] = Field(default_factory=list)
    #: run once after creation with ``/bin/sh -lc`` (with network ``none`` it cannot download)
    setup_command: str | None = None
    dangerously_allow_external_bind_sources: bool = False
    dangerously_allow_reserved_container_targets: bool = False
    dangerously_allow_container_namespace_join: bool = False


class SandboxBrowserConfig(ConfigModel):
    #: sandboxed sessions may use the ``browser`` tool, with a profile of their own that starts
    #: empty each time the browser starts (never the agent's cookies); off: no browser for them
    enabled: bool = False


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
    docker: SandboxDockerConfig = Field(default_factory=SandboxDockerConfig)
    browser: SandboxBrowserConfig = Field(default_factory=SandboxBrowserConfig)
