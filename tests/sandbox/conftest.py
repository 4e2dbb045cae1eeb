"""Shared by the sandbox backends' escape tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A gateway state dir holding a secret no sandboxed command may read."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "secret.json").write_text('{"token": "hunter2"}')
    return state
