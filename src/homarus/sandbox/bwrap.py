"""Run commands in a bubblewrap sandbox: one ``bwrap`` per command.

Each command gets fresh PID, IPC, UTS, cgroup and (unless the network is allowed) network
namespaces, a read-only ``/usr`` (+ ``/bin``, ``/lib*``), a minimal ``/etc`` (generated
``passwd``/``group`` with only the sandbox user, ``hosts``, ``resolv.conf``, certificates),
``/proc``, a minimal ``/dev``, tmpfs ``/tmp``, ``/var/tmp``, ``/run``, the workspace at
``/workspace`` (``--bind`` or ``--ro-bind``), optionally the agent workspace read-only at
``/agent``, an empty environment plus ``PATH``/``HOME``/``LANG`` and the caller's non-secret
variables, no capabilities, ``NO_NEW_PRIVS``, and the seccomp filter of
:mod:`homarus.sandbox.seccomp` (``--seccomp FD``). Rlimits (address space, processes, CPU,
file size) are set before ``bwrap`` starts and are inherited.

The sandbox user is uid/gid 65534:

* as host root, without a user namespace: ``bwrap`` keeps only CAP_SETUID/CAP_SETGID and
  ``setpriv`` switches to host uid 65534 (so RLIMIT_NPROC is enforced and host files owned by
  root are not the sandbox's; a sandbox's own workspace is owned by 65534, see
  :func:`sandbox_workspace`). When the mounted workspace is not the sandbox user's (the agent's
  own workspace under ``workspaceAccess: rw``, owned by root and 0700), the sandbox user keeps
  exactly one capability, CAP_DAC_OVERRIDE, so it can work on the files it was given; nothing on
  disk is chmod-ed or chown-ed for it, and what it can reach is only what is mounted (the
  workspace read-write, system directories read-only);
* otherwise in a user namespace (``--unshare-user --uid 65534``), mapped to the gateway's uid.

The wall-clock timeout kills ``bwrap``'s process group; ``--die-with-parent`` then kills the
sandbox's PID 1, which tears the whole PID namespace down (``setsid`` does not escape it).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from homarus.config.sandbox import SandboxLimits
from homarus.fs import ensure_private_dir
from homarus.sandbox.seccomp import filter_fd
from homarus.sandbox.validate import sanitize_env

__all__ = ["SANDBOX_GID", "SANDBOX_UID", "BwrapBackend", "Launch", "sandbox_workspace"]

SANDBOX_UID = SANDBOX_GID = 65534
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
_ETC_TRY = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf")
_ETC_NET_TRY = ("/etc/resolv.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/pki")
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED_ENV = {"PATH", "HOME", "USER", "LOGNAME", "SHELL"}


@dataclass(slots=True)
class Launch:
    """How to spawn one command (on the host, or through a sandbox's launcher); :meth:`close` once
    the process has started."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    pass_fds: tuple[int, ...] = ()
    preexec_fn: Callable[[], None] | None = None
    _fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def sandbox_workspace(state_dir: Path, scope_key: str, *, root: Path | None = None) -> Path:
    """``$STATE/sandboxes/<slug>`` (0700); owned by the sandbox uid when the gateway runs as root."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", scope_key).strip("-.")[:63] or "default"
    base = ensure_private_dir(root if root is not None else state_dir / "sandboxes")
    path = base / slug
    path.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    if os.geteuid() == 0:
        os.chown(path, SANDBOX_UID, SANDBOX_GID)
    return path


def _owner(path: Path) -> int | None:
    try:
        return os.stat(path).st_uid
    except OSError:
        return None


def _rlimits(limits: SandboxLimits) -> Callable[[], None]:
    values = (
        (resource.RLIMIT_AS, limits.memory_mb * 1024 * 1024),
        (resource.RLIMIT_NPROC, limits.pids),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * 1024 * 1024),
        (resource.RLIMIT_CORE, 0),
    )

    def apply() -> None:  # in the child, between fork and exec
        os.umask(0o022)
        for which, value in values:
            resource.setrlimit(which, (value, value))

    return apply


class BwrapBackend:
    """The bubblewrap launch of a command (:meth:`prepare`): what runs it, waits and kills it is
    the one exec loop of ``tools/process.py`` (``SandboxExecBackend``).

    ``workspace`` is mounted at ``/workspace`` (read-only with ``read_only``), ``agent_workspace``
    read-only at ``/agent`` (``workspaceAccess: ro``); for ``workspaceAccess: rw`` pass the agent
    workspace as ``workspace``.
    """

    _available: dict[str, bool] = {}  # a cache shared by instances, per bwrap path

    def __init__(
        self,
        workspace: Path,
        *,
        agent_workspace: Path | None = None,
        read_only: bool = False,
        network: bool = False,
        limits: SandboxLimits | None = None,
        max_output_bytes: int = 200_000,
        bwrap: str | None = None,
        shell: str = "/bin/sh",
        read_paths: Sequence[Path] = (),
        etc_dir: Path | None = None,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.agent_workspace = Path(agent_workspace).resolve() if agent_workspace is not None else None
        self.read_only = read_only
        self.network = network
        self.limits = limits or SandboxLimits()
        self.max_output_bytes = max_output_bytes
        self.bwrap = bwrap or shutil.which("bwrap") or "/usr/bin/bwrap"
        self.shell = shell
        #: more host paths the command may read, mounted read-only at the same place
        # as given (absolute, normalised), not resolved: a path through a symlink is mounted where
        # the command will look for it, with what the link points to
        system = [Path(d) for d in _SYSTEM_DIRS]
        self.read_paths = tuple(
            p for p in (Path(os.path.abspath(r)) for r in read_paths)
            if p != Path("/") and not any(p == d or d in p.parents for d in system)
        )  # fmt: skip
        self.setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
        self.root_mode = os.geteuid() == 0 and self.setpriv is not None and self.setpriv.startswith("/usr/")
        #: the workspace is not the sandbox user's (see the module docstring)
        self.dac_override = self.root_mode and _owner(self.workspace) != SANDBOX_UID
        self._etc = self._make_etc(etc_dir)

    # -- the command line -------------------------------------------------------------------

    @staticmethod
    def _make_etc(etc_dir: Path | None) -> Path:
        """The generated ``/etc`` files: in a fresh temporary directory, or in ``etc_dir`` (reused
        by a process that ``exec``-s into the sandbox and cannot remove a temporary one)."""
        if etc_dir is not None:
            etc_dir.mkdir(parents=True, exist_ok=True)
        etc = etc_dir or Path(tempfile.mkdtemp(prefix="homarus-sbx-etc-"))
        os.chmod(etc, 0o755)  # noqa: S103  (world-readable on purpose: read by uid 65534)
        files = {
            "passwd": f"sandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:/workspace:/bin/sh\n",
            "group": f"sandbox:x:{SANDBOX_GID}:\n",
            "hosts": "127.0.0.1 localhost\n::1 localhost\n",
            "hostname": "sandbox\n",
        }
        for name, text in files.items():
            (etc / name).write_text(text)
            os.chmod(etc / name, 0o644)
        return etc

    def _namespace_args(self) -> list[str]:
        if self.root_mode:
            args = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
            args += [] if self.network else ["--unshare-net"]
            caps = ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
            return [*args, *caps, *(["--cap-add", "CAP_DAC_OVERRIDE"] if self.dac_override else [])]
        args = ["--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)]
        return [*args, *(["--share-net"] if self.network else []), "--cap-drop", "ALL"]

    def _fs_args(self) -> list[str]:
        args: list[str] = []
        for path in _SYSTEM_DIRS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += ["--perms", "0755", "--dir", "/etc", "--perms", "0755", "--dir", "/var"]
        for name in ("passwd", "group", "hosts", "hostname"):
            args += ["--ro-bind", str(self._etc / name), f"/etc/{name}"]
        for path in _ETC_TRY + (_ETC_NET_TRY if self.network else ()):
            args += ["--ro-bind-try", path, path]
        args += ["--proc", "/proc", "--dev", "/dev"]
        tmp_size = str(min(self.limits.memory_mb, 1024) * 1024 * 1024)
        for path in ("/tmp", "/var/tmp", "/run"):  # noqa: S108  (tmpfs inside the sandbox)
            args += ["--perms", "1777", "--size", tmp_size, "--tmpfs", path]
        made: set[Path] = {Path(p) for p in ("/etc", "/var", "/tmp", "/var/tmp", "/run", "/proc", "/dev")}  # noqa: S108
        for read in self.read_paths:  # after the tmpfs mounts, which would hide one under /tmp
            # bwrap would make the missing parents 0700 (root's): the sandbox user could not pass
            for parent in reversed(read.parents[:-1]):
                if parent not in made:
                    made.add(parent)
                    args += ["--perms", "0755", "--dir", str(parent)]
            args += ["--ro-bind-try", str(read), str(read)]
        args += ["--ro-bind" if self.read_only else "--bind", str(self.workspace), "/workspace"]
        if self.agent_workspace is not None:
            args += ["--ro-bind", str(self.agent_workspace), "/agent"]
        return [*args, "--remount-ro", "/"]  # the root tmpfs (and /etc in it) read-only

    @staticmethod
    def sandbox_env(env: Mapping[str, str], *, keep_secrets: bool = False) -> dict[str, str]:
        """The command's environment: ``env`` (credential-like keys dropped unless ``keep_secrets``)
        with the sandbox's own ``PATH``, ``HOME`` and user."""
        clean = dict(env) if keep_secrets else sanitize_env(env)[0]
        merged = {k: v for k, v in clean.items() if _ENV_KEY.fullmatch(k) and k not in _RESERVED_ENV and "\0" not in v}
        merged |= {"PATH": SANDBOX_PATH, "HOME": "/workspace", "USER": "sandbox", "LOGNAME": "sandbox"}
        merged.setdefault("LANG", "C.UTF-8")
        return merged

    def _env_args(self, env: Mapping[str, str]) -> list[str]:
        args = ["--clearenv"]
        for key, value in self.sandbox_env(env).items():
            args += ["--setenv", key, value]
        return args

    def _inner_cwd(self, cwd: str) -> str:
        try:
            rel = Path(cwd).resolve().relative_to(self.workspace)
        except ValueError:
            return "/workspace"
        return "/workspace" if str(rel) == "." else f"/workspace/{rel.as_posix()}"

    def _command_argv(self, command: str | Sequence[str], inner_cwd: str) -> list[str]:
        argv = [self.shell, "-c", command] if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("empty argv")
        if self.root_mode:  # chdir only as the sandbox user (root without capabilities may not enter)
            assert self.setpriv is not None
            drop = [self.setpriv, "--reuid", str(SANDBOX_UID), "--regid", str(SANDBOX_GID), "--clear-groups"]
            enter = [self.shell, "-c", 'cd -- "$1" || exit 126; shift; exec "$@"', "sh", inner_cwd]
            caps = ["--inh-caps=-all,+dac_override", "--ambient-caps=+dac_override"] if self.dac_override else []
            return [*drop, *(caps or ["--inh-caps=-all"]), "--no-new-privs", "--", *enter, *argv]
        return argv

    def prepare(
        self, command: str | Sequence[str], cwd: str, env: Mapping[str, str], *, secret_env: bool = False
    ) -> Launch:
        """The ``bwrap`` invocation for one command (it owns a seccomp fd: close it after spawning).

        ``secret_env``: ``env`` is the operator's own (an MCP server's configured secrets): it is
        kept whole and handed over in ``bwrap``'s environment, never on its command line, where
        every local user could read it.
        """
        seccomp = filter_fd(allow_network=self.network)
        argv = [self.bwrap, "--new-session", "--die-with-parent", *self._namespace_args(), *self._fs_args()]
        argv += [*([] if secret_env else self._env_args(env)), "--hostname", "sandbox"]
        inner = self._inner_cwd(cwd)
        argv += ["--chdir", "/" if self.root_mode else inner, "--seccomp", str(seccomp)]
        argv += ["--", *self._command_argv(command, inner)]
        outer = self.sandbox_env(env, keep_secrets=True) if secret_env else {"PATH": SANDBOX_PATH}
        launch = Launch(argv, outer, "/", (seccomp,), _rlimits(self.limits))
        launch._fds.append(seccomp)
        return launch

    def available(self) -> bool:
        """Whether a trivial command runs in this sandbox (checked once per bwrap path, then cached)."""
        cached = BwrapBackend._available.get(self.bwrap)
        if cached is None:
            cached = self.probe() is None
            BwrapBackend._available[self.bwrap] = cached
        return cached

    def probe(self) -> str | None:
        """Run a trivial command in this sandbox now: None when it works, else why not."""
        if not os.path.exists(self.bwrap):
            return f"{self.bwrap} is not installed (apt-get install bubblewrap)"
        if not self.workspace.is_dir():
            return f"the sandbox workspace {self.workspace} is missing"
        launch = self.prepare(["/bin/true"], str(self.workspace), {})
        try:
            done = subprocess.run(  # noqa: S603  (our own argv)
                launch.argv,
                env=launch.env,
                cwd=launch.cwd,
                pass_fds=launch.pass_fds,
                preexec_fn=launch.preexec_fn,
                capture_output=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bwrap could not run: {exc}"
        finally:
            launch.close()
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip()[-300:]
            return f"bwrap failed (exit {done.returncode}): {err or 'no message'}"
        return None

    async def aclose(self) -> None:
        shutil.rmtree(self._etc, ignore_errors=True)
