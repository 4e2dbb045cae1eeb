"""A stand-in for ``systemctl --user`` (and ``loginctl``) where no user manager runs (containers,
CI): it really starts the unit's ``ExecStart`` with its ``Environment=`` and
``WorkingDirectory=``, so a test sees the service answer as it would under systemd, and records
every call. State lives in ``$FAKE_SYSTEMD_DIR``; ``FAKE_SYSTEMD_DOWN=1`` answers like a machine
without a user bus. Installed by :func:`install_fake_systemd` as executables on a PATH directory.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["install_fake_systemd"]


def install_fake_systemd(bin_dir: Path) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("systemctl", "loginctl"):
        script = bin_dir / name
        root = str(Path(__file__).parents[2])
        body = f"import sys\nsys.path.insert(0, {root!r})\nfrom tests.fakes.systemctl import main\n"
        script.write_text(f"#!{sys.executable}\n{body}sys.exit(main({name!r}, sys.argv[1:]))\n")
        script.chmod(0o755)


def _state() -> Path:
    path = Path(os.environ["FAKE_SYSTEMD_DIR"])
    path.mkdir(parents=True, exist_ok=True)
    return path


def _unit_file(unit: str) -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user" / unit


def _pid(unit: str) -> int | None:
    try:
        pid = int((_state() / f"{unit}.pid").read_text())
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # a zombie of ours counts as gone
            return None
    return pid


def _stop(unit: str) -> None:
    pid = _pid(unit)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    for _ in range(100):
        if _pid(unit) is None:
            break
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    (_state() / f"{unit}.pid").unlink(missing_ok=True)


def _start(unit: str) -> int:
    path = _unit_file(unit)
    if not path.exists():
        print(f"Failed to start {unit}: Unit {unit} not found.", file=sys.stderr)
        return 5
    argv: list[str] = []
    env: dict[str, str] = {}
    cwd = "/"
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        if key == "ExecStart":
            argv = shlex.split(value)
        elif key == "Environment":
            for item in shlex.split(value):
                name, _, val = item.partition("=")
                env[name] = val
        elif key == "WorkingDirectory":
            cwd = shlex.split(value)[0]
    log = open(_state() / f"{unit}.log", "ab")  # noqa: SIM115  (handed to the child)
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=log, start_new_session=True)
    (_state() / f"{unit}.pid").write_text(str(proc.pid))
    return 0


def main(tool: str, args: list[str]) -> int:
    with open(_state() / "calls.log", "a") as calls:
        calls.write(f"{tool} {' '.join(args)}\n")
    if tool == "loginctl":
        if args[:1] == ["show-user"]:
            print("Linger=yes" if (_state() / "linger").exists() else "Linger=no")
        elif args[:1] == ["enable-linger"]:
            (_state() / "linger").touch()
        return 0
    if os.environ.get("FAKE_SYSTEMD_DOWN"):
        print("Failed to connect to bus: No medium found", file=sys.stderr)
        return 1
    words = [a for a in args if a != "--user"]
    verb, rest = words[0], words[1:]
    units = [w for w in rest if w.endswith(".service")]
    if verb == "show-environment":
        print(f"HOME={Path.home()}")
    elif verb in ("daemon-reload", "enable"):
        pass
    elif verb in ("restart", "start"):
        _stop(units[0])
        return _start(units[0])
    elif verb == "stop" or (verb == "disable" and "--now" in rest):
        _stop(units[0])
    elif verb == "is-active":
        print("active" if _pid(units[0]) else "inactive")
        return 0 if _pid(units[0]) else 3
    elif verb == "show":
        pid = _pid(units[0])
        print(f"ActiveState={'active' if pid else 'inactive'}\nSubState={'running' if pid else 'dead'}")
        print(f"MainPID={pid or 0}\nNRestarts=0\nExecMainStartTimestamp={'Thu 2026-11-26 12:00:00 UTC' if pid else ''}")
    else:
        print(f"Unknown command verb {verb}.", file=sys.stderr)
        return 1
    return 0
