"""The Docker sandbox backend: one long-lived container per scope key, commands run with ``docker exec``.

:meth:`DockerSandbox.ensure` makes the container of a scope key exist and run. It inspects the
container by name and decides (:func:`decide`):

* missing → create (hardened arguments of :mod:`homarus.sandbox.docker_args`), start, and run the
  optional ``setupCommand`` once (a failed setup removes the container, so the next call retries);
* not labelled ``homarus.sandbox=1`` for this scope key → refuse (never remove what we did not create);
* config hash label equal → reuse (start it if it stopped, e.g. after a reboot);
* hash differs and the container was used less than 5 minutes ago ("hot") → keep it and log a
  hint, so a config edit does not kill a running conversation's processes;
* hash differs and cold → remove and create again.

A registry (``$STATE/sandbox/containers.json``, written atomically, a corrupt file read as empty)
records each container's scope key, creation and last use, and config hash; :meth:`DockerSandbox.prune`
removes containers idle or old past ``prune.idleHours`` / ``prune.maxAgeDays``.

Every docker call goes through a :data:`Runner` (``(args, timeout) -> (rc, stdout, stderr)``, the
docker binary not included), so tests record the decisions without an engine. Validation errors are
:class:`~homarus.sandbox.validate.SandboxSecurityError`; an engine that fails is
:class:`~homarus.errors.Unavailable`.

Killing the docker client (a timeout, an abort) does not kill the process ``docker exec`` started
in the container, so :meth:`DockerSandbox.launch` wraps commands in ``timeout -s KILL`` inside the
container, which kills their whole process group there.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from homarus.config.sandbox import SandboxConfig, SandboxDockerConfig, SandboxPrune
from homarus.errors import Unavailable
from homarus.fs import ensure_private_dir
from homarus.sandbox.bwrap import Launch
from homarus.sandbox.docker_args import (
    LABEL_CONFIG_HASH,
    LABEL_CREATED_AT,
    LABEL_SANDBOX,
    LABEL_SCOPE_KEY,
    Mount,
    WorkspaceAccess,
    build_create_args,
    build_exec_args,
    build_reap_args,
    config_hash,
    container_name,
    container_user,
    validate_docker_config,
    with_limits,
    workspace_mounts,
)
from homarus.sandbox.docker_registry import ContainerRegistry, RegistryEntry
from homarus.sandbox.docker_runner import (
    ENGINE_PROBE_TIMEOUT_S,
    Runner,
    SubprocessRunner,
    docker_cli_env,
    engine_available,
    raise_if_no_engine,
    tail,
)

__all__ = [
    "HOT_WINDOW_MS",
    "ContainerRegistry",
    "ContainerState",
    "Decision",
    "DockerSandbox",
    "RegistryEntry",
    "Runner",
    "SubprocessRunner",
    "decide",
    "docker_cli_env",
    "engine_available",
]

log = logging.getLogger("homarus.sandbox.docker")

#: a container used more recently than this is not recreated on a config change
HOT_WINDOW_MS = 5 * 60 * 1000
INSPECT_TIMEOUT_S = 15.0
CREATE_TIMEOUT_S = 300.0  # `docker create` pulls a missing image
START_TIMEOUT_S = 60.0
SETUP_TIMEOUT_S = 600.0
REMOVE_TIMEOUT_S = 60.0
#: how long a container checked by :meth:`DockerSandbox.ensure` is trusted without a new inspect
RECHECK_MS = 15_000

Decision = Literal["create", "reuse", "recreate", "keep-stale", "foreign"]


# -- decisions --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContainerState:
    running: bool
    labels: dict[str, str]


def decide(
    state: ContainerState | None, scope_key: str, desired_hash: str, last_used_ms: int | None, now_ms: int
) -> Decision:
    """What :meth:`DockerSandbox.ensure` does with the container it found (see the module docstring)."""
    if state is None:
        return "create"
    if state.labels.get(LABEL_SANDBOX) != "1" or state.labels.get(LABEL_SCOPE_KEY) != scope_key:
        return "foreign"
    if state.labels.get(LABEL_CONFIG_HASH) == desired_hash:
        return "reuse"
    # a last use "in the future" (the clock went back) counts as recent: keeping is the safe side
    if last_used_ms is not None and now_ms - last_used_ms < HOT_WINDOW_MS:
        return "keep-stale"
    return "recreate"


def _now_ms() -> int:
    return int(time.time() * 1000)


_NO_SUCH = re.compile(r"no such (container|object)", re.IGNORECASE)
_NO_IMAGE = re.compile(
    r"no such image|unable to find image|pull access denied|manifest unknown|repository does not exist", re.I
)
#: the image ``make sandbox-image`` builds (``agents.defaults.sandbox.docker.image``'s default)
DEFAULT_IMAGE = "homarus-sandbox:bookworm-slim"
REAP_TIMEOUT_S = 15.0


class DockerSandbox:
    """Containers per scope key (see the module docstring).

    ``workspace_access``: ``none`` mounts an isolated workspace (``<workspace_root>/<slug>``) at
    the workdir; ``ro`` also mounts ``agent_workspace`` read-only at ``/agent``; ``rw`` mounts
    ``agent_workspace`` read-write at the workdir.
    """

    def __init__(
        self,
        cfg: SandboxDockerConfig,
        *,
        state_dir: Path,
        workspace_access: WorkspaceAccess = "none",
        agent_workspace: Path | None = None,
        workspace_root: Path | None = None,
        prune: SandboxPrune | None = None,
        docker: str = "docker",
        runner: Runner | None = None,
        clock: Callable[[], int] = _now_ms,
        home: str | None = None,
        exec_timeout_s: float | None = None,
    ) -> None:
        if workspace_access != "none" and agent_workspace is None:
            raise ValueError(f"workspaceAccess {workspace_access!r} needs the agent workspace")
        self.cfg = cfg.model_copy(update={"user": container_user(cfg, workspace_access, agent_workspace)})
        self.state_dir = Path(state_dir)
        self.workspace_access: WorkspaceAccess = workspace_access
        self.agent_workspace = Path(agent_workspace).absolute() if agent_workspace is not None else None
        self.workspace_root = Path(workspace_root) if workspace_root is not None else self.state_dir / "sandboxes"
        self.prune_cfg = prune or SandboxPrune()
        self.docker = docker
        self.runner: Runner = runner or SubprocessRunner(docker)
        self.clock = clock
        self.home = home
        #: the in-container time limit of commands launched without one
        self.exec_timeout_s = exec_timeout_s
        self.registry = ContainerRegistry(self.state_dir / "sandbox" / "containers.json")
        self._locks: dict[str, asyncio.Lock] = {}
        self._registry_lock = asyncio.Lock()
        self._mounts: dict[str, list[Mount]] = {}
        #: when each container was last found (or made) as it should be, by this sandbox
        self._checked: dict[str, int] = {}

    @classmethod
    def from_config(
        cls,
        sandbox: SandboxConfig,
        *,
        state_dir: Path,
        agent_workspace: Path | None,
        docker: str = "docker",
        runner: Runner | None = None,
        exec_timeout_s: float | None = None,
    ) -> DockerSandbox:
        """The sandbox of ``agents.defaults.sandbox`` (its ``docker``, ``workspaceAccess``, ``prune``)."""
        root = Path(sandbox.workspace_root).expanduser() if sandbox.workspace_root else None
        return cls(
            with_limits(sandbox.docker, sandbox.limits),
            state_dir=state_dir,
            workspace_access=sandbox.workspace_access,
            agent_workspace=agent_workspace,
            workspace_root=root,
            prune=sandbox.prune,
            docker=docker,
            runner=runner,
            exec_timeout_s=exec_timeout_s,
        )

    # -- names and paths --------------------------------------------------------------------

    def container_name(self, scope_key: str) -> str:
        return container_name(self.cfg.container_prefix, scope_key)

    def workspace_for(self, scope_key: str, *, create: bool = True) -> Path:
        """The host directory mounted at the workdir for ``scope_key`` (created 0700)."""
        if self.workspace_access == "rw":
            assert self.agent_workspace is not None
            path = self.agent_workspace
            if create:
                ensure_private_dir(path)
        else:  # the layout of the bubblewrap backend: a session keeps its files across backends
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", scope_key).strip("-.")[:63] or "default"
            path = self.workspace_root / slug
            if create and not path.exists():
                ensure_private_dir(path)
                self._give_to_container_user(path)
        return path.absolute()

    def _give_to_container_user(self, path: Path) -> None:
        """As root, a new isolated workspace belongs to a numeric ``docker.user``: with every
        capability dropped, nobody else in the container could enter a 0700 directory."""
        match = re.fullmatch(r"(\d+)(?::(\d+))?", self.cfg.user or "")
        if match and os.geteuid() == 0:
            uid = int(match.group(1))
            os.chown(path, uid, int(match.group(2)) if match.group(2) else uid)

    def _hash(self, workspace: Path) -> str:
        return config_hash(self.cfg, self.workspace_access, workspace=workspace, agent_workspace=self.agent_workspace)

    # -- docker calls -----------------------------------------------------------------------

    async def _docker(self, args: Sequence[str], timeout: float, what: str) -> str:
        rc, out, err = await self.runner(args, timeout)
        if rc != 0:
            raise_if_no_engine(rc, err)
            raise Unavailable(f"docker {what} failed (exit {rc}): {tail(err) or tail(out)}", retryable=True)
        return out

    async def available(self) -> bool:
        rc, out, _ = await self.runner(["info", "--format", "{{.ServerVersion}}"], ENGINE_PROBE_TIMEOUT_S)
        return rc == 0 and bool(out.strip())

    async def inspect(self, name: str) -> ContainerState | None:
        """The container's state and labels; None when there is no container of that name."""
        rc, out, err = await self.runner(["inspect", "--type", "container", name], INSPECT_TIMEOUT_S)
        if rc != 0:
            raise_if_no_engine(rc, err)
            if _NO_SUCH.search(err) or _NO_SUCH.search(out):
                return None
            raise Unavailable(f"docker inspect failed (exit {rc}): {tail(err)}", retryable=True)
        try:
            data = json.loads(out)
            item = data[0] if isinstance(data, list) and data else {}
            running = bool(item.get("State", {}).get("Running"))
            labels = item.get("Config", {}).get("Labels") or {}
        except (ValueError, AttributeError) as exc:
            raise Unavailable(f"docker inspect returned unreadable output: {exc}") from exc
        return ContainerState(running, {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {})

    async def _remove_container(self, name: str) -> bool:
        rc, out, err = await self.runner(["rm", "-f", name], REMOVE_TIMEOUT_S)
        if rc == 0 or _NO_SUCH.search(err):
            return True
        log.warning("could not remove sandbox container %s: %s", name, tail(err) or tail(out))
        return False

    async def _create(self, name: str, scope_key: str, workspace: Path, digest: str, now: int) -> None:
        args = build_create_args(
            self.cfg,
            name=name,
            scope_key=scope_key,
            workspace=workspace,
            agent_workspace=self.agent_workspace,
            workspace_access=self.workspace_access,
            config_hash=digest,
            created_at_ms=now,
            home=self.home,
            state_dir=self.state_dir,
        )
        await self._check_image()
        try:  # a create that timed out may still have made the container
            rc, out, err = await self.runner(args, CREATE_TIMEOUT_S)
            if rc != 0:
                raise_if_no_engine(rc, err)
                if _NO_IMAGE.search(err):
                    raise Unavailable(
                        f"the sandbox image {self.cfg.image} is not on the Docker engine and could not be pulled "
                        f"({tail(err)}): pull or build it, or set agents.defaults.sandbox.docker.image; nothing was run"
                    )
                raise Unavailable(f"docker create failed (exit {rc}): {tail(err) or tail(out)}", retryable=True)
            await self._docker(["start", name], START_TIMEOUT_S, "start")
            if self.cfg.setup_command:
                setup = ["exec", "-i", name, "/bin/sh", "-lc", self.cfg.setup_command]
                await self._docker(setup, SETUP_TIMEOUT_S, "exec (setupCommand)")
        except BaseException:
            await asyncio.shield(self._remove_container(name))  # the next ensure starts from scratch
            raise
        log.info("created sandbox container %s for %s", name, scope_key)

    async def _check_image(self) -> None:
        """A missing image is named with how to make it. The default image is built here, never
        pulled (no registry has it), so it is not looked for; any other may still be pulled by
        ``docker create``, whose failure then names it too."""
        image = self.cfg.image
        rc, _, err = await self.runner(["image", "inspect", "--format", "{{.Id}}", image], INSPECT_TIMEOUT_S)
        if rc == 0:
            return
        raise_if_no_engine(rc, err)
        if image == DEFAULT_IMAGE:
            raise Unavailable(
                f"the sandbox image {image} is not on the Docker engine: build it with `make sandbox-image` "
                "(it works without an image registry); nothing was run"
            )

    async def _record(self, entry: RegistryEntry) -> None:
        async with self._registry_lock:
            entries = self.registry.load()
            entries[entry.name] = entry
            await asyncio.to_thread(self.registry.save, entries)  # fsyncs: not on the event loop

    # -- lifecycle --------------------------------------------------------------------------

    async def ensure(self, scope_key: str) -> str:
        """The name of the running container of ``scope_key``, created or recreated as needed.

        A container this sandbox checked less than ``RECHECK_MS`` ago is trusted without asking
        the engine again (a burst of commands costs one ``docker inspect``)."""
        name = self.container_name(scope_key)
        async with self._locks.setdefault(name, asyncio.Lock()):
            checked = self._checked.get(name)
            if checked is not None and 0 <= self.clock() - checked < RECHECK_MS:
                return name
            await self._converge(name, scope_key)
            self._checked[name] = self.clock()
            return name

    async def _converge(self, name: str, scope_key: str) -> None:
        workspace = self.workspace_for(scope_key)
        checked = validate_docker_config(
            self.cfg,
            workspace=workspace,
            agent_workspace=self.agent_workspace,
            home=self.home,
            state_dir=self.state_dir,
        )
        digest = self._hash(workspace)
        state = await self.inspect(name)
        now = self.clock()
        async with self._registry_lock:
            known = self.registry.load().get(name)
        decision = decide(state, scope_key, digest, known.last_used_at_ms if known else None, now)
        if decision == "foreign":
            raise Unavailable(
                f"a container named {name} exists but was not created by Homarus for {scope_key!r}; "
                f"remove it or change agents.defaults.sandbox.docker.containerPrefix"
            )
        if decision == "keep-stale":
            assert known is not None
            log.warning(
                "sandbox container %s was created with other settings but was used %d s ago: keeping it; "
                "it is recreated once idle for %d min (or now with `docker rm -f %s`)",
                name,
                (now - known.last_used_at_ms) // 1000,
                HOT_WINDOW_MS // 60_000,
                name,
            )
        if decision == "recreate":
            log.info("sandbox container %s: settings changed, recreating it", name)
            if not await self._remove_container(name):
                raise Unavailable(f"could not remove the outdated sandbox container {name}", retryable=True)
        stored_hash: str | None
        if decision in ("create", "recreate"):
            if checked.stripped_env:
                log.warning("sandbox docker.env: credential-like keys not passed: %s", ", ".join(checked.stripped_env))
            await self._create(name, scope_key, workspace, digest, now)
            created_at, stored_hash = now, digest
        else:
            assert state is not None
            if not state.running:
                await self._docker(["start", name], START_TIMEOUT_S, "start")
            label = state.labels.get(LABEL_CREATED_AT, "")
            created_at = int(label) if label.isdigit() else (known.created_at_ms if known else now)
            stored_hash = state.labels.get(LABEL_CONFIG_HASH)
        self._mounts[name] = workspace_mounts(workspace, self.agent_workspace, self.workspace_access, self.cfg.workdir)
        await self._record(RegistryEntry(name, scope_key, created_at, now, stored_hash, self.cfg.image))

    async def remove(self, scope_key: str) -> bool:
        """Remove the container of ``scope_key`` and forget it; False when docker refused."""
        name = self.container_name(scope_key)
        async with self._locks.setdefault(name, asyncio.Lock()):
            return await self._forget(name)

    async def _forget(self, name: str) -> bool:
        if not await self._remove_container(name):
            return False
        self._mounts.pop(name, None)
        self._checked.pop(name, None)
        async with self._registry_lock:
            entries = self.registry.load()
            if entries.pop(name, None) is not None:
                await asyncio.to_thread(self.registry.save, entries)
        return True

    async def prune(self, idle_hours: float | None = None, max_age_days: float | None = None) -> list[str]:
        """Remove registered containers idle for ``idle_hours`` or older than ``max_age_days``
        (0 disables a rule; defaults: the ``prune`` config). The names removed."""
        idle_ms = (self.prune_cfg.idle_hours if idle_hours is None else idle_hours) * 3_600_000
        age_ms = (self.prune_cfg.max_age_days if max_age_days is None else max_age_days) * 86_400_000

        def stale(entry: RegistryEntry, now: int) -> bool:
            idle = idle_ms > 0 and now - entry.last_used_at_ms > idle_ms
            return idle or (age_ms > 0 and now - entry.created_at_ms > age_ms)

        async with self._registry_lock:
            candidates = [e.name for e in self.registry.load().values() if stale(e, self.clock())]
        removed: list[str] = []
        for name in candidates:
            async with self._locks.setdefault(name, asyncio.Lock()):
                async with self._registry_lock:  # used since the scan?
                    entry = self.registry.load().get(name)
                if entry is not None and stale(entry, self.clock()) and await self._forget(name):
                    log.info("pruned sandbox container %s (%s)", name, entry.scope_key)
                    removed.append(name)
        return removed

    # -- running commands -------------------------------------------------------------------

    def exec_argv(
        self,
        name: str,
        command: str | Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        *,
        timeout_s: float | None = None,
        exec_id: str | None = None,
    ) -> list[str]:
        """``docker exec -i -w <cwd> -e K=V ... <name> /bin/sh -c <command>``; host paths under the
        mounted workspaces become their container paths (unknown ones: the workdir)."""
        mounts = self._mounts.get(name, [])
        args = build_exec_args(
            name,
            command,
            cwd=cwd,
            env=env,
            mounts=mounts,
            workdir=self.cfg.workdir,
            timeout_s=timeout_s,
            exec_id=exec_id,
        )
        return [self.docker, *args]

    async def launch(
        self,
        scope_key: str,
        command: str | Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        *,
        timeout_s: float | None = None,
        exec_id: str | None = None,
    ) -> Launch:
        """:meth:`ensure`, then how to spawn ``command`` in the container (the shape ``bwrap`` uses).

        ``timeout_s`` (default: ``exec_timeout_s``) is enforced inside the container, where killing
        the docker client on the host cannot reach; ``exec_id`` marks the command's processes for
        :meth:`reap`."""
        name = await self.ensure(scope_key)
        limit = timeout_s if timeout_s is not None else self.exec_timeout_s
        argv = self.exec_argv(name, command, cwd, env, timeout_s=limit, exec_id=exec_id)
        return Launch(argv, docker_cli_env(), "/")

    async def reap(self, scope_key: str, exec_id: str) -> bool:
        """Kill every process of the ``docker exec`` marked ``exec_id`` in the container of
        ``scope_key`` (a command that timed out or was aborted: killing the docker client on the
        host left them running, also those that left their process group). False when the engine
        could not be asked (the in-container time limit still ends them)."""
        name = self.container_name(scope_key)
        args = build_reap_args(name, exec_id)
        rc, _, err = await self.runner(args, REAP_TIMEOUT_S)
        if rc != 0:
            log.warning("could not stop the processes of a timed-out command in %s: %s", name, tail(err))
        return rc == 0
