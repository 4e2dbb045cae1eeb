"""The command lines of the Docker backend, as pure functions: container names, the config hash,
``docker create`` and ``docker exec`` arguments.

``docker create`` gets the hardened arguments in a fixed order: labels, read-only root, tmpfs,
network, user, environment, ``--cap-drop ALL``, ``no-new-privileges``, profiles, DNS and hosts,
resource limits, the workspace mounts, custom binds, then ``--init <image> sleep infinity``. Nothing is
built before :func:`validate_docker_config` has passed: the bind, network, profile checks of
:mod:`homarus.sandbox.validate`, plus a refusal of every value the docker CLI could read as an
option (a leading ``-``) or that cannot be one argument (NUL, newline).

The mount strings are ``<ws>:/workspace:z`` (``:ro,z`` when read-only) and
``<agentWs>:/agent:ro,z``: docker's ``src:dst[:opts]`` syntax, with ``z`` for SELinux relabelling.
Custom binds use the real path the validator resolved, so a symlink swapped in later is not followed.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from homarus.config.sandbox import SandboxDockerConfig, SandboxLimits, SandboxUlimit
from homarus.sandbox.validate import (
    BindSpec,
    SandboxSecurityError,
    normalize,
    sanitize_env,
    validate_binds,
    validate_network,
    validate_profile,
)

__all__ = [
    "AGENT_MOUNT",
    "EXEC_ID_ENV",
    "LABEL_CONFIG_HASH",
    "LABEL_CREATED_AT",
    "LABEL_SANDBOX",
    "LABEL_SCOPE_KEY",
    "MAX_NAME_LEN",
    "SANDBOX_USER",
    "Mount",
    "ValidatedDocker",
    "WorkspaceAccess",
    "build_create_args",
    "build_exec_args",
    "build_reap_args",
    "config_hash",
    "container_name",
    "container_path",
    "container_user",
    "validate_docker_config",
    "with_limits",
    "workspace_mounts",
]

WorkspaceAccess = Literal["none", "ro", "rw"]

LABEL_SANDBOX = "homarus.sandbox"
LABEL_SCOPE_KEY = "homarus.sessionKey"
LABEL_CREATED_AT = "homarus.createdAtMs"
LABEL_CONFIG_HASH = "homarus.configHash"
AGENT_MOUNT = "/agent"
#: a DNS label: what tools that derive hostnames from container names accept
MAX_NAME_LEN = 63
_HASH_LEN = 8
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: set by the backend or meaningless across the host/container boundary
_EXEC_RESERVED_ENV = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "HOSTNAME", "PWD", "OLDPWD", "HOMARUS_EXEC_ID"}
)
#: ``sh -c _BOUNDED <seconds> <argv...>``: the command under ``timeout -s KILL`` (its own process
#: group, killed whole when the time is up), and once it ends, what it left running in that group
#: (``cmd &``) killed too, as on the host; stdin passed through, the exit status kept
_BOUNDED = (
    'exec 3<&0; timeout -s KILL "$0" "$@" <&3 3<&- & p=$!; exec 3<&-; '  # an `&` job's stdin would be /dev/null
    'wait "$p"; r=$?; kill -KILL -"$p" 2>/dev/null; exit "$r"'
)
#: the variable that marks every process of one ``docker exec`` (for killing them all, see ``reap``)
EXEC_ID_ENV = "HOMARUS_EXEC_ID"
#: kills every process carrying ``HOMARUS_EXEC_ID=<id>`` in the container (``$1``: the id)
_REAP_SCRIPT = (
    'for p in /proc/[0-9]*; do grep -qsxz "' + EXEC_ID_ENV + '=$1" "$p/environ" && kill -KILL "${p#/proc/}"; '
    "done 2>/dev/null; exit 0"
)
_ULIMIT_NAME = re.compile(r"[a-z]+")
_ULIMIT_TEXT = re.compile(r"-?\d+(:-?\d+)?")
_CAP = re.compile(r"[A-Za-z_]+")
_SIZE = re.compile(r"\d+(\.\d+)?[bkmgBKMG]?")


def container_name(prefix: str, scope_key: str) -> str:
    """``<prefix><slug>-<hash8>``, at most 63 chars of ``[a-z0-9_.-]``.

    The slug keeps keys readable in ``docker ps`` (unicode folded to ASCII where it can be);
    the hash of the exact key keeps keys that slug alike (case, punctuation, truncation) apart.
    """
    digest = hashlib.sha256(scope_key.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LEN]
    folded = unicodedata.normalize("NFKD", scope_key).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9_.]+", "-", folded).strip("-._")
    room = MAX_NAME_LEN - len(prefix) - _HASH_LEN - 1
    if room < 0:
        raise ValueError(f"container prefix {prefix!r} is too long")
    slug = slug[:room].rstrip("-._")
    return f"{prefix}{slug}-{digest}" if slug else f"{prefix}{digest}"


def config_hash(
    cfg: SandboxDockerConfig,
    workspace_access: WorkspaceAccess,
    *,
    workspace: str | os.PathLike[str],
    agent_workspace: str | os.PathLike[str] | None = None,
) -> str:
    """sha256 over everything baked into the container at creation.

    Every config field counts except the name prefix (a new prefix is a new container anyway) and
    the danger flags (they change what validation accepts, not the container), so a field added
    later counts without being listed here.
    """
    settings = cfg.model_dump(
        mode="json",
        by_alias=True,
        exclude={
            "container_prefix",
            "dangerously_allow_external_bind_sources",
            "dangerously_allow_reserved_container_targets",
            "dangerously_allow_container_namespace_join",
        },
    )
    payload = {
        "v": 1,
        "docker": settings,
        "workspaceAccess": workspace_access,
        "workspace": os.fspath(workspace),
        "agentWorkspace": os.fspath(agent_workspace) if agent_workspace is not None else None,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


# -- validation -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValidatedDocker:
    binds: list[BindSpec]
    env: dict[str, str]
    #: credential-like keys removed from ``docker.env``
    stripped_env: list[str]


def _arg(value: str, what: str) -> str:
    """One argv element that docker cannot parse as an option, nor split."""
    if not value or value.startswith("-") or any(c in value for c in "\0\n\r"):
        raise SandboxSecurityError(f"Sandbox security: docker {what} {value!r} is not a valid value")
    return value


def validate_docker_config(
    cfg: SandboxDockerConfig,
    *,
    workspace: str | os.PathLike[str],
    agent_workspace: str | os.PathLike[str] | None = None,
    home: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> ValidatedDocker:
    """Refuse what would weaken the container; the checked binds and the sanitized environment.

    Custom bind sources must lie under the sandbox or agent workspace unless
    ``dangerouslyAllowExternalBindSources``; only then is the gateway's state dir blocked by name
    too (the workspaces usually live in it, and the real-path pass already keeps binds inside them).
    """
    validate_network(cfg.network, allow_container_join=cfg.dangerously_allow_container_namespace_join)
    validate_profile("seccomp", cfg.seccomp_profile)
    validate_profile("apparmor", cfg.apparmor_profile)
    for value, what in (
        (cfg.image, "image"),
        (cfg.network, "network"),
        (cfg.workdir, "workdir"),
        *((t, "tmpfs") for t in cfg.tmpfs),
        *(((cfg.user, "user"),) if cfg.user is not None else ()),
        *((d, "dns") for d in cfg.dns),
        *((h, "extraHosts entry") for h in cfg.extra_hosts),
        *((p, f"{k} profile") for p, k in ((cfg.seccomp_profile, "seccomp"), (cfg.apparmor_profile, "apparmor")) if p),
    ):
        _arg(value, what)
    for path in cfg.tmpfs:
        if not path.startswith("/"):
            raise SandboxSecurityError(f"Sandbox security: docker tmpfs {path!r} is not an absolute container path")
    for size, what in ((cfg.memory, "memory"), (cfg.memory_swap, "memorySwap")):
        text = str(size) if size is not None else None
        if text is not None and not _SIZE.fullmatch(text) and not (what == "memorySwap" and text == "-1"):
            raise SandboxSecurityError(f"Sandbox security: docker {what} {text!r} is not a size (512m, 2g, bytes)")
    if any(c.isspace() for c in cfg.image):
        raise SandboxSecurityError(f"Sandbox security: docker image {cfg.image!r} is not a valid value")
    for cap in cfg.cap_drop:
        if not _CAP.fullmatch(cap):
            raise SandboxSecurityError(f"Sandbox security: docker capDrop {cap!r} is not a capability name")
    for name, limit in cfg.ulimits.items():
        _ulimit(name, limit)
    roots: list[str] | None = None
    if not cfg.dangerously_allow_external_bind_sources:
        roots = [normalize(os.fspath(p)) for p in (workspace, agent_workspace) if p is not None]
    binds = validate_binds(
        cfg.binds,
        home=home,
        state_dir=state_dir if roots is None else None,
        allowed_roots=roots,
        allow_reserved_targets=cfg.dangerously_allow_reserved_container_targets,
    )
    workdir = normalize(cfg.workdir).rstrip("/")
    for bind in binds if not cfg.dangerously_allow_reserved_container_targets else ():
        target = normalize(bind.target)  # a custom workdir is reserved like /workspace
        if target == workdir or target.startswith(workdir + "/"):
            raise SandboxSecurityError(
                f'Sandbox security: bind mount "{bind.source}:{bind.target}" targets reserved container path '
                f'"{cfg.workdir}"'
            )
    env, stripped = sanitize_env(cfg.env)
    for key, value in env.items():
        if not _ENV_KEY.fullmatch(key) or "\0" in value:
            raise SandboxSecurityError(f"Sandbox security: docker env {key!r} is not a valid variable")
    return ValidatedDocker(binds, env, stripped)


def _ulimit(name: str, limit: int | str | SandboxUlimit) -> str:
    if not _ULIMIT_NAME.fullmatch(name):
        raise SandboxSecurityError(f"Sandbox security: docker ulimit name {name!r} is not valid")
    if isinstance(limit, SandboxUlimit):
        soft = limit.soft if limit.soft is not None else limit.hard
        hard = limit.hard if limit.hard is not None else limit.soft
        if soft is None or hard is None:
            raise SandboxSecurityError(f"Sandbox security: docker ulimit {name!r} has neither soft nor hard")
        return f"{name}={soft}:{hard}"
    text = str(limit)
    if not _ULIMIT_TEXT.fullmatch(text):
        raise SandboxSecurityError(f"Sandbox security: docker ulimit {name}={text!r} is not N or soft:hard")
    return f"{name}={text}"


# -- docker create ----------------------------------------------------------------------------


def build_create_args(
    cfg: SandboxDockerConfig,
    *,
    name: str,
    scope_key: str,
    workspace: str | os.PathLike[str],
    agent_workspace: str | os.PathLike[str] | None,
    workspace_access: WorkspaceAccess,
    config_hash: str | None,
    created_at_ms: int,
    home: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> list[str]:
    """``create ... <image> sleep infinity`` (without the docker binary); validates first."""
    ws = normalize(os.fspath(workspace))
    agent_ws = normalize(os.fspath(agent_workspace)) if agent_workspace is not None else None
    checked = validate_docker_config(cfg, workspace=ws, agent_workspace=agent_ws, home=home, state_dir=state_dir)
    if "\0" in scope_key or "\n" in scope_key:
        raise SandboxSecurityError("Sandbox security: the scope key cannot be a container label")
    args = ["create", "--name", _arg(name, "container name")]
    args += ["--label", f"{LABEL_SANDBOX}=1", "--label", f"{LABEL_SCOPE_KEY}={scope_key}"]
    args += ["--label", f"{LABEL_CREATED_AT}={created_at_ms}"]
    if config_hash:
        args += ["--label", f"{LABEL_CONFIG_HASH}={config_hash}"]
    if cfg.read_only_root:
        args.append("--read-only")
    for path in cfg.tmpfs:
        args += ["--tmpfs", path]
    args += ["--network", cfg.network]
    if cfg.user:
        args += ["--user", cfg.user]
    for key, value in checked.env.items():
        args += ["--env", f"{key}={value}"]
    caps = ["ALL", *(c for c in dict.fromkeys(c.upper() for c in cfg.cap_drop) if c != "ALL")]
    for cap in caps:
        args += ["--cap-drop", cap]
    args += ["--security-opt", "no-new-privileges"]
    if cfg.seccomp_profile:
        args += ["--security-opt", f"seccomp={cfg.seccomp_profile}"]
    if cfg.apparmor_profile:
        args += ["--security-opt", f"apparmor={cfg.apparmor_profile}"]
    for server in cfg.dns:
        args += ["--dns", server]
    for host in cfg.extra_hosts:
        args += ["--add-host", host]
    if cfg.pids_limit is not None:
        args += ["--pids-limit", str(cfg.pids_limit)]
    if cfg.memory is not None:
        args += ["--memory", str(cfg.memory)]
    if cfg.memory_swap is not None:
        args += ["--memory-swap", str(cfg.memory_swap)]
    if cfg.cpus is not None:
        args += ["--cpus", f"{cfg.cpus:g}"]
    for limit_name, limit in cfg.ulimits.items():
        args += ["--ulimit", _ulimit(limit_name, limit)]
    args += ["--workdir", cfg.workdir]
    main_ro = workspace_access == "ro" and agent_ws == ws
    args += ["-v", f"{_arg(ws, 'workspace')}:{cfg.workdir}:{'ro,z' if main_ro else 'z'}"]
    if workspace_access == "ro" and agent_ws is not None and agent_ws != ws:
        args += ["-v", f"{_arg(agent_ws, 'agent workspace')}:{AGENT_MOUNT}:ro,z"]
    for bind in checked.binds:
        args += ["-v", f"{bind.source}:{bind.target}" + (":ro" if bind.mode == "ro" else "")]
    # --init: a reaping PID 1 (docker-init), so killed commands never stay as zombies counting
    # against the pids limit (`sleep` as PID 1 would never wait for them)
    return [*args, "--init", cfg.image, "sleep", "infinity"]


# -- docker exec ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mount:
    host: str
    container: str


def container_path(path: str, mounts: Sequence[Mount], default: str) -> str:
    """A host path under a mounted directory as the container sees it; container paths as they
    are; anything else (outside every mount) becomes ``default``.

    Host paths win: the exec tool resolves ``workdir`` on the host, and a host workspace may
    itself be called ``/workspace``."""
    norm = normalize(path) if path else ""
    for mount in sorted(mounts, key=lambda m: len(m.host), reverse=True):
        host = normalize(mount.host)
        if norm == host:
            return mount.container
        if norm.startswith(host.rstrip("/") + "/"):
            return posixpath.join(mount.container, norm[len(host.rstrip("/")) + 1 :])
    for mount in mounts:
        if norm == mount.container or norm.startswith(mount.container.rstrip("/") + "/"):
            return norm
    return default


def build_exec_args(
    name: str,
    command: str | Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    mounts: Sequence[Mount] = (),
    workdir: str = "/workspace",
    timeout_s: float | None = None,
    shell: str = "/bin/sh",
    exec_id: str | None = None,
) -> list[str]:
    """``exec -i -w <cwd> -e K=V ... <name> /bin/sh -c <command>`` (without the docker binary).

    ``env`` loses credential-like keys and the host's ``PATH``/``HOME``/... (``HOME`` becomes the
    workdir). Killing the docker client does not kill what it started in the container, so with
    ``timeout_s`` the command runs under ``timeout -s KILL`` inside, which kills its process group
    (and what the command left in it when it ends); ``exec_id`` marks all its processes
    (``HOMARUS_EXEC_ID``), even those that leave the group.
    """
    argv = [shell, "-c", command] if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("empty argv")
    clean, _ = sanitize_env(env)
    merged = {k: v for k, v in clean.items() if _ENV_KEY.fullmatch(k) and k not in _EXEC_RESERVED_ENV and "\0" not in v}
    merged["HOME"] = workdir
    if exec_id is not None:
        merged[EXEC_ID_ENV] = exec_id
    inner_cwd = container_path(cwd, mounts, workdir)
    args = ["exec", "-i", "-w", inner_cwd]
    for key, value in merged.items():
        args += ["-e", f"{key}={value}"]
    args.append(name)
    if timeout_s is not None:
        args += [shell, "-c", _BOUNDED, f"{max(1, int(timeout_s + 0.999))}"]
    return [*args, *argv]


def workspace_mounts(
    workspace: Path, agent_workspace: Path | None, workspace_access: WorkspaceAccess, workdir: str
) -> list[Mount]:
    """The host directories a container of these settings sees, and where."""
    mounts = [Mount(normalize(str(workspace)), workdir)]
    if workspace_access == "ro" and agent_workspace is not None and agent_workspace != workspace:
        mounts.append(Mount(normalize(str(agent_workspace)), AGENT_MOUNT))
    return mounts


#: ``docker.user``'s default: the image's sandbox user
SANDBOX_USER = "65534:65534"


def container_user(cfg: SandboxDockerConfig, access: WorkspaceAccess, agent_workspace: Path | None) -> str | None:
    """Who commands run as: ``docker.user`` when set to anything but the default; by default the
    owner of what the container must work on, because Docker gives a non-root user no capability
    (CAP_DAC_OVERRIDE, as bubblewrap keeps it, is not possible): under ``workspaceAccess`` ``ro``
    or ``rw`` the agent workspace's owner (often a 0700 directory), otherwise the sandbox user
    when the gateway is root (it gives the isolated workspace to it), else the gateway's own user
    (who owns the isolated workspace). Every capability stays dropped, the root read-only."""
    if cfg.user != SANDBOX_USER:
        return cfg.user
    if access != "none" and agent_workspace is not None:
        try:
            st = Path(agent_workspace).stat()
        except FileNotFoundError:  # made by the gateway on first use
            return f"{os.geteuid()}:{os.getegid()}"
        return f"{st.st_uid}:{st.st_gid}"
    return cfg.user if os.geteuid() == 0 else f"{os.geteuid()}:{os.getegid()}"


def with_limits(cfg: SandboxDockerConfig, limits: SandboxLimits) -> SandboxDockerConfig:
    """The container settings with ``agents.defaults.sandbox.limits`` where ``docker`` sets none:
    the same bounds as under bubblewrap (processes, memory, file size, CPU seconds), as cgroup
    limits and ulimits of the container. What ``docker`` sets itself wins."""
    ulimits = dict(cfg.ulimits)
    ulimits.setdefault("fsize", limits.file_size_mb * 1024 * 1024)
    ulimits.setdefault("cpu", limits.cpu_seconds)
    return cfg.model_copy(
        update={
            "pids_limit": cfg.pids_limit if cfg.pids_limit is not None else limits.pids,
            "memory": cfg.memory if cfg.memory is not None else f"{limits.memory_mb}m",
            "ulimits": ulimits,
        }
    )


def build_reap_args(name: str, exec_id: str) -> list[str]:
    """``exec <name> /bin/sh -c <kill every process marked exec_id>`` (without the docker binary), as
    the container's user: with every capability dropped, that is who may signal those processes."""
    return ["exec", name, "/bin/sh", "-c", _REAP_SCRIPT, "reap", exec_id]
