"""Fixtures shared by the provider adapter tests: the fake LLM server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes import FakeLLM, run_fake_llm


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with run_fake_llm() as fake:
        yield fake
