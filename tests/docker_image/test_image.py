"""The container image: built from this checkout's Dockerfile, it runs as a non-root user, keeps
its state in /state (the generated token 0600 there), and its health check turns healthy while
/health answers through the published port. Needs a Docker engine and a base image already on
it (registries are unreachable here: ``HOMARUS_TEST_BASE_IMAGE``, e.g. one made by
``scripts/docker-offline-base.sh``); skipped, with the reason, otherwise."""

from __future__ import annotations

import os
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.docker_image.conftest import docker, image_built, skip_without

BASE = os.environ.get("HOMARUS_TEST_BASE_IMAGE", "homarus-base:bookworm")


@pytest.mark.timeout(1200)
def test_the_image_builds_runs_as_non_root_and_turns_healthy(request: pytest.FixtureRequest) -> None:
    skip_without(BASE)
    context: Path = request.getfixturevalue("build_context")
    tag = f"homarus-test:{uuid.uuid4().hex[:8]}"
    offline = "PIP_INSTALL_ARGS=--no-index --find-links /src/.wheels"
    with image_built(tag, "--build-arg", f"BASE_IMAGE={BASE}", "--build-arg", offline, str(context),
                     timeout=1200) as built:  # fmt: skip
        assert built.returncode == 0, built.stderr[-3000:]
        _runs_healthy(tag)


def _runs_healthy(tag: str) -> None:
    name = f"homarus-test-{uuid.uuid4().hex[:8]}"
    try:
        run = docker("run", "-d", "--name", name, "-p", "127.0.0.1::18789", "--health-interval=1s",
                     "--health-start-period=60s", tag)  # fmt: skip
        assert run.returncode == 0, run.stderr
        status = ""
        for _ in range(120):
            status = docker("inspect", "-f", "{{.State.Health.Status}}", name).stdout.strip()
            if status == "healthy":
                break
            time.sleep(0.5)
        assert status == "healthy", docker("logs", name).stdout[-3000:]
        port = docker("port", name, "18789/tcp").stdout.strip().rsplit(":", 1)[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
            assert response.status == 200
        assert docker("exec", name, "id", "-u").stdout.strip() == "10001"
        token = docker("exec", name, "stat", "-c", "%u %a", "/state/gateway.token").stdout.strip()
        assert token == "10001 600"
    finally:
        docker("rm", "-f", "-v", name)
