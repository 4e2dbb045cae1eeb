"""``homarus doctor``: which sandbox backends work on this machine, and why the others do not.

Each backend is tried for real (bubblewrap runs ``/bin/true``; Docker answers ``docker info`` and
has the configured image), then the one ``agents.defaults.sandbox.backend`` picks is named, as
:meth:`homarus.tools.sandbox_sessions.SandboxSessions.backend_kind` would pick it: ``auto``
prefers bubblewrap, then Docker. Sandboxed sessions with no working backend are a failure: their
commands are refused (never run on the host).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from homarus.config.sandbox import SandboxConfig
from homarus.sandbox.bwrap import BwrapBackend
from homarus.sandbox.docker_runner import docker_cli_env, engine_version

__all__ = ["bwrap_problem", "docker_problem", "report_sandbox"]

Report = Callable[[str, str], None]


def bwrap_problem() -> str | None:
    """None when a command runs under bubblewrap here, else why not."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="homarus-doctor-") as tmp:
        return BwrapBackend(Path(tmp)).probe()


def docker_problem(image: str, docker: str = "docker") -> tuple[str | None, str]:
    """(None when the engine answers and has ``image``, else why not; the engine's version)."""
    version, why = engine_version(docker)
    if version is None:
        return why, ""
    try:
        found = subprocess.run(  # noqa: S603  (our own argv)
            [docker, "image", "inspect", "--format", "{{.Id}}", image],
            capture_output=True,
            timeout=15,
            env=docker_cli_env(),
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the engine ({version}) could not be asked for image {image}: {exc}", version
    if found.returncode != 0:
        return f"the engine ({version}) has no image {image}: build it with `make sandbox-image`", version
    return None, version


def report_sandbox(cfg: SandboxConfig, report: Report) -> None:
    bwrap = bwrap_problem()
    report("ok" if bwrap is None else "info", "sandbox backend bubblewrap: " + ("works" if bwrap is None else bwrap))
    image = cfg.docker.image
    docker, version = docker_problem(image)
    report(
        "ok" if docker is None else "info",
        "sandbox backend docker: " + (f"works (engine {version}, image {image})" if docker is None else docker),
    )
    picked = None
    if cfg.backend != "docker" and bwrap is None:
        picked = "bubblewrap"
    elif cfg.backend != "bwrap" and docker is None:
        picked = "docker"
    if picked is not None:
        report("ok", f"sandboxed sessions (mode {cfg.mode}, backend {cfg.backend}) use {picked}")
    elif cfg.mode == "off":
        report("info", f"no sandbox backend works for backend {cfg.backend}; sandbox mode is off, so none is needed")
    else:
        report(
            "fail",
            f"sandbox mode {cfg.mode} needs backend {cfg.backend} and none works here: sandboxed sessions cannot run "
            "commands (they are refused, never run on the host)",
        )
