"""`homarus gateway install` under a real systemd: a Debian container with systemd as PID 1 and a
user ``alice`` whose user manager lingers. She installs the service with the real
``systemctl --user``; it answers /health, is restarted after ``kill -9``, and is back after the
machine reboots (the container restarted) without anybody logging in. Needs a Docker engine that
can run systemd (SYS_ADMIN, host cgroups) and the image of ``scripts/docker-offline-base.sh --systemd``;
skipped, with the reason, otherwise."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from tests.docker_image.conftest import docker, image_built, skip_without

BASE = "homarus-systemd-base:bookworm"
USER_ENV = ["-u", "alice", "-e", "XDG_RUNTIME_DIR=/run/user/1000",
            "-e", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus", "-e", "HOME=/home/alice"]  # fmt: skip
HOMARUS = "/home/alice/venv/bin/homarus"

DOCKERFILE = f"""FROM {BASE}
COPY . /src
RUN useradd --create-home --uid 1000 alice \\
 && mkdir -p /var/lib/systemd/linger && touch /var/lib/systemd/linger/alice \\
 && su alice -c "python3 -m venv /home/alice/venv \\
      && /home/alice/venv/bin/pip install --quiet --no-index --find-links /src/.wheels /src"
STOPSIGNAL SIGRTMIN+3
CMD ["/sbin/init"]
"""


def _as_alice(name: str, *args: str, timeout: float = 120) -> tuple[int, str]:
    done = docker("exec", *USER_ENV, name, HOMARUS, *args, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def _wait_user_manager(name: str) -> None:
    for _ in range(240):
        state = docker("exec", name, "systemctl", "is-active", "user@1000.service").stdout.strip()
        if state == "active":
            return
        time.sleep(0.5)
    raise AssertionError("alice's user manager did not start: " + docker("logs", name).stdout[-2000:])


def _status(name: str) -> dict[str, object]:
    _, out = _as_alice(name, "gateway", "status", "--json")
    try:
        return dict(json.loads(out[out.index("{") :]))
    except ValueError as exc:
        raise AssertionError(out) from exc


def _wait_healthy(name: str, seconds: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + seconds
    status: dict[str, object] = {}
    while time.monotonic() < deadline:
        status = _status(name)
        if status.get("health"):
            return status
        time.sleep(0.5)
    raise AssertionError(f"the service did not answer: {status}")


@pytest.mark.timeout(1800)
def test_install_under_real_systemd_survives_kill_and_reboot(request: pytest.FixtureRequest) -> None:
    skip_without(BASE)
    context: Path = request.getfixturevalue("build_context")
    (context / "Dockerfile.systemd").write_text(DOCKERFILE)
    tag = f"homarus-systemd-test:{uuid.uuid4().hex[:8]}"
    with image_built(tag, "-f", str(context / "Dockerfile.systemd"), str(context), timeout=1500) as built:
        assert built.returncode == 0, built.stderr[-3000:]
        _survives_kill_and_reboot(tag)


def _survives_kill_and_reboot(tag: str) -> None:
    name = f"homarus-systemd-{uuid.uuid4().hex[:8]}"
    try:
        # what systemd as PID 1 needs (not --privileged: a nested engine may not grant every capability)
        run = docker("run", "-d", "--name", name, "--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined",
                     "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run",
                     "--tmpfs", "/run/lock", tag)  # fmt: skip
        if run.returncode != 0:
            pytest.skip(f"this engine cannot run systemd in a container: {run.stderr.strip()[-300:]}")
        _wait_user_manager(name)

        code, out = _as_alice(name, "gateway", "install")
        assert code == 0 and "answers" in out, out
        unit = docker("exec", name, "cat", "/home/alice/.config/systemd/user/homarus-gateway.service").stdout
        assert "ExecStart=/home/alice/venv/bin/homarus gateway run" in unit
        first = _wait_healthy(name)
        assert first["state"] == "active" and first["installed"] is True

        docker("exec", name, "kill", "-9", str(first["pid"]))  # a crash: systemd starts it again
        time.sleep(6)  # RestartSec=5
        again = _wait_healthy(name)
        assert again["pid"] != first["pid"] and int(str(again["restarts"])) >= 1

        assert docker("restart", "-t", "30", name, timeout=180).returncode == 0  # the machine reboots
        _wait_user_manager(name)
        after = _wait_healthy(name, 90)  # nobody logged in: lingering started it at boot
        assert after["state"] == "active"

        code, out = _as_alice(name, "gateway", "uninstall")
        assert code == 0 and "removed" in out
        assert not _status(name).get("health")
    finally:
        docker("rm", "-f", "-v", name)
