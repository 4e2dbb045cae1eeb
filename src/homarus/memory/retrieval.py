"""The database half of a search: keyword hits, vector hits, and the rows behind them.

Vector hits come from an in-memory float32 matrix of every chunk vector (loaded from the index's
BLOB column) unless the index holds more than ``MATRIX_MAX_ROWS`` vectors or the ``sqlite-vec``
backend is asked for. Measured on this project's machines the matrix beat sqlite-vec's
brute-force KNN at every size (bench/RESULTS.md), and its cost is 4 bytes per dimension and chunk
(150 MB at 100k chunks of 384 dimensions).

The matrix is tagged with the index's *stamp*: the *epoch* (bumped by every full rebuild: chunk
ids of another index mean other chunks) and the *generation* it reflects. For a SQLite file the
epoch is bumped under the swap lock and the generation counts this process's syncs; an index
shared by several gateways (PostgreSQL) says its stamp itself, read with each search, so a sync
on another gateway is seen by the next search here. Chunk ids are never reused, so a matrix one
sync behind is still correct, only missing the newest chunks (and holding some deleted ones,
which find no row and are dropped): small matrices are reloaded by the next search, large ones in
the background while searches use the previous one (the newest chunks are found by keyword
meanwhile).

Every method here runs in a worker thread under the index file's swap lock, so a search never
reads a connection that a rebuild is closing.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from homarus.memory.backend import Index, IndexStore, Stamp
from homarus.memory.search import Candidate, bm25_score, query_terms
from homarus.memory.sqlite import DB_ERRORS
from homarus.memory.store import encode_vector
from homarus.tasks import cancel_and_wait

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["MATRIX_MAX_ROWS", "Retriever", "VectorBackend"]

log = logging.getLogger(__name__)

#: above this many vectors the in-memory matrix gives way to sqlite-vec
MATRIX_MAX_ROWS = 1_000_000
#: above this many rows the matrix is reloaded after a sync in the background (1-2 s at 100k)
BACKGROUND_RELOAD_ROWS = 20_000

VectorBackend = Literal["auto", "matrix", "sqlite-vec"]

_VECTOR_ERRORS: tuple[type[Exception], ...] = (*DB_ERRORS, ValueError)


@dataclass(slots=True)
class _Matrix:
    epoch: int
    generation: int
    seqs: npt.NDArray[np.int64]
    rows: npt.NDArray[np.float32]


def _log_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("memory: reloading the vector matrix failed: %s", task.exception())


class Retriever:
    def __init__(self, file: Index, *, model: str, backend: VectorBackend = "auto") -> None:
        self.file = file
        self.model = model
        self.backend = backend
        #: syncs of this process (the stamp of an index nobody else writes)
        self._generation = 0
        #: the stamp the last search saw
        self._seen: Stamp = (0, 0)
        self._matrix: _Matrix | None = None
        self._refresh: asyncio.Future[None] | None = None
        self._closed = False

    def synced(self) -> None:
        """A sync changed the index: newer vectors exist."""
        self._generation += 1
        if not self.file.shared:
            self._seen = (self.file.epoch, self._generation)
        self.refresh_soon()

    def rebuilt(self) -> None:
        """A new index replaced the old one (its epoch changed): drop the old matrix."""
        self._matrix = None

    @property
    def behind(self) -> bool:
        m = self._matrix
        return m is not None and (m.epoch, m.generation) != self._seen

    async def aclose(self) -> None:
        self._closed = True
        await cancel_and_wait(self._refresh)  # closing: a failed reload does not matter any more
        self._matrix = None

    def _stamp(self, reader: IndexStore) -> Stamp:
        shared = reader.stamp() if self.file.shared else None
        return shared if shared is not None else (self.file.epoch, self._generation)

    def gather(
        self, q: str, vector: list[float] | None, mode: str, cand: int, warnings: list[str]
    ) -> tuple[list[Candidate], str | None]:
        """The DB half of a search (in a worker thread, never during an index swap).

        Returns the candidates and, when the vector side failed, why (the search is then keyword-only).
        """
        with self.file.swap_lock:
            reader = self.file.reader
            if reader is None:
                warnings.append("index is being reopened")
                return [], None
            stamp = self._seen = self._stamp(reader) if vector is not None else self._seen
            vec_hits: list[tuple[int, float]] = []
            vector_error: str | None = None
            # a loaded matrix needs no DB connection: scan it on another thread while the keyword search runs
            ready = self._ready_matrix(stamp) if vector is not None else None
            scan = _scanner().submit(_matrix_hits, ready, vector, cand) if ready is not None and vector else None
            if vector is not None and scan is None:
                try:
                    vec_hits = self._vector_hits(reader, vector, cand, stamp)
                except _VECTOR_ERRORS as exc:
                    vector_error = f"vector search failed: {exc}"
            text_hits: list[tuple[int, float]] = []
            terms = query_terms(q)
            if terms and (mode != "vector" or vector_error):
                try:
                    text_hits = reader.fts(terms, cand)
                except DB_ERRORS as exc:
                    warnings.append(f"keyword search failed: {exc}")
            if scan is not None:
                try:
                    vec_hits = scan.result()
                except _VECTOR_ERRORS as exc:
                    vector_error = f"vector search failed: {exc}"
            rows = reader.chunk_rows(list({s for s, _ in text_hits} | {s for s, _ in vec_hits}))
        by_seq: dict[int, Candidate] = {}
        for seq, rank in text_hits:
            if seq in rows:
                r = rows[seq]
                by_seq[seq] = Candidate(
                    seq, r.path, r.source, r.start_line, r.end_line, r.text, None, bm25_score(rank),
                    extras={"bm25": max(0.0, -rank)},
                )  # fmt: skip
        for seq, score in vec_hits:
            if seq not in rows:  # deleted since the matrix was loaded
                continue
            if seq not in by_seq:
                r = rows[seq]
                by_seq[seq] = Candidate(seq, r.path, r.source, r.start_line, r.end_line, r.text)
            by_seq[seq].vector_score = score
        return list(by_seq.values()), vector_error

    def _ready_matrix(self, stamp: Stamp) -> _Matrix | None:
        """The loaded matrix when a search may use it as is (else the sequential path decides)."""
        m = self._matrix
        if self.backend == "sqlite-vec" or m is None or m.epoch != stamp[0] or len(m.seqs) == 0:
            return None
        if len(m.seqs) > MATRIX_MAX_ROWS:
            return None
        if m.generation != stamp[1] and len(m.seqs) < BACKGROUND_RELOAD_ROWS:
            return None  # small and stale: the sequential path reloads it first
        return m

    def _vector_hits(self, reader: IndexStore, vector: list[float], k: int, stamp: Stamp) -> list[tuple[int, float]]:
        use_vec = self.backend == "sqlite-vec" and reader.vec_available
        if self.backend == "auto" and reader.vec_available:
            _, _, n_vectors = reader.counts() if self._matrix is None else (0, 0, len(self._matrix.seqs))
            use_vec = n_vectors > MATRIX_MAX_ROWS
        if use_vec:
            return reader.vec_knn(encode_vector(vector), k)
        m = self._matrix
        stale = m is not None and m.generation != stamp[1] and len(m.seqs) < BACKGROUND_RELOAD_ROWS
        if m is None or m.epoch != stamp[0] or stale:
            seqs, rows = reader.vector_matrix(self.model)
            m = self._matrix = _Matrix(stamp[0], stamp[1], seqs, rows)
        # a large matrix one sync behind is used while it reloads: new chunks are found by keyword meanwhile
        return _matrix_hits(m, vector, k)

    def refresh_soon(self) -> None:
        """Reload the vector matrix in the background after a sync changed the index."""
        m = self._matrix
        if self.backend == "sqlite-vec" or self._closed or m is None:
            return  # nothing loaded yet: the first search loads it
        if len(m.seqs) < BACKGROUND_RELOAD_ROWS:
            return  # cheap enough to reload in the next search itself
        if self._refresh is not None and not self._refresh.done():
            return
        self._refresh = asyncio.ensure_future(asyncio.to_thread(self._load_matrix, self._seen))
        self._refresh.add_done_callback(_log_failure)

    def _load_matrix(self, seen: Stamp) -> None:
        shared, (seqs, rows) = self.file.load_matrix(self.model)
        stamp = shared if shared is not None else seen
        current = self._matrix
        # a local index swapped meanwhile makes what was read meaningless; a shared one says what it read
        valid = shared is not None or stamp[0] == self.file.epoch
        if valid and (current is None or (current.epoch, current.generation) < stamp):
            self._matrix = _Matrix(stamp[0], stamp[1], seqs, rows)


_pool: ThreadPoolExecutor | None = None


def _scanner() -> ThreadPoolExecutor:
    """One shared thread for matrix scans (numpy releases the GIL while it multiplies)."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-scan")
    return _pool


def _matrix_hits(m: _Matrix, vector: list[float], k: int) -> list[tuple[int, float]]:
    import numpy as np

    if len(m.seqs) == 0:
        return []
    q = np.asarray(vector, dtype=np.float32)
    if m.rows.shape[1] != q.shape[0]:
        raise ValueError(f"query vector has {q.shape[0]} dimensions, the index has {m.rows.shape[1]}")
    scores = m.rows @ q
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(m.seqs[i]), float(scores[i])) for i in top]
