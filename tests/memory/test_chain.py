"""Choosing the embedding provider: auto order, explicit providers, fallbacks and FTS-only reasons."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from homarus.memory.chain import build_embedding_provider
from homarus.memory.embedding import EmbeddingProvider, EmbeddingSettings
from homarus.memory.local_minilm import LocalMiniLMProvider

Build = Callable[..., tuple[EmbeddingProvider | None, str | None]]


@pytest.fixture
async def build() -> AsyncIterator[Build]:
    """build_embedding_provider that closes whatever it made at the end of the test."""
    made: list[EmbeddingProvider] = []

    def run(env: dict[str, str] | None = None, **settings: Any) -> tuple[EmbeddingProvider | None, str | None]:
        provider, reason = build_embedding_provider(EmbeddingSettings(**settings), env or {})
        if provider is not None:
            made.append(provider)
        return provider, reason

    yield run
    for provider in made:
        await provider.aclose()


@pytest.fixture
def no_model(tmp_path: Path) -> str:
    return str(tmp_path / "no-model")


def test_none_is_fts_only_on_purpose(build: Build) -> None:
    assert build({"OPENAI_API_KEY": "k"}, provider="none") == (None, "disabled by config")


def test_auto_prefers_the_installed_local_model(build: Build) -> None:
    provider, reason = build({"OPENAI_API_KEY": "k"})
    assert isinstance(provider, LocalMiniLMProvider)
    assert (provider.id, provider.model, provider.dims) == ("local", "all-MiniLM-L6-v2", 384)
    assert reason is None


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OPENAI_API_KEY": "o", "GEMINI_API_KEY": "g", "VOYAGE_API_KEY": "v"}, "openai"),
        ({"GOOGLE_API_KEY": "g", "VOYAGE_API_KEY": "v"}, "gemini"),
        ({"VOYAGE_API_KEY": "v", "OPENAI_API_KEY": "  "}, "voyage"),
    ],
)
def test_auto_without_local_takes_the_first_remote_with_a_key(
    build: Build, no_model: str, env: dict[str, str], expected: str
) -> None:
    provider, reason = build(env, local_model_path=no_model)
    assert provider is not None
    assert provider.id == expected
    assert reason is None


def test_auto_uses_default_models_and_the_configured_remote_key(build: Build, no_model: str) -> None:
    provider, _ = build({}, local_model_path=no_model, remote_api_key="cfg-key", model="ignored-in-auto")
    assert provider is not None
    assert (provider.id, provider.model) == ("openai", "text-embedding-3-small")


def test_auto_with_nothing_is_fts_only_and_says_why(build: Build, no_model: str) -> None:
    provider, reason = build({}, local_model_path=no_model)
    assert provider is None
    assert reason is not None
    assert reason.startswith("no embedding provider available")
    for part in (no_model, "openai: no API key (OPENAI_API_KEY)", "GEMINI_API_KEY/GOOGLE_API_KEY", "VOYAGE_API_KEY"):
        assert part in reason


def test_explicit_remote_with_key_and_model(build: Build) -> None:
    provider, reason = build({"GEMINI_API_KEY": "g"}, provider="gemini", model="text-embedding-004")
    assert provider is not None
    assert (provider.id, provider.model, provider.max_input_tokens) == ("gemini", "text-embedding-004", 2048)
    assert reason is None


def test_explicit_provider_without_key_and_no_fallback_is_fts_only(build: Build) -> None:
    provider, reason = build({"GEMINI_API_KEY": "g"}, provider="openai")
    assert provider is None
    assert reason == "openai: no API key"


def test_explicit_provider_without_key_falls_back(build: Build) -> None:
    provider, reason = build(
        {"VOYAGE_API_KEY": "v"}, provider="openai", fallback="voyage", model="text-embedding-3-large"
    )
    assert provider is not None
    # the configured model belongs to the primary; the fallback keeps its own default
    assert (provider.id, provider.model) == ("voyage", "voyage-4-large")
    assert reason == "openai: no API key; using fallback voyage"


def test_explicit_local_with_bad_path_falls_back_to_remote(build: Build, no_model: str) -> None:
    provider, reason = build({"OPENAI_API_KEY": "o"}, provider="local", local_model_path=no_model, fallback="openai")
    assert provider is not None
    assert provider.id == "openai"
    assert reason is not None
    assert reason.startswith(f"local: local embedding model at {no_model} is incomplete")


def test_remote_falls_back_to_local(build: Build) -> None:
    provider, reason = build({}, provider="voyage", fallback="local")
    assert isinstance(provider, LocalMiniLMProvider)
    assert reason == "voyage: no API key; using fallback local"


def test_primary_and_fallback_both_unusable_is_fts_only(build: Build) -> None:
    provider, reason = build({}, provider="gemini", fallback="voyage")
    assert provider is None
    assert reason == "gemini: no API key; fallback voyage: no API key"


def test_fallback_equal_to_primary_is_not_tried_twice(build: Build) -> None:
    assert build({}, provider="openai", fallback="openai") == (None, "openai: no API key")


def test_openai_compatible_needs_a_base_url_but_no_key(build: Build) -> None:
    provider, reason = build({}, provider="openai-compatible")
    assert provider is None
    assert reason == "openai-compatible: provider openai-compatible needs memorySearch.remote.baseUrl"
    provider, reason = build({}, provider="openai-compatible", remote_base_url="http://127.0.0.1:9/v1", model="bge")
    assert provider is not None
    assert (provider.id, provider.model) == ("openai-compatible", "bge")
    assert reason is None


def test_explicit_local_uses_the_configured_directory(build: Build) -> None:
    from homarus.memory.local_minilm import default_model_dir

    path = default_model_dir()
    assert path is not None
    provider, reason = build({}, provider="local", local_model_path=str(path))
    assert isinstance(provider, LocalMiniLMProvider)
    assert provider.model_dir == path
    assert provider.model == "all-MiniLM-L6-v2"
    assert reason is None
