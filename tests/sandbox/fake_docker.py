"""A stand-in ``docker`` CLI for the tests of what Homarus makes of the CLI's answers (a shell
script in a temp dir); the real engine is in ``test_docker_engine.py``."""

from __future__ import annotations

from pathlib import Path


def fake_docker(tmp_path: Path, body: str) -> str:
    """The path of an executable ``docker`` that runs ``body`` (``sh``; ``$1`` is the verb)."""
    path = tmp_path / "docker"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)
