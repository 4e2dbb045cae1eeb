"""`homarus gateway install|uninstall|status|restart` and `homarus logs --gateway`.

On Linux the service is a systemd *user* unit (no root needed): ``install`` writes it, reloads
the user manager, enables and starts it, waits for ``/health``, and asks logind to let it linger
(start at boot, survive logout). Without a reachable user manager it writes nothing and says
what to do instead (``--no-start`` writes the unit anyway). On macOS it is a launchd agent.
Every failure is one sentence with a suggestion.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.cli.service_probe import HEALTH_WAIT_S, ServiceError, healthy, port_of, wait_healthy
from homarus.cli.service_units import UNIT_NAME, ServiceSpec, systemd_unit

if TYPE_CHECKING:
    import subprocess

    from homarus.config.paths import StatePaths

__all__ = ["add_service_parsers", "follow_gateway_log", "run_service"]


def add_service_parsers(gw_sub: Any) -> None:
    inst = gw_sub.add_parser("install", help="run the gateway as a background service (systemd user unit / launchd)")
    inst.add_argument("--port", type=int, help="the port the service listens on (default: gateway.port)")
    inst.add_argument("--no-start", action="store_true", help="write the unit only; do not enable or start it")
    gw_sub.add_parser("uninstall", help="stop the service and remove its unit")
    st = gw_sub.add_parser("status", help="whether the service runs, its port, log and health")
    st.add_argument("--json", action="store_true")
    gw_sub.add_parser("restart", help="restart the service")


def _unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def _systemctl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    import shutil
    import subprocess

    exe = shutil.which("systemctl")
    if exe is None:
        raise ServiceError("systemd is not here (no systemctl): run `homarus gateway run` under your own supervisor")
    done = subprocess.run([exe, "--user", *args], capture_output=True, text=True, timeout=60, check=False)  # noqa: S603
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise ServiceError(f"systemctl --user {' '.join(args)} failed: {detail[-1] if detail else done.returncode}")
    return done


def manager_problem() -> str | None:
    """Why the systemd user manager cannot be used, or None."""
    try:
        done = _systemctl("show-environment", check=False)
    except ServiceError as exc:
        return str(exc)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        return f"no systemd user manager answers ({detail[-1] if detail else 'no detail'})"
    return None


def run_service(args: argparse.Namespace, paths: StatePaths) -> int:
    try:
        if sys.platform == "darwin":
            from homarus.cli.service_launchd import run_launchd

            return run_launchd(args, paths)
        if not sys.platform.startswith("linux"):
            raise ServiceError(f"no service manager support on {sys.platform}: use `homarus gateway run`")
        action = args.gateway_command
        if action == "install":
            return _install(args, paths)
        if action == "uninstall":
            return _uninstall()
        if action == "restart":
            _systemctl("restart", UNIT_NAME)
            return _report_start(paths)
        return _status(args, paths)
    except ServiceError as exc:
        print(f"homarus: {exc}", file=sys.stderr)
        return 1


def _install(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.config.loader import load_config
    from homarus.errors import ConfigError
    from homarus.fs import atomic_write

    try:
        cfg = load_config(paths).config
    except ConfigError as exc:
        raise ServiceError(f"the config does not load, so the service would fail: {exc}") from None
    spec = ServiceSpec.current(paths.state_dir, _explicit_config(paths), args.port)
    port = args.port if args.port is not None else cfg.gateway.port
    problem = None if args.no_start else manager_problem()
    if problem:
        raise ServiceError(
            f"{problem}. `homarus gateway install --no-start` writes the unit anyway; without systemd, run "
            "`homarus gateway run` under your own supervisor, or `docker compose up`"
        )
    unit = _unit_dir() / UNIT_NAME
    text = systemd_unit(spec)
    already = unit.exists() and unit.read_text() == text
    if not args.no_start and not already and healthy(port, 1.0) is not None and not _active():
        raise ServiceError(f"a gateway already answers on port {port}: stop it first, or install with --port")
    paths.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(unit, text, mode=0o644)
    print(f"{'unchanged' if already else 'wrote'} {unit}")
    if args.no_start:
        print(f"start it with: systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}")
        return 0
    _systemctl("daemon-reload")
    _systemctl("enable", UNIT_NAME)
    _systemctl("restart", UNIT_NAME)  # a changed unit applies now; a new one starts
    code = _report_start(paths, port)
    _linger()
    return code


def _explicit_config(paths: StatePaths) -> Path | None:
    return paths.config_path if os.environ.get("HOMARUS_CONFIG") else None


def _active() -> bool:
    try:
        return _systemctl("is-active", UNIT_NAME, check=False).stdout.strip() == "active"
    except ServiceError:
        return False


def _report_start(paths: StatePaths, port: int | None = None) -> int:
    unit = _unit_dir() / UNIT_NAME
    port = port if port is not None else port_of(paths, unit.read_text() if unit.exists() else None)
    if wait_healthy(port):
        print(f"running: http://127.0.0.1:{port}/health answers; logs: homarus logs --gateway")
        return 0
    print(
        f"homarus: the service did not answer on port {port} within {HEALTH_WAIT_S:.0f} s; "
        "see why with: homarus logs --gateway",
        file=sys.stderr,
    )
    return 1


def _linger() -> None:
    """Start at boot and survive logout: logind's linger for this user (polkit may refuse it)."""
    import shutil
    import subprocess

    user = os.environ.get("USER") or os.environ.get("LOGNAME") or str(os.getuid())
    exe = shutil.which("loginctl")
    if exe is None:
        return
    shown = subprocess.run([exe, "show-user", user, "-p", "Linger"], capture_output=True, text=True, check=False)  # noqa: S603
    if shown.stdout.strip() == "Linger=yes":
        return
    done = subprocess.run([exe, "enable-linger", user], capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode == 0:
        print("lingering on: the service starts at boot and keeps running after you log out")
    else:
        print(f"to start at boot and keep running after logout: sudo loginctl enable-linger {user}")


def _uninstall() -> int:
    unit = _unit_dir() / UNIT_NAME
    problem = manager_problem()
    if problem is None:
        _systemctl("disable", "--now", UNIT_NAME, check=False)
    if not unit.exists():
        print(f"not installed ({unit} does not exist)")
        return 0
    unit.unlink()
    if problem is None:
        _systemctl("daemon-reload")
    print(f"removed {unit}" + ("" if problem is None else f" (not stopped: {problem})"))
    return 0


def _status(args: argparse.Namespace, paths: StatePaths) -> int:
    unit = _unit_dir() / UNIT_NAME
    text = unit.read_text() if unit.exists() else None
    port = port_of(paths, text)
    info: dict[str, Any] = {"installed": text is not None, "unit": str(unit), "port": port}
    problem = manager_problem()
    if problem is None and text is not None:
        shown = _systemctl("show", UNIT_NAME, "-p", "ActiveState,SubState,MainPID,NRestarts,ExecMainStartTimestamp")
        props = dict(line.split("=", 1) for line in shown.stdout.splitlines() if "=" in line)
        info |= {"state": props.get("ActiveState"), "subState": props.get("SubState"),
                 "pid": int(props.get("MainPID") or 0) or None, "restarts": int(props.get("NRestarts") or 0),
                 "since": props.get("ExecMainStartTimestamp") or None}  # fmt: skip
    elif problem is not None:
        info["manager"] = problem
    info["log"] = f"journalctl --user -u {UNIT_NAME} (or: homarus logs --gateway)"
    info["health"] = healthy(port)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"service: {'installed' if text else 'not installed'} ({unit})")
        if "state" in info:
            print(f"state:   {info['state']}/{info['subState']}, pid {info['pid']}, {info['restarts']} restart(s)")
        if "manager" in info:
            print(f"manager: {info['manager']}")
        print(f"port:    {port}")
        print(f"health:  {'ok' if info['health'] is not None else 'no answer'} (http://127.0.0.1:{port}/health)")
        print(f"log:     {info['log']}")
    return 0 if info["health"] is not None else 1


def follow_gateway_log(lines: int, follow: bool) -> int:
    """The service's log: the user journal on Linux, the agent's log file on macOS."""
    import shutil
    import subprocess

    if sys.platform == "darwin":
        from homarus.cli.service_launchd import launchd_log

        cmd = ["tail", "-n", str(lines), *(["-F"] if follow else []), str(launchd_log())]
    else:
        exe = shutil.which("journalctl")
        if exe is None:
            print("homarus: no journalctl here: the gateway logs to its own stdout", file=sys.stderr)
            return 1
        cmd = [exe, "--user", "-u", UNIT_NAME, "-n", str(lines), "--no-pager", *(["-f"] if follow else [])]
    try:
        return subprocess.call(cmd)  # noqa: S603
    except KeyboardInterrupt:
        return 0
