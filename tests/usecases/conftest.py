"""A real gateway object on a temp state dir, not started: what the use cases run against."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from homarus.config.store import ConfigStore
from homarus.gateway.app import Gateway, GatewayOptions
from tests.conftest import make_paths


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    paths = make_paths(tmp_path)
    gateway = Gateway(paths, ConfigStore.open(paths, env={}), GatewayOptions())
    yield gateway
    if gateway.built("journal"):
        gateway.journal.close()
