"""One agent's memory: keeping its index in step with the files, searching it, reading files.

The index (:class:`~homarus.memory.backend.Index`: the agent's SQLite file, or the cluster's
PostgreSQL tables) has a writer used by sync and a reader used by searches. One sync runs at a
time (across the gateways of a cluster, too): a concurrent ``sync()`` joins the one
in flight, a forced one waits for it and then rebuilds. Syncs are triggered by the caller
(``sync()``), by a session starting (``warm_session``, once per session key), by a search that
finds the index dirty (in the background: that search answers from the current index and says
``syncing``), and by the optional file watcher (``start_watching``).

A search never raises for bad input or a failing provider. It embeds the query first (with a
timeout); when that fails, or there is no provider, it answers from FTS alone and says so
(``mode="fts-only"`` and a ``reason``), scoring each keyword hit relative to the best one. Every
response says whether the index is ``fresh``, ``syncing`` or ``stale`` (never synced, files
changed, last sync failed, chunks still missing vectors), so an empty answer from an outdated
index is not mistaken for "nothing remembered".

Vector search runs on an in-memory float32 matrix loaded from the index (see ``retrieval``): at
every size measured it beat sqlite-vec's brute-force KNN several times over (bench/RESULTS.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from homarus.config.memory import MemorySearchConfig
from homarus.memory.backend import Index, IndexStore
from homarus.memory.chunking import ChunkingParams
from homarus.memory.embedding import EmbeddingProvider, EmbeddingSettings
from homarus.memory.index import Indexer, SyncReport, timed_report
from homarus.memory.indexfile import IndexFile
from homarus.memory.reader import ReadResult, read_memory_file
from homarus.memory.results import MemoryStatus, SearchResponse, SearchResult
from homarus.memory.retrieval import Retriever, VectorBackend
from homarus.memory.search import apply_decay, citation, fuse, mmr, snippet

if TYPE_CHECKING:
    from homarus.memory.watch import MemoryWatcher

__all__ = ["MemoryManager", "embedding_settings", "resolve_db_path"]

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
QUERY_EMBED_TIMEOUT_S = 60.0
#: how long a search waits for the first index of a manager to be built (later syncs never block it)
FIRST_SYNC_WAIT_S = 30.0


def resolve_db_path(config: MemorySearchConfig, state_dir: Path, agent_id: str) -> Path:
    if config.store.path:
        return Path(os.path.expanduser(config.store.path.replace("{agentId}", agent_id)))
    return state_dir / "memory" / f"{agent_id}.sqlite"


def embedding_settings(config: MemorySearchConfig) -> EmbeddingSettings:
    """The embedding part of the config, in the form the provider factories take.

    (Here rather than in ``config.memory``: config sits below memory in the layer order.)
    """
    return EmbeddingSettings(
        provider=config.provider,
        fallback=config.fallback,
        model=config.model,
        local_model_path=config.local.model_path,
        remote_base_url=config.remote.base_url,
        remote_api_key=config.remote.api_key,
        remote_headers=dict(config.remote.headers),
    )


class MemoryManager:
    def __init__(
        self,
        *,
        agent_id: str,
        workspace: Path,
        db_path: Path,
        config: MemorySearchConfig,
        provider: EmbeddingProvider | None,
        provider_reason: str | None = None,
        vector_backend: VectorBackend = "auto",
        query_timeout_s: float = QUERY_EMBED_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
        index: Index | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.workspace = Path(os.path.abspath(workspace))
        self.db_path = db_path
        self.config = config
        self.provider = provider
        self.provider_reason = provider_reason or (None if provider else "no embedding provider configured")
        self.vector_backend = vector_backend
        self.query_timeout_s = query_timeout_s
        self.clock = clock
        self.indexer = Indexer(
            workspace=self.workspace,
            extra_paths=config.extra_paths,
            chunking=ChunkingParams(config.chunking.tokens, config.chunking.overlap),
            provider=provider,
            sources=[s for s in config.sources if s == "memory"],
            cache_enabled=config.cache.enabled,
            cache_max_entries=config.cache.max_entries,
        )
        #: the index: this agent's SQLite file unless one shared by a cluster is given
        self.file: Index = index or IndexFile(db_path, use_vec=config.store.vector.enabled, clock=clock)
        self._inflight: asyncio.Future[SyncReport] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.retriever = Retriever(self.file, model=self.indexer.model, backend=vector_backend)
        self._dirty = True
        self._last_sync: SyncReport | None = None
        self._closed = False
        self._watcher: MemoryWatcher | None = None
        self._warmed: set[str] = set()
        #: paths a watcher reported changed, consumed by the next sync
        self._pending_paths: set[str] = set()
        #: the next sync must list every file (startup, a change of unknown place, a failed sync)
        self._scan_all = True

    @classmethod
    def from_config(
        cls,
        *,
        agent_id: str,
        workspace: Path,
        state_dir: Path,
        config: MemorySearchConfig,
        provider: EmbeddingProvider | None,
        provider_reason: str | None = None,
        index: Index | None = None,
    ) -> MemoryManager:
        return cls(
            index=index,
            agent_id=agent_id,
            workspace=workspace,
            db_path=resolve_db_path(config, state_dir, agent_id),
            config=config,
            provider=provider,
            provider_reason=provider_reason,
        )

    # -- lifecycle ------------------------------------------------------------------------
    async def _ensure_open(self) -> IndexStore:
        if self._closed:
            raise RuntimeError("memory manager is closed")
        return await self.file.ensure_open()

    async def aclose(self) -> None:
        self._closed = True
        if self._watcher is not None:
            await self._watcher.stop()
        tasks = [*self._background, *([self._inflight] if self._inflight else [])]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        await self.retriever.aclose()
        await self.file.close()

    def start_watching(self) -> bool:
        """Follow file changes with ``watchfiles`` when ``sync.watch`` is on; False when not watching."""
        if not self.config.sync.watch or self._closed:
            return False
        if self._watcher is None:
            try:
                import watchfiles  # noqa: F401 - only checking it is installed
            except ImportError:
                log.warning("memory: watchfiles is not installed; memory files are not watched")
                return False
            from homarus.memory.watch import MemoryWatcher

            self._watcher = MemoryWatcher(
                self, workspace=self.workspace, extra_paths=self.config.extra_paths,
                debounce_ms=self.config.sync.watch_debounce_ms,
            )  # fmt: skip
        self._watcher.start()
        return True

    def warm_session(self, session_key: str) -> None:
        """A session started: sync in the background, once per session key (``sync.onSessionStart``)."""
        if not self.config.sync.on_session_start or session_key in self._warmed or self._closed:
            return
        self._warmed.add(session_key)
        self.sync_in_background("session-start")

    def mark_dirty(self, paths: Iterable[str] | None = None) -> None:
        """Memory files changed: the next sync has work (only ``paths``, when the caller knows them)."""
        self._dirty = True
        if paths is None:
            self._scan_all = True

    # -- sync -----------------------------------------------------------------------------
    async def sync(
        self, *, force: bool = False, reason: str = "manual", paths: Iterable[str] | None = None
    ) -> SyncReport:
        """Index what changed (everything when ``force``); a concurrent call joins the one in flight.

        ``paths`` (absolute, as a file watcher reports them) limits the work to those files and
        directories instead of stat-ing every memory file; a sync in flight is waited for first,
        since it may have listed the directory before the change.
        """
        if paths is not None:
            self._pending_paths.update(paths)
        elif not force:
            self._scan_all = True  # a plain sync() means "look at everything"
        while self._inflight is not None and not self._inflight.done():
            if not force and paths is None:
                return await asyncio.shield(self._inflight)
            with contextlib.suppress(Exception):
                await asyncio.shield(self._inflight)
            if paths is not None and not self._pending_paths:
                return self._last_sync or timed_report(reason, full=False)  # a later sync already covered them
        task = asyncio.ensure_future(self._run_sync(force, reason))
        self._inflight = task
        return await asyncio.shield(task)

    def sync_in_background(self, reason: str) -> None:
        """Start a sync unless one is running; it is in flight when this returns (later calls join it)."""
        if self._closed or (self._inflight is not None and not self._inflight.done()):
            return
        task = asyncio.ensure_future(self._run_sync(False, reason))
        self._inflight = task
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("memory: background task failed: %s", task.exception())

    async def _run_sync(self, force: bool, reason: str) -> SyncReport:
        try:
            return await self._run_sync_once(force, reason)
        except Exception as exc:
            if not self.file.is_corruption(exc):
                raise
            # the file went bad under us: set it aside, then rebuild from the memory files
            await self.file.recover(exc)
            self.retriever.rebuilt()
            return await self._run_sync_once(True, reason)

    async def _run_sync_once(self, force: bool, reason: str) -> SyncReport:
        await self._ensure_open()
        self._dirty = False  # a change arriving while this runs sets it again
        only = sorted(self._pending_paths) if self._pending_paths and not self._scan_all else None
        self._pending_paths, self._scan_all = set(), False
        report = timed_report(reason, full=False)
        t0 = time.perf_counter()
        try:
            # one writer at a time, across gateways when the index is shared: a sync waiting here
            # for another gateway's finds its work done and only looks
            async with self.file.writing() as writer:
                meta = await asyncio.to_thread(writer.index_meta)
                why = "forced" if force else self.indexer.needs_full(meta)
                report.full = why is not None
                if why is not None:
                    log.info("memory %s: full reindex (%s)", self.agent_id, why)
                    await self._full_reindex(report)
                else:
                    await self.indexer.sync(writer, report, only)
        except BaseException as exc:
            self._dirty = self._scan_all = True
            report.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            report.duration_ms = (time.perf_counter() - t0) * 1000
            self._last_sync = report
        if report.files_indexed or report.files_removed or report.vectors_backfilled or report.full:
            self.retriever.synced()
        if report.embedding_error:
            self._dirty = True  # vectors are missing: the next sync fills them in
        return report

    async def _full_reindex(self, report: SyncReport) -> None:
        async def fill(new: IndexStore) -> None:
            await self.indexer.sync(new, report)

        await self.file.rebuild(fill, seed_cache=self.config.cache.enabled)
        self.retriever.rebuilt()

    # -- search ---------------------------------------------------------------------------
    async def search(
        self, query: str, max_results: int | None = None, min_score: float | None = None
    ) -> SearchResponse:
        q = " ".join(query.split())[:MAX_QUERY_CHARS]
        qc = self.config.query
        limit = max(1, min(100, max_results if max_results is not None else qc.max_results))
        threshold = qc.min_score if min_score is None or not math.isfinite(min_score) else min(1.0, max(0.0, min_score))
        await self._ensure_open()
        if self._dirty and self.config.sync.on_search:
            self.sync_in_background("search")
        if self._last_sync is None and self._inflight is not None and not self._inflight.done():
            # the very first index is being built: an old index would be an empty one, so wait (bounded)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(FIRST_SYNC_WAIT_S):
                    await asyncio.shield(self._inflight)
        vector, reason = (None, self.provider_reason) if self.provider is None else await self._embed_query(q)
        mode: Literal["hybrid", "vector", "fts-only"] = (
            "fts-only" if vector is None else ("hybrid" if qc.hybrid.enabled else "vector")
        )
        warnings: list[str] = [self.file.recovered] if self.file.recovered else []
        if not q:
            return self._response([], mode, reason or "empty query", warnings)
        cand = qc.candidates(limit)
        candidates, vector_error = await asyncio.to_thread(self.retriever.gather, q, vector, mode, cand, warnings)
        if vector_error:
            mode, reason = "fts-only", vector_error
        if self.retriever.behind:
            self.retriever.refresh_soon()  # a sync landed while the last reload was running
        if mode == "fts-only":
            # every keyword hit shares a term with the query: score it relative to the best hit
            # (rel/(1+rel) alone falls under minScore on small indexes, where BM25's IDF is low)
            best = max((c.extras.get("bm25", 0.0) for c in candidates), default=0.0)
            for c in candidates:
                c.score = c.extras.get("bm25", 0.0) / best if best > 0 else (c.text_score or 0.0)
        else:
            fuse(candidates, weights=qc.hybrid.weights, mode=qc.hybrid.fusion)
        if qc.hybrid.temporal_decay.enabled:
            apply_decay(candidates, now=self.clock(), half_life_days=qc.hybrid.temporal_decay.half_life_days)
        candidates.sort(key=lambda c: (-c.score, c.path, c.start_line))
        if qc.hybrid.mmr.enabled:
            candidates = mmr(candidates, qc.hybrid.mmr.lambda_)
        kept = [c for c in candidates if c.score >= threshold][:limit]
        results = [
            SearchResult(
                c.path, c.start_line, c.end_line, round(c.score, 6), snippet(c.text), c.source,
                citation(c.path, c.start_line, c.end_line),
            )
            for c in kept
        ]  # fmt: skip
        return self._response(results, mode, reason, warnings)

    async def _embed_query(self, q: str) -> tuple[list[float] | None, str | None]:
        assert self.provider is not None
        if not q:
            return None, None
        try:
            async with asyncio.timeout(self.query_timeout_s):
                vectors = await self.provider.embed([q], "query")
        except TimeoutError:
            return None, f"query embedding timed out after {self.query_timeout_s:g} s"
        except Exception as exc:  # any provider failure degrades this query to keywords
            return None, f"embedding provider failed: {type(exc).__name__}: {exc}"
        if len(vectors) != 1 or not vectors[0] or not any(vectors[0]):
            return None, "embedding provider returned no usable vector"
        dims = self.provider.dims
        if dims and len(vectors[0]) != dims:
            return None, f"embedding provider returned {len(vectors[0])} dimensions, expected {dims}"
        return list(vectors[0]), None

    # -- state ----------------------------------------------------------------------------
    def _index_state(self) -> tuple[Literal["fresh", "syncing", "stale"], str | None]:
        if self._inflight is not None and not self._inflight.done():
            return "syncing", "a sync is running; results come from the previous index"
        if self._last_sync is None:
            return "stale", "not synced since startup"
        if self._last_sync.error:
            return "stale", f"last sync failed: {self._last_sync.error}"
        if self._last_sync.embedding_error:
            return "stale", f"some chunks have no vectors yet: {self._last_sync.embedding_error}"
        if self._dirty:
            return "stale", "memory files changed since the last sync"
        return "fresh", None

    def _response(
        self, results: list[SearchResult], mode: Literal["hybrid", "vector", "fts-only"], reason: str | None,
        warnings: list[str],
    ) -> SearchResponse:  # fmt: skip
        state, why = self._index_state()
        return SearchResponse(
            results=tuple(results),
            mode=mode,
            provider=self.provider.id if self.provider and mode != "fts-only" else None,
            model=self.provider.model if self.provider and mode != "fts-only" else None,
            index=state,
            index_reason=why,
            reason=reason if mode == "fts-only" or not results else None,
            warnings=tuple(warnings),
            fallback=self.provider_reason if self.provider is not None and mode != "fts-only" else None,
        )

    async def status(self) -> MemoryStatus:
        await self._ensure_open()

        def read() -> tuple[tuple[int, int, int], dict[str, Any] | None, bool]:
            with self.file.swap_lock:  # not while a rebuild swaps the file
                reader = self.file.reader
                if reader is None:
                    return (0, 0, 0), None, False
                return reader.counts(), reader.index_meta(), reader.vec_available

        (files, chunks, vectors), meta, vec_loaded = await asyncio.to_thread(read)
        state, why = self._index_state()
        rebuild = self.indexer.needs_full(meta)
        return MemoryStatus(
            agent_id=self.agent_id,
            db_path=self.file.location,
            files=files,
            chunks=chunks,
            chunks_with_vectors=vectors,
            provider=self.provider.id if self.provider else None,
            model=self.provider.model if self.provider else None,
            dims=self.provider.dims if self.provider else None,
            provider_reason=self.provider_reason,
            vector_backend=self._backend_name(vec_loaded),
            engine=self.file.engine,
            shared=self.file.shared,
            dirty=self._dirty,
            index=state if rebuild is None or state == "syncing" else "stale",
            index_reason=why if rebuild is None or state == "syncing" else f"full reindex needed: {rebuild}",
            indexed_with={k: meta.get(k) for k in ("provider", "model", "vectorDims")} if meta else None,
            last_sync=self._last_sync.to_dict() if self._last_sync else None,
            recovered=self.file.recovered,
            warnings=("session transcripts (sources: sessions) are not indexed yet",)
            if "sessions" in self.config.sources
            else (),
        )

    def _backend_name(self, vec_loaded: bool) -> str:
        if self.provider is None:
            return "none (fts-only)"
        persisted = self.file.persisted_in(vec_loaded)
        searched = persisted if self.vector_backend == "sqlite-vec" and vec_loaded else "in-memory matrix"
        return f"{searched} (vectors persisted in {persisted})"

    # -- files ----------------------------------------------------------------------------
    async def read(self, path: str, from_line: int | None = None, lines: int | None = None) -> ReadResult:
        return await asyncio.to_thread(
            read_memory_file,
            path,
            workspace=self.workspace,
            extra_paths=self.config.extra_paths,
            from_line=from_line,
            lines=lines,
        )
