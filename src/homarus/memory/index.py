"""Bringing an index file up to date with the memory files (see ``sources`` for which those are).

Differential sync: a file whose size and mtime match its ``files`` row is skipped without being
read; one whose content hash matches is skipped after reading (its new stat recorded). A changed
file is re-chunked and each chunk keeps its vector when its hash is unchanged (from the file's old
rows or the embedding cache, keyed by provider, model and chunk hash); only new text goes to the
provider. Files gone from disk lose their rows. Work is done in groups of files, so a sync of
thousands of files costs a few thread hops and one transaction per group; when the caller knows
which paths changed (the watcher), only those are looked at.

Binary files (a NUL byte in the first 8 KB), files over 10 MB and unreadable files are left out and
listed in the report. When the provider fails mid-sync, the remaining chunks are stored without
vectors (still found by keyword search) and the failure is reported; the next sync fills them in.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homarus.memory.backend import IndexStore
from homarus.memory.chunking import Chunk, ChunkingParams, chunk_markdown, split_for_input_limit
from homarus.memory.embedding import EmbeddingError, EmbeddingProvider
from homarus.memory.sources import SourceFile, classify_paths, list_memory_files
from homarus.memory.store import FileRow, NewChunk, encode_vector

__all__ = ["FTS_ONLY_MODEL", "Indexer", "SourceFile", "SyncReport", "chunk_id", "timed_report"]

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 10 * 1024 * 1024
#: texts per provider call, and their total UTF-8 size
EMBED_BATCH_TEXTS = 64
EMBED_BATCH_BYTES = 32_000
#: files read, chunked and written per thread hop of a sync
FILES_PER_GROUP = 64
FTS_ONLY_MODEL = "fts-only"


@dataclass(frozen=True, slots=True)
class _Todo:
    """A file whose stat differs from its ``files`` row (or that has none)."""

    file: SourceFile
    size: int
    mtime_ns: int
    row: FileRow | None


@dataclass(slots=True)
class SyncReport:
    reason: str
    full: bool = False
    files_total: int = 0
    files_indexed: int = 0
    files_skipped: int = 0
    files_removed: int = 0
    chunks_written: int = 0
    chunks_embedded: int = 0
    cache_hits: int = 0
    chunks_reused: int = 0
    vectors_backfilled: int = 0
    #: files left out (binary, too large, unreadable) with the reason
    ignored: list[tuple[str, str]] = field(default_factory=list)
    embedding_error: str | None = None
    error: str | None = None
    started_at: float = 0.0
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "full": self.full,
            "filesTotal": self.files_total,
            "filesIndexed": self.files_indexed,
            "filesSkipped": self.files_skipped,
            "filesRemoved": self.files_removed,
            "chunksWritten": self.chunks_written,
            "chunksEmbedded": self.chunks_embedded,
            "cacheHits": self.cache_hits,
            "chunksReused": self.chunks_reused,
            "vectorsBackfilled": self.vectors_backfilled,
            "ignored": [{"path": p, "reason": r} for p, r in self.ignored],
            "embeddingError": self.embedding_error,
            "error": self.error,
            "startedAt": self.started_at,
            "durationMs": round(self.duration_ms, 1),
        }


# -- indexing ---------------------------------------------------------------------------------
def chunk_id(source: str, path: str, start: int, end: int, chunk_hash: str, model: str) -> str:
    return hashlib.sha256(f"{source}:{path}:{start}:{end}:{chunk_hash}:{model}".encode()).hexdigest()


class Indexer:
    """Indexes memory files into one index store (``backend.IndexStore``) with one provider (or none)."""

    def __init__(
        self,
        *,
        workspace: Path,
        extra_paths: Sequence[str],
        chunking: ChunkingParams,
        provider: EmbeddingProvider | None,
        sources: Sequence[str] = ("memory",),
        cache_enabled: bool = True,
        cache_max_entries: int | None = None,
    ) -> None:
        self.workspace = workspace
        self.extra_paths = tuple(extra_paths)
        self.chunking = chunking
        self.provider = provider
        self.sources = tuple(sources)
        self.cache_enabled = cache_enabled
        self.cache_max_entries = cache_max_entries
        self._vectors_failed: str | None = None

    @property
    def model(self) -> str:
        return self.provider.model if self.provider else FTS_ONLY_MODEL

    @property
    def provider_id(self) -> str:
        return self.provider.id if self.provider else "none"

    @property
    def cache_key(self) -> tuple[str, str, str]:
        key = hashlib.sha256(json.dumps({"provider": self.provider_id, "model": self.model}).encode()).hexdigest()
        return self.provider_id, self.model, key

    def expected_meta(self) -> dict[str, Any]:
        return {
            "provider": self.provider_id,
            "model": self.model,
            "providerKey": self.cache_key[2],
            "sources": sorted(self.sources),
            "chunkTokens": self.chunking.tokens,
            "chunkOverlap": self.chunking.overlap,
        }

    def needs_full(self, meta: dict[str, Any] | None) -> str | None:
        """Why the index must be rebuilt from scratch for this configuration, or None."""
        if meta is None:
            return "no index yet"
        expected = self.expected_meta()
        for key, want in expected.items():
            if meta.get(key) != want:
                return f"{key} changed ({meta.get(key)!r} → {want!r})"
        dims = self.provider.dims if self.provider else None
        if dims is not None and meta.get("vectorDims") not in (None, dims):
            return f"vector size changed ({meta.get('vectorDims')} → {dims})"
        return None

    async def sync(self, store: IndexStore, report: SyncReport, only: Sequence[str] | None = None) -> None:
        """Bring ``store`` up to date with the files on disk (or with just the ``only`` paths)."""
        self._vectors_failed = None
        todo, gone = await asyncio.to_thread(self._plan, store, report, only)
        # files are handled in groups so a sync of thousands of files costs a few thread hops per group
        for start in range(0, len(todo), FILES_PER_GROUP):
            group = await asyncio.to_thread(self._read_group, store, todo[start : start + FILES_PER_GROUP], report)
            vectors = await self._group_vectors(store, group, report)
            writes = [(entry, self._new_chunks(entry, pieces, vectors)) for entry, pieces, _ in group]
            if writes:
                await asyncio.to_thread(store.replace_files, writes, self.model)
                report.files_indexed += len(writes)
                report.chunks_written += sum(len(c) for _, c in writes)
        if gone:
            report.files_removed += await asyncio.to_thread(store.delete_files, gone)
        await self._backfill(store, report)
        meta = self.expected_meta()
        if self.provider and self.provider.dims:
            meta["vectorDims"] = self.provider.dims
        await asyncio.to_thread(store.set_index_meta, meta)
        if self.cache_enabled and self.cache_max_entries:
            await asyncio.to_thread(store.cache_prune, self.cache_max_entries)
        report.embedding_error = self._vectors_failed

    def _plan(self, store: IndexStore, report: SyncReport, only: Sequence[str] | None) -> tuple[list[_Todo], list[str]]:
        """What may have changed, and what is gone (one thread hop).

        Without ``only`` every memory file is listed and stat-ed; with it (paths the watcher saw
        change) just those are looked at.
        """
        known = store.files()
        if only is None:
            files = list_memory_files(self.workspace, self.extra_paths)
            listed = {f.path for f in files}
            gone = [p for p in known if p not in listed]
        else:
            files, removed = classify_paths(only, self.workspace, self.extra_paths)
            prefixes = tuple(g for g in removed if g.endswith("/"))
            gone = [p for p in known if p in removed or (prefixes and p.startswith(prefixes))]
        report.files_total = len(files) if only is None else len(known)
        todo: list[_Todo] = []
        for f in files:
            row = known.get(f.path)
            if row is not None and row.size == f.size and row.mtime_ns == f.mtime_ns:
                report.files_skipped += 1
                continue
            todo.append(_Todo(f, f.size, f.mtime_ns, row))
        return todo, gone

    def _read_group(
        self, store: IndexStore, todo: Sequence[_Todo], report: SyncReport
    ) -> list[tuple[FileRow, list[Chunk], dict[str, tuple[bytes, int]]]]:
        """Read, hash and chunk a group of files; unchanged content only gets its new stat recorded."""
        out: list[tuple[FileRow, list[Chunk], dict[str, tuple[bytes, int]]]] = []
        for t in todo:
            f = t.file
            if t.size > MAX_FILE_BYTES:
                report.ignored.append((f.path, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"))
                continue
            try:
                data = Path(f.abs_path).read_bytes()
            except FileNotFoundError:  # deleted since it was listed
                if t.row is not None:
                    report.files_removed += store.delete_files([f.path])
                continue
            except OSError as exc:
                report.ignored.append((f.path, f"unreadable: {exc.strerror or exc}"))
                continue
            if b"\x00" in data[:8192]:
                report.ignored.append((f.path, "binary content"))
                if t.row is not None:
                    report.files_removed += store.delete_files([f.path])
                continue
            entry = FileRow(f.path, f.source, hashlib.sha256(data).hexdigest(), t.mtime_ns, len(data))
            if t.row is not None and t.row.hash == entry.hash:
                store.touch_file(entry)
                report.files_skipped += 1
                continue
            pieces = chunk_markdown(data.decode("utf-8", errors="replace"), self.chunking)
            if self.provider is not None:
                limit = max(1, self.provider.max_input_tokens) * 4
                pieces = [p for c in pieces for p in split_for_input_limit(c, limit)]
            reuse = store.vectors_by_hash(f.path, self.model) if self.provider is not None and t.row else {}
            report.chunks_reused += len({c.hash for c in pieces if c.hash in reuse})
            out.append((entry, pieces, reuse))
        return out

    async def _group_vectors(
        self, store: IndexStore, group: Sequence[tuple[FileRow, list[Chunk], dict[str, tuple[bytes, int]]]],
        report: SyncReport,
    ) -> dict[str, tuple[bytes, int]]:  # fmt: skip
        """Vectors for every chunk of the group: kept ones, then the cache, then the provider."""
        if self.provider is None:
            return {}
        vectors: dict[str, tuple[bytes, int]] = {}
        texts: dict[str, str] = {}
        for _, pieces, reuse in group:
            vectors.update(reuse)
            texts.update({c.hash: c.text for c in pieces if c.hash not in reuse})
        missing = [h for h in texts if h not in vectors]
        if missing and self.cache_enabled:
            cached = await asyncio.to_thread(store.cache_get, self.cache_key, missing)
            report.cache_hits += len(cached)
            vectors.update(cached)
        vectors.update(await self._embed(store, {h: t for h, t in texts.items() if h not in vectors}, report))
        return vectors

    def _new_chunks(
        self, entry: FileRow, pieces: Sequence[Chunk], vectors: dict[str, tuple[bytes, int]]
    ) -> list[NewChunk]:
        return [
            NewChunk(
                chunk_id(entry.source, entry.path, c.start_line, c.end_line, c.hash, self.model),
                c.start_line,
                c.end_line,
                c.hash,
                c.text,
                *vectors.get(c.hash, (None, None)),
            )
            for c in pieces
        ]

    async def _embed(
        self, store: IndexStore, texts: dict[str, str], report: SyncReport
    ) -> dict[str, tuple[bytes, int]]:
        """Embed ``{hash: text}`` in bounded batches; on failure return what was done so far."""
        out: dict[str, tuple[bytes, int]] = {}
        if not texts or self.provider is None or self._vectors_failed:
            return out
        items = list(texts.items())
        batch: list[tuple[str, str]] = []
        size = 0
        for i, (h, t) in enumerate(items):
            batch.append((h, t))
            size += len(t.encode("utf-8", "surrogatepass"))
            if len(batch) >= EMBED_BATCH_TEXTS or size >= EMBED_BATCH_BYTES or i == len(items) - 1:
                try:
                    vectors = await self._embed_batch([t for _, t in batch])
                except Exception as exc:  # a provider is outside code: any failure degrades to no vectors
                    self._vectors_failed = f"{type(exc).__name__}: {exc}"
                    log.warning("memory: embedding failed, chunks indexed without vectors: %s", self._vectors_failed)
                    return out
                encoded = [(bh, encode_vector(v), len(v)) for (bh, _), v in zip(batch, vectors, strict=True)]
                report.chunks_embedded += len(encoded)
                out.update({bh: (blob, dims) for bh, blob, dims in encoded})
                if self.cache_enabled:
                    await asyncio.to_thread(store.cache_put, self.cache_key, encoded)
                batch, size = [], 0
        return out

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        assert self.provider is not None
        vectors = await self.provider.embed(texts, "document")
        if len(vectors) != len(texts):
            raise EmbeddingError(f"provider returned {len(vectors)} vectors for {len(texts)} texts")
        want = self.provider.dims or (len(vectors[0]) if vectors else 0)
        for v in vectors:
            if len(v) != want or want == 0:
                raise EmbeddingError(f"provider returned a {len(v)}-dimensional vector, expected {want}")
        return vectors

    async def _backfill(self, store: IndexStore, report: SyncReport) -> None:
        """Give vectors to chunks stored without one (an earlier provider failure)."""
        if self.provider is None or self._vectors_failed:
            return
        for _ in range(10_000):
            rows = await asyncio.to_thread(store.chunks_missing_vectors, self.model, 256)
            if not rows:
                return
            texts = {h: t for _, h, t in rows}
            vectors: dict[str, tuple[bytes, int]] = {}
            if self.cache_enabled:
                vectors = await asyncio.to_thread(store.cache_get, self.cache_key, list(texts))
                report.cache_hits += len(vectors)
            vectors.update(await self._embed(store, {h: t for h, t in texts.items() if h not in vectors}, report))
            updates = [(seq, *vectors[h]) for seq, h, _ in rows if h in vectors]
            if updates:
                await asyncio.to_thread(store.set_vectors, updates)
                report.vectors_backfilled += len(updates)
            if self._vectors_failed or len(updates) < len(rows):
                return


def timed_report(reason: str, full: bool) -> SyncReport:
    return SyncReport(reason=reason, full=full, started_at=time.time())
