"""Which embedding provider answers, from the config and the environment; or why none does.

``auto`` tries, in order: the ``local`` MiniLM model when its files and runtime are installed, then
OpenAI, Gemini and Voyage, taking the first that has an API key. With none, memory runs FTS-only
and the reason says what was missing for each candidate, so ``memory status`` can tell the user.

An explicit provider that cannot be built (no key, no model files, no base URL) falls back to
``fallback`` when one is configured; otherwise, and when the fallback fails too, the result is
FTS-only with the reason. Building never raises: nothing here talks to the network, and a config
that names an unusable provider must still leave keyword search working. When a fallback is used,
the provider comes back *with* a reason, which the search result reports as ``fallback``.

The configured ``model`` applies to the provider named in ``provider`` only; ``auto`` candidates
and fallbacks use their own default models (a model name means nothing to another provider). The
``remote.*`` settings (base URL, key, headers) apply to every remote provider, as in the original.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from homarus.memory.embedding import EmbeddingError, EmbeddingProvider, EmbeddingSettings, MissingApiKey
from homarus.memory.local_minilm import LocalMiniLMProvider
from homarus.memory.remote import ENV_KEYS, RemoteEmbeddingProvider, resolve_api_key
from homarus.memory.remote_gemini import GeminiEmbeddings
from homarus.memory.remote_openai import OpenAICompatibleEmbeddings, OpenAIEmbeddings
from homarus.memory.remote_voyage import VoyageEmbeddings

if TYPE_CHECKING:
    import httpx

__all__ = ["AUTO_REMOTE_ORDER", "build_embedding_provider", "create_provider"]

#: the remote part of ``auto``, in order (the original also tried mistral here; we have no client for it)
AUTO_REMOTE_ORDER = ("openai", "gemini", "voyage")

_REMOTE: dict[str, type[RemoteEmbeddingProvider]] = {
    "openai": OpenAIEmbeddings,
    "openai-compatible": OpenAICompatibleEmbeddings,
    "gemini": GeminiEmbeddings,
    "voyage": VoyageEmbeddings,
}


def create_provider(
    provider_id: str,
    settings: EmbeddingSettings,
    env: Mapping[str, str],
    *,
    model: str = "",
    client: httpx.AsyncClient | None = None,
) -> EmbeddingProvider:
    """One provider by id; raises :class:`MissingApiKey` or :class:`EmbeddingError` when unusable.

    Cheap and offline: the local model loads on first use, remote providers connect on first use.
    """
    if provider_id == "local":
        return LocalMiniLMProvider(settings.local_model_path)
    cls = _REMOTE.get(provider_id)
    if cls is None:
        raise EmbeddingError(f"unknown embedding provider {provider_id!r}")
    if provider_id == "openai-compatible" and not settings.remote_base_url:
        raise EmbeddingError("provider openai-compatible needs memorySearch.remote.baseUrl")
    return cls(
        model=model,
        base_url=settings.remote_base_url,
        api_key=resolve_api_key(provider_id, settings.remote_api_key, env),
        headers=settings.remote_headers,
        client=client,
    )


def build_embedding_provider(
    settings: EmbeddingSettings, env: Mapping[str, str], *, client: httpx.AsyncClient | None = None
) -> tuple[EmbeddingProvider | None, str | None]:
    """(provider, None), (fallback provider, why the primary was skipped), or (None, why FTS-only)."""
    if settings.provider == "none":
        return None, "disabled by config"
    if settings.provider == "auto":
        return _auto(settings, env, client)
    try:
        return create_provider(settings.provider, settings, env, model=settings.model, client=client), None
    except EmbeddingError as exc:
        primary = f"{settings.provider}: {_reason(exc)}"
    fallback = settings.fallback
    if fallback in ("none", settings.provider):
        return None, primary
    try:
        provider = create_provider(fallback, settings, env, client=client)
    except EmbeddingError as exc:
        return None, f"{primary}; fallback {fallback}: {_reason(exc)}"
    return provider, f"{primary}; using fallback {fallback}"


def _auto(
    settings: EmbeddingSettings, env: Mapping[str, str], client: httpx.AsyncClient | None
) -> tuple[EmbeddingProvider | None, str | None]:
    skipped: list[str] = []
    try:
        return create_provider("local", settings, env), None
    except EmbeddingError as exc:
        skipped.append(f"local: {_reason(exc)}")
    for provider_id in AUTO_REMOTE_ORDER:
        try:
            return create_provider(provider_id, settings, env, client=client), None
        except EmbeddingError as exc:
            names = "/".join(ENV_KEYS.get(provider_id, ()))
            skipped.append(
                f"{provider_id}: {_reason(exc)} ({names})"
                if isinstance(exc, MissingApiKey)
                else f"{provider_id}: {_reason(exc)}"
            )
    return None, "no embedding provider available (" + "; ".join(skipped) + ")"


def _reason(exc: EmbeddingError) -> str:
    if isinstance(exc, MissingApiKey):
        # short for the status line; the exception's own message names the config key too
        return "no API key"
    return exc.message
