"""Which sessions run sandboxed, and the sandbox each one gets (``agents.defaults.sandbox``).

``mode``: ``off`` (nobody), ``non-main`` (every session but each agent's main one: group,
channel, hook, cron and sub-agent sessions are confined, the operator's own chat is not),
``all``. ``scope`` decides how sandboxes are shared: one per ``session``, per ``agent``, or one
``shared`` by all. A sandbox is a :class:`SandboxView`: the host directory mounted at
``/workspace``, the agent workspace at ``/agent`` (``workspaceAccess: ro``), whether the file
tools may write, and the exec backend that confines commands to it.

Sandboxes are created on first use and reused; :meth:`SandboxSessions.prune` drops the ones
idle for ``prune.idleHours`` or older than ``prune.maxAgeDays`` (their background processes are
killed; the isolated workspace directory keeps its files, as a container's volume would).
``backend``: ``bwrap`` (one bubblewrap launch per command), ``docker`` (one long-lived container
per scope key, commands through ``docker exec``), ``auto`` (bubblewrap when it works, else Docker
when an engine answers). When no sandbox works here, the view
has no backend and ``exec`` answers with :data:`UNAVAILABLE` — a sandboxed session never falls
back to the host; its file tools still work, confined to the isolated workspace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from homarus.config.sandbox import SandboxConfig
from homarus.sandbox.bwrap import BwrapBackend, sandbox_workspace
from homarus.sandbox.docker import DockerSandbox, engine_available
from homarus.tools.process import ExecBackend
from homarus.tools.sandboxed import DockerExecBackend, SandboxExecBackend

__all__ = ["UNAVAILABLE", "SandboxSessions", "SandboxView"]

log = logging.getLogger("homarus.sandbox")


UNAVAILABLE = (
    "exec is unavailable: this session is sandboxed (agents.defaults.sandbox.mode is {mode}) but no sandbox "
    "works on this machine (install bubblewrap: apt-get install bubblewrap). Commands never run on the host "
    "instead; nothing was run."
)


@dataclass(slots=True, eq=False)
class SandboxView:
    """What a sandboxed session's tools see."""

    scope_key: str
    #: host directory mounted at ``/workspace``
    root: Path
    #: host directory mounted read-only at ``/agent`` (``workspaceAccess: ro``)
    agent_root: Path | None
    #: ``write``/``edit``/``apply_patch`` allowed (False under ``workspaceAccess: ro``)
    files_writable: bool
    #: None: no sandbox works here, so commands are refused (``unavailable`` says why)
    backend: ExecBackend | None
    unavailable: str | None = None
    created_at: float = field(default_factory=time.time)
    last_used_at: float = field(default_factory=time.time)
    #: the ``browser`` tool is allowed (``sandbox.browser.enabled``), with a throw-away profile
    browser: bool = False


class SandboxSessions:
    def __init__(
        self,
        cfg: SandboxConfig,
        *,
        state_dir: Path,
        agent_workspace: Callable[[str], Path],
        max_output_bytes: int = 200_000,
        max_background: int = 8,
        max_timeout_s: float = 1800,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cfg = cfg
        self.state_dir = state_dir
        self.agent_workspace = agent_workspace
        self.max_output_bytes = max_output_bytes
        self.max_background = max_background
        self.max_timeout_s = max_timeout_s
        self._clock = clock
        self._views: dict[str, SandboxView] = {}
        self._kind: Literal["bwrap", "docker", "none"] | None = None
        self._docker: dict[str, DockerSandbox] = {}  # per agent

    @property
    def enabled(self) -> bool:
        return self.cfg.mode != "off"

    def applies_to(self, agent_id: str, rest: str, main_key: str) -> bool:
        """Whether the session ``agent:<agent_id>:<rest>`` runs sandboxed."""
        if self.cfg.mode == "all":
            return True
        return self.cfg.mode == "non-main" and rest != main_key

    def scope_key(self, session_key: str, agent_id: str) -> str:
        if self.cfg.scope == "session":
            return session_key
        return "shared" if self.cfg.scope == "shared" else f"agent-{agent_id}"

    def backend_kind(self) -> Literal["bwrap", "docker"] | None:
        """The backend sandboxed commands use here (probed once): ``backend: auto`` prefers
        bubblewrap, then a Docker engine; None when neither works."""
        if self._kind is None:
            kind: Literal["bwrap", "docker", "none"] = "none"
            if self.cfg.backend != "docker" and self._bwrap_works():
                kind = "bwrap"
            elif self.cfg.backend != "bwrap" and engine_available():
                kind = "docker"
            else:
                log.error(
                    "sandbox mode %s needs a working sandbox (backend %s) and none works here (bubblewrap: %s, "
                    "docker engine: %s): sandboxed sessions cannot run commands (they never fall back to the host)",
                    self.cfg.mode,
                    self.cfg.backend,
                    "not tried" if self.cfg.backend == "docker" else "unavailable",
                    "not tried" if self.cfg.backend == "bwrap" else "unavailable",
                )
            self._kind = kind
        return None if self._kind == "none" else self._kind

    def available(self) -> bool:
        return self.backend_kind() is not None

    def _bwrap_works(self) -> bool:
        return BwrapBackend(sandbox_workspace(self.state_dir, "probe", root=self._root())).available()

    def _root(self) -> Path | None:
        return Path(self.cfg.workspace_root).expanduser() if self.cfg.workspace_root else None

    def view_for(self, session_key: str, agent_id: str) -> SandboxView:
        """The sandbox of this session (created on first use), or SandboxUnavailable."""
        scope = self.scope_key(session_key, agent_id)
        view = self._views.get(scope)
        if view is not None and self._expired(view):
            self._views.pop(scope)
            view = None
        if view is None:
            view = self._create(scope, agent_id)
            self._views[scope] = view
        view.last_used_at = self._clock()
        return view

    def _create(self, scope: str, agent_id: str) -> SandboxView:
        view = self._make(scope, agent_id)
        view.browser = self.cfg.browser.enabled
        return view

    def _make(self, scope: str, agent_id: str) -> SandboxView:
        access = self.cfg.workspace_access
        agent_ws = self.agent_workspace(agent_id)
        kind = self.backend_kind()
        now = self._clock()
        if kind == "docker":
            docker = self._docker_for(agent_id, agent_ws)
            root = docker.workspace_for(scope)
            backend: ExecBackend = DockerExecBackend(
                docker, scope, max_output_bytes=self.max_output_bytes, max_background=self.max_background
            )
            agent_root = agent_ws if access == "ro" else None
            return SandboxView(scope, root, agent_root, access != "ro", backend, None, now, now)
        if access == "rw":
            agent_ws.mkdir(parents=True, exist_ok=True, mode=0o700)
            root = agent_ws
        else:
            root = sandbox_workspace(self.state_dir, scope, root=self._root())
        if kind is None:
            reason = UNAVAILABLE.format(mode=self.cfg.mode)
            return SandboxView(scope, root, None, access != "ro", None, reason, now, now)
        bwrap = BwrapBackend(
            root,
            agent_workspace=agent_ws if access == "ro" and agent_ws.is_dir() else None,
            network=self.cfg.network == "allow",
            limits=self.cfg.limits,
            max_output_bytes=self.max_output_bytes,
        )
        backend = SandboxExecBackend(bwrap, max_output_bytes=self.max_output_bytes, max_background=self.max_background)
        return SandboxView(scope, root, bwrap.agent_workspace, access != "ro", backend, None, now, now)

    def _docker_for(self, agent_id: str, agent_ws: Path) -> DockerSandbox:
        docker = self._docker.get(agent_id)
        if docker is None:
            docker = DockerSandbox.from_config(
                self.cfg, state_dir=self.state_dir, agent_workspace=agent_ws, exec_timeout_s=self.max_timeout_s
            )
            self._docker[agent_id] = docker
        return docker

    def _expired(self, view: SandboxView) -> bool:
        now = self._clock()
        idle = self.cfg.prune.idle_hours * 3600
        age = self.cfg.prune.max_age_days * 86400
        return bool((idle and now - view.last_used_at > idle) or (age and now - view.created_at > age))

    def views(self) -> list[SandboxView]:
        return list(self._views.values())

    async def prune(self) -> int:
        """Close the sandboxes idle or old past ``prune`` (and remove such containers); how many."""
        stale = [scope for scope, view in self._views.items() if self._expired(view)]
        for scope in stale:
            view = self._views.pop(scope)
            if view.backend is not None:
                await view.backend.aclose()
        removed = 0
        for docker in self._docker.values():
            removed += len(await docker.prune())
        return max(len(stale), removed)

    async def aclose(self) -> None:
        views, self._views = list(self._views.values()), {}
        for view in views:
            if view.backend is not None:
                await view.backend.aclose()
