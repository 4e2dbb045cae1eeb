"""What memory answers with: search results, the search response, the index status.

Plain frozen dataclasses; ``to_dict`` gives the camelCase JSON the tools and (later) the gateway
methods send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["MemoryStatus", "SearchResponse", "SearchResult"]


@dataclass(frozen=True, slots=True)
class SearchResult:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str
    citation: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": self.score,
            "snippet": self.snippet,
            "source": self.source,
            "citation": self.citation,
        }


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: tuple[SearchResult, ...]
    #: ``hybrid`` (vectors + keywords), ``vector`` (hybrid disabled) or ``fts-only``
    mode: Literal["hybrid", "vector", "fts-only"]
    #: the embedding provider that answered (None in fts-only mode)
    provider: str | None
    model: str | None
    #: ``fresh``: synced, nothing changed since; ``syncing``; ``stale``: files changed, never
    #: synced, the last sync failed, or chunks still lack vectors
    index: Literal["fresh", "syncing", "stale"]
    index_reason: str | None = None
    #: why the search ran without vectors (or why nothing came back)
    reason: str | None = None
    warnings: tuple[str, ...] = ()
    #: why the answering provider is not the configured one (the chain fell back)
    fallback: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "results": [r.to_dict() for r in self.results],
            "mode": self.mode,
            "provider": self.provider,
            "model": self.model,
            "index": self.index,
        }
        if self.index_reason:
            out["indexReason"] = self.index_reason
        if self.reason:
            out["reason"] = self.reason
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.fallback:
            out["fallback"] = {"reason": self.fallback}
        return out


@dataclass(frozen=True, slots=True)
class MemoryStatus:
    agent_id: str
    db_path: str
    files: int
    chunks: int
    chunks_with_vectors: int
    provider: str | None
    model: str | None
    dims: int | None
    provider_reason: str | None
    vector_backend: str
    #: what holds the index: "pysqlite3 3.46.0" for the file, "PostgreSQL 15.8" when shared
    engine: str
    #: every gateway of a cluster reads and writes this index
    shared: bool
    dirty: bool
    index: Literal["fresh", "syncing", "stale"]
    index_reason: str | None
    #: what the index file was built with (provider, model, vectorDims), None before the first sync
    indexed_with: dict[str, Any] | None
    last_sync: dict[str, Any] | None
    #: set when a corrupt index file was moved aside and rebuilt
    recovered: str | None
    #: configuration that is accepted but has no effect yet, and similar notes
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id,
            "dbPath": self.db_path,
            "files": self.files,
            "chunks": self.chunks,
            "chunksWithVectors": self.chunks_with_vectors,
            "provider": self.provider,
            "model": self.model,
            "dims": self.dims,
            "providerReason": self.provider_reason,
            "vectorBackend": self.vector_backend,
            "engine": self.engine,
            "shared": self.shared,
            "dirty": self.dirty,
            "index": self.index,
            "indexReason": self.index_reason,
            "indexedWith": self.indexed_with,
            "lastSync": self.last_sync,
            "recovered": self.recovered,
            "warnings": list(self.warnings),
        }
