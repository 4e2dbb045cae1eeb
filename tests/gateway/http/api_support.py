"""A real gateway with the OpenAI-compatible API enabled, for the HTTP API tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from homarus.providers.scripted import ScriptedProvider, Step
from tests.conftest import RunningGateway, run_gateway

BASE_CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
    "agents": {
        "defaults": {"model": {"primary": "test/m"}},
        "list": [{"id": "main", "default": True}, {"id": "ops"}],
    },
}


def api_config(*, chat: bool = True, responses: bool = True, **extra: Any) -> dict[str, Any]:
    endpoints = {"chatCompletions": {"enabled": chat}, "responses": {"enabled": responses}}
    return {**BASE_CONFIG, "gateway": {"http": {"endpoints": endpoints}}, **extra}


@contextmanager
def api_gateway(
    root: Path, monkeypatch: pytest.MonkeyPatch, steps: Sequence[Step] = (), **config: Any
) -> Iterator[tuple[RunningGateway, ScriptedProvider]]:
    provider = ScriptedProvider(steps, then="echo")
    with run_gateway(root, config=api_config(**config)) as gw:
        gw.gateway.models.overrides["test"] = provider
        yield gw, provider


def wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")
