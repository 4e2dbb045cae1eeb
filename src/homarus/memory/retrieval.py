"""The database half of a search: keyword hits, vector hits, and the rows behind them.

Vector hits come from an in-memory float32 matrix of every chunk vector (loaded from the index's
BLOB column) unless the index holds more than ``MATRIX_MAX_ROWS`` vectors or the ``sqlite-vec``
backend is asked for. Measured on this project's machines the matrix beat sqlite-vec's
brute-force KNN at every size (bench/RESULTS.md), and its cost is 4 bytes per dimension and chunk
(150 MB at 100k chunks of 384 dimensions).

The matrix is tagged with the index file's *epoch* (bumped under the swap lock by every full
rebuild: chunk ids of another file mean other chunks) and the *generation* of the last sync it reflects. Chunk ids are
never reused within a file, so a matrix one sync behind is still correct, only missing the newest
chunks: small matrices are reloaded by the next search, large ones in the background while
searches use the previous one (the newest chunks are found by keyword meanwhile).

Every method here runs in a worker thread under the index file's swap lock, so a search never
reads a connection that a rebuild is closing.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from homarus.memory.indexfile import IndexFile
from homarus.memory.search import Candidate, bm25_score, fts_query
from homarus.memory.sqlite import DB_ERRORS
from homarus.memory.store import MemoryStore, encode_vector
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
    def __init__(self, file: IndexFile, *, model: str, backend: VectorBackend = "auto") -> None:
        self.file = file
        self.model = model
        self.backend = backend
        self._generation = 0
        self._matrix: _Matrix | None = None
        self._refresh: asyncio.Future[None] | None = None
        self._closed = False

    def synced(self) -> None:
        """A sync changed the index: newer vectors exist."""
        self._generation += 1
        self.refresh_soon()

    def rebuilt(self) -> None:
        """A new index file replaced the old one (``file.epoch`` changed): drop the old matrix."""
        self._matrix = None

    @property
    def behind(self) -> bool:
        return self._matrix is not None and self._matrix.generation != self._generation

    async def aclose(self) -> None:
        self._closed = True
        await cancel_and_wait(self._refresh)  # closing: a failed reload does not matter any more
        self._matrix = None

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
            vec_hits: list[tuple[int, float]] = []
            vector_error: str | None = None
            # a loaded matrix needs no DB connection: scan it on another thread while FTS5 runs
            ready = self._ready_matrix() if vector is not None else None
            scan = _scanner().submit(_matrix_hits, ready, vector, cand) if ready is not None and vector else None
            if vector is not None and scan is None:
                try:
                    vec_hits = self._vector_hits(reader, vector, cand)
                except _VECTOR_ERRORS as exc:
                    vector_error = f"vector search failed: {exc}"
            text_hits: list[tuple[int, float]] = []
            expression = fts_query(q)
            if expression is not None and (mode != "vector" or vector_error):
                try:
                    text_hits = reader.fts(expression, cand)
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
            if seq not in rows:
                continue
            if seq not in by_seq:
                r = rows[seq]
                by_seq[seq] = Candidate(seq, r.path, r.source, r.start_line, r.end_line, r.text)
            by_seq[seq].vector_score = score
        return list(by_seq.values()), vector_error

    def _ready_matrix(self) -> _Matrix | None:
        """The loaded matrix when a search may use it as is (else the sequential path decides)."""
        m = self._matrix
        if self.backend == "sqlite-vec" or m is None or m.epoch != self.file.epoch or len(m.seqs) == 0:
            return None
        if len(m.seqs) > MATRIX_MAX_ROWS:
            return None
        if m.generation != self._generation and len(m.seqs) < BACKGROUND_RELOAD_ROWS:
            return None  # small and stale: the sequential path reloads it first
        return m

    def _vector_hits(self, reader: MemoryStore, vector: list[float], k: int) -> list[tuple[int, float]]:
        use_vec = self.backend == "sqlite-vec" and reader.vec_available
        if self.backend == "auto" and reader.vec_available:
            _, _, n_vectors = reader.counts() if self._matrix is None else (0, 0, len(self._matrix.seqs))
            use_vec = n_vectors > MATRIX_MAX_ROWS
        if use_vec:
            return reader.vec_knn(encode_vector(vector), k)
        m = self._matrix
        stale = m is not None and m.generation != self._generation and len(m.seqs) < BACKGROUND_RELOAD_ROWS
        if m is None or m.epoch != self.file.epoch or stale:
            seqs, rows = reader.vector_matrix(self.model)
            m = self._matrix = _Matrix(self.file.epoch, self._generation, seqs, rows)
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
        self._refresh = asyncio.ensure_future(asyncio.to_thread(self._load_matrix, self.file.epoch, self._generation))
        self._refresh.add_done_callback(_log_failure)

    def _load_matrix(self, epoch: int, generation: int) -> None:
        # its own connection: searches keep reading meanwhile
        store = MemoryStore.open(self.file.path, use_vec=False)
        try:
            seqs, rows = store.vector_matrix(self.model)
        finally:
            store.close()
        current = self._matrix
        if epoch == self.file.epoch and (current is None or (current.epoch, current.generation) < (epoch, generation)):
            self._matrix = _Matrix(epoch, generation, seqs, rows)


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
