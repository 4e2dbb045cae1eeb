"""`homarus gateway install|status|restart|uninstall`: the systemd user unit's content, the
launchd agent's, and the whole flow with the unit run for real by a stand-in for
``systemctl --user`` (this machine has no user manager; the stand-in starts the unit's own
``ExecStart`` with its environment, so the test sees the installed service answer /health).
Without a user manager nothing is written and the sentence says what to do."""

from __future__ import annotations

import json
import os
import plistlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from homarus.cli.service_units import ServiceSpec, launchd_plist, systemd_unit
from tests.fakes.systemctl import install_fake_systemd


def test_the_unit_runs_this_install_with_the_state_dir_and_restarts_on_failure(tmp_path: Path) -> None:
    spec = ServiceSpec("/opt/my venv/bin/homarus", tmp_path / "state dir", None, 18123)
    unit = systemd_unit(spec)
    assert 'ExecStart="/opt/my venv/bin/homarus" gateway run --port 18123' in unit
    assert f'Environment="HOMARUS_STATE_DIR={tmp_path}/state dir"' in unit
    assert "Environment=PATH=/opt/my venv/bin" not in unit and '"PATH=/opt/my venv/bin:' in unit
    for line in ("Restart=on-failure", "WantedBy=default.target", "UMask=0077", "KillMode=mixed"):
        assert line in unit
    assert "HOMARUS_CONFIG" not in unit  # only when the installing shell named one
    with_config = systemd_unit(ServiceSpec("/usr/bin/homarus", tmp_path, tmp_path / "h.json"))
    assert f"Environment=HOMARUS_CONFIG={tmp_path}/h.json" in with_config and "--port" not in with_config


def test_the_launchd_agent(tmp_path: Path) -> None:
    plist = plistlib.loads(launchd_plist(ServiceSpec("/u/bin/homarus", tmp_path, None, 1), tmp_path / "g.log").encode())
    assert plist["ProgramArguments"] == ["/u/bin/homarus", "gateway", "run", "--port", "1"]
    assert plist["KeepAlive"] == {"SuccessfulExit": False} and plist["RunAtLoad"] is True
    assert plist["EnvironmentVariables"]["HOMARUS_STATE_DIR"] == str(tmp_path)
    assert plist["StandardErrorPath"] == str(tmp_path / "g.log")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, str]]:
    bin_dir = tmp_path / "bin"
    install_fake_systemd(bin_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOMARUS_", "FAKE_SYSTEMD"))}
    env |= {
        "PATH": f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}",
        "HOMARUS_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "FAKE_SYSTEMD_DIR": str(tmp_path / "systemd"),
    }
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "homarus.json").write_text(json.dumps({"gateway": {"port": _free_port()}}))
    yield env
    subprocess.run([str(bin_dir / "systemctl"), "--user", "stop", "homarus-gateway.service"], env=env, check=False)


def _homarus(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "homarus", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_install_status_restart_uninstall(home: dict[str, str]) -> None:
    unit = Path(home["XDG_CONFIG_HOME"]) / "systemd" / "user" / "homarus-gateway.service"
    calls = Path(home["FAKE_SYSTEMD_DIR"]) / "calls.log"
    installed = _homarus(home, "gateway", "install")
    assert installed.returncode == 0, (
        installed.stderr + (Path(home["FAKE_SYSTEMD_DIR"]) / "homarus-gateway.service.log").read_text()
    )
    assert "answers" in installed.stdout and "lingering on" in installed.stdout
    assert f"Environment=HOMARUS_STATE_DIR={home['HOMARUS_STATE_DIR']}" in unit.read_text()
    assert calls.read_text().splitlines()[:4] == [
        "systemctl --user show-environment",
        "systemctl --user daemon-reload",
        "systemctl --user enable homarus-gateway.service",
        "systemctl --user restart homarus-gateway.service",
    ]
    assert "loginctl enable-linger" in calls.read_text()

    status = _homarus(home, "gateway", "status", "--json")
    info = json.loads(status.stdout)
    assert status.returncode == 0 and info["installed"] and info["state"] == "active" and info["health"]
    first_pid = info["pid"]
    assert _homarus(home, "gateway", "install").stdout.startswith("unchanged")  # idempotent

    restarted = _homarus(home, "gateway", "restart")
    assert restarted.returncode == 0, restarted.stderr
    assert json.loads(_homarus(home, "gateway", "status", "--json").stdout)["pid"] != first_pid

    removed = _homarus(home, "gateway", "uninstall")
    assert removed.returncode == 0 and not unit.exists()
    after = _homarus(home, "gateway", "status")
    assert after.returncode == 1 and "not installed" in after.stdout and "no answer" in after.stdout


def test_without_a_user_manager_nothing_is_written(home: dict[str, str]) -> None:
    home = {**home, "FAKE_SYSTEMD_DOWN": "1"}
    unit = Path(home["XDG_CONFIG_HOME"]) / "systemd" / "user" / "homarus-gateway.service"
    refused = _homarus(home, "gateway", "install")
    assert refused.returncode == 1 and "no systemd user manager answers" in refused.stderr
    assert "--no-start" in refused.stderr and "Traceback" not in refused.stderr and not unit.exists()
    written = _homarus(home, "gateway", "install", "--no-start")
    assert written.returncode == 0 and unit.exists() and "systemctl --user daemon-reload" in written.stdout


def test_a_broken_config_is_not_installed(home: dict[str, str]) -> None:
    (Path(home["HOMARUS_STATE_DIR"]) / "homarus.json").write_text('{ gateway: { port: "x" } }')
    refused = _homarus(home, "gateway", "install")
    assert refused.returncode == 1 and "the config does not load" in refused.stderr


def test_a_port_in_use_is_one_sentence(home: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = _homarus(home, "gateway", "run", "--port", str(port))
    assert ran.returncode == 1 and f"cannot listen on 127.0.0.1:{port}: in use" in ran.stderr
    assert "Traceback" not in ran.stderr
