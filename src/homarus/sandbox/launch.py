"""``python -m homarus.sandbox.launch SPEC``: become a long-lived command inside bubblewrap.

Who spawns the process does not always let us hand it the seccomp filter's file descriptor and
the rlimits (the MCP SDK's stdio client spawns its server itself, with neither ``pass_fds`` nor a
``preexec_fn``), so it spawns this instead: it sets the rlimits on itself, builds the ``bwrap``
command line of :class:`~homarus.sandbox.bwrap.BwrapBackend` and ``exec``-s it, keeping the
same process (the spawner's pipes, process group and kill reach the sandbox).

SPEC is JSON: ``{"argv": [...], "workspace": path, "readPaths": [...], "network": bool,
"limits": {...}}``; nothing secret goes in it (it is on a command line). The command's
environment is this process's own, minus the spawner's defaults for ``PATH``/``HOME``/user,
and reaches the sandbox through ``bwrap``'s environment, not its command line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["launcher_argv", "main"]

#: the spawner's defaults the sandbox sets for itself
_HOST_ONLY = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "PWD", "OLDPWD"}


def launcher_argv(
    argv: list[str], *, workspace: Path, read_paths: list[str], network: bool, limits: dict[str, Any]
) -> list[str]:
    """The command line that runs ``argv`` sandboxed (``[python, -m, homarus.sandbox.launch, SPEC]``)."""
    spec = {"argv": argv, "workspace": str(workspace), "readPaths": read_paths, "network": network, "limits": limits}
    return [sys.executable, "-m", "homarus.sandbox.launch", json.dumps(spec)]


def main(args: list[str]) -> int:
    from homarus.config.sandbox import SandboxLimits
    from homarus.sandbox.bwrap import BwrapBackend

    if len(args) != 1:
        print("usage: python -m homarus.sandbox.launch SPEC", file=sys.stderr)
        return 2
    try:
        spec = json.loads(args[0])
        argv = [str(a) for a in spec["argv"]]
        workspace = Path(spec["workspace"])
        limits = SandboxLimits.model_validate(spec.get("limits") or {})
    except (ValueError, KeyError, TypeError) as exc:
        print(f"homarus sandbox launch: bad spec: {exc}", file=sys.stderr)
        return 2
    backend = BwrapBackend(
        workspace,
        network=bool(spec.get("network")),
        limits=limits,
        read_paths=[Path(p) for p in spec.get("readPaths") or []],
        etc_dir=workspace.with_name(workspace.name + ".etc"),
    )
    if not os.path.exists(backend.bwrap):
        print(f"homarus sandbox launch: {backend.bwrap} is not installed", file=sys.stderr)
        return 127
    env = {k: v for k, v in os.environ.items() if k not in _HOST_ONLY}
    launch = backend.prepare(argv, str(workspace), env, secret_env=True)
    for fd in launch.pass_fds:
        os.set_inheritable(fd, True)
    if launch.preexec_fn is not None:
        launch.preexec_fn()
    os.chdir(launch.cwd)
    os.execve(launch.argv[0], launch.argv, launch.env)  # noqa: S606  (our own argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
