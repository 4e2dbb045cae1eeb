"""The gateway as a launchd agent on macOS (``~/Library/LaunchAgents/ai.homarus.gateway.plist``),
for ``homarus gateway install|uninstall|status|restart``; its log is a file in the state dir."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from homarus.cli.service_probe import ServiceError, healthy, port_of, wait_healthy
from homarus.cli.service_units import LABEL, ServiceSpec, launchd_plist

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["launchd_log", "run_launchd"]


def launchd_log(state_dir: Path | None = None) -> Path:
    if state_dir is None:
        from homarus.config.paths import StatePaths

        state_dir = StatePaths.from_env().state_dir
    return state_dir / "logs" / "gateway.log"


def _plist() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def _launchctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["launchctl", *args], capture_output=True, text=True, check=False)  # noqa: S603, S607


def run_launchd(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.fs import atomic_write

    domain, plist = f"gui/{os.getuid()}", _plist()
    action = args.gateway_command
    if action == "install":
        explicit = paths.config_path if os.environ.get("HOMARUS_CONFIG") else None
        spec = ServiceSpec.current(paths.state_dir, explicit, args.port)
        log = launchd_log(paths.state_dir)
        log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(plist, launchd_plist(spec, log), mode=0o644)
        print(f"wrote {plist}")
        if args.no_start:
            return 0
        _launchctl("bootout", f"{domain}/{LABEL}")
        done = _launchctl("bootstrap", domain, str(plist))
        if done.returncode != 0:
            raise ServiceError(f"launchctl bootstrap failed: {done.stderr.strip() or done.returncode}")
        port = args.port if args.port is not None else port_of(paths)
        ok = wait_healthy(port)
        print(f"running on port {port}; log: {log}" if ok else f"no answer on port {port}; see {log}")
        return 0 if ok else 1
    if action == "uninstall":
        _launchctl("bootout", f"{domain}/{LABEL}")
        if plist.exists():
            plist.unlink()
            print(f"removed {plist}")
        return 0
    if action == "restart":
        _launchctl("kickstart", "-k", f"{domain}/{LABEL}")
        return 0 if wait_healthy(port_of(paths)) else 1
    port = port_of(paths)
    health = healthy(port)
    info = {"installed": plist.exists(), "plist": str(plist), "port": port, "health": health,
            "log": str(launchd_log(paths.state_dir))}  # fmt: skip
    print(json.dumps(info, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in info.items()))
    return 0 if health is not None else 1
