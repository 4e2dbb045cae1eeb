"""Synchronous access to one memory index file: the only module that writes SQL.

A :class:`MemoryStore` wraps one connection and a lock; the manager keeps a writer (used by sync,
one at a time) and a reader (used by searches, which WAL lets run while a sync writes). Every
method is blocking and meant to be called through ``asyncio.to_thread``.

A file's chunks are replaced in one transaction (old FTS/vec/chunk rows out, new ones in, the
``files`` row updated), so a search never sees half a file. Vectors are stored as little-endian
float32 BLOBs in ``chunks`` and ``embedding_cache`` and mirrored into ``chunks_vec`` when
sqlite-vec is loaded.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.memory.schema import ensure_vec_table, migrate, read_index_meta, write_index_meta
from homarus.memory.search import fts_expression
from homarus.memory.sqlite import connect

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["ChunkRow", "FileRow", "MemoryStore", "NewChunk", "decode_vector", "encode_vector", "matrix_of"]

_BIG_ENDIAN = sys.byteorder == "big"
#: SQLite's default limit on host parameters is 32766; stay well below it
_IN_BATCH = 500


def encode_vector(vector: Sequence[float]) -> bytes:
    a = array("f", vector)
    if _BIG_ENDIAN:
        a.byteswap()
    return a.tobytes()


def decode_vector(blob: bytes) -> list[float]:
    a = array("f")
    a.frombytes(blob)
    if _BIG_ENDIAN:
        a.byteswap()
    return a.tolist()


@dataclass(frozen=True, slots=True)
class FileRow:
    path: str
    source: str
    hash: str
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class NewChunk:
    id: str
    start_line: int
    end_line: int
    hash: str
    text: str
    embedding: bytes | None
    dims: int | None


@dataclass(frozen=True, slots=True)
class ChunkRow:
    seq: int
    path: str
    source: str
    start_line: int
    end_line: int
    text: str


def matrix_of(rows: Sequence[Sequence[Any]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(seq, float32 BLOB, dims) rows as (seqs, N x d matrix); rows of another size are skipped."""
    import numpy as np

    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    # one model per index means one size; should a stray row differ, the majority wins
    dims = Counter(int(r[2]) for r in rows).most_common(1)[0][0]
    kept = [r for r in rows if int(r[2]) == dims]
    seqs = np.fromiter((int(r[0]) for r in kept), dtype=np.int64, count=len(kept))
    matrix = np.frombuffer(b"".join(bytes(r[1]) for r in kept), dtype="<f4").reshape(len(kept), dims)
    return seqs, matrix.astype(np.float32, copy=False)


class MemoryStore:
    def __init__(self, conn: sqlite3.Connection, path: Path, vec_available: bool) -> None:
        self.conn = conn
        self.path = path
        self.vec_available = vec_available
        self.lock = threading.RLock()
        self._vec_dims: int | None = None

    @classmethod
    def open(cls, path: Path, *, use_vec: bool) -> MemoryStore:
        """Open (creating if needed) and migrate; raises a DB error for a corrupt file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        conn, vec = connect(path, load_vec=use_vec)
        try:
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        return cls(conn, path, vec)

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def stamp(self) -> None:
        """Nobody else writes this file: its stamp is counted by the retriever (``backend.Index``)."""
        return None

    # -- meta -------------------------------------------------------------------------------
    def index_meta(self) -> dict[str, Any] | None:
        with self.lock:
            return read_index_meta(self.conn)

    def set_index_meta(self, meta: dict[str, Any]) -> None:
        with self.lock:
            write_index_meta(self.conn, meta)

    # -- files and chunks -------------------------------------------------------------------
    def files(self) -> dict[str, FileRow]:
        with self.lock:
            rows = self.conn.execute("SELECT path, source, hash, mtime_ns, size FROM files").fetchall()
        return {r[0]: FileRow(*r) for r in rows}

    def vectors_by_hash(self, path: str, model: str) -> dict[str, tuple[bytes, int]]:
        """This file's current vectors by chunk hash: unchanged chunks keep theirs on reindex."""
        with self.lock:
            rows = self.conn.execute(
                "SELECT hash, embedding, dims FROM chunks WHERE path = ? AND model = ? AND embedding IS NOT NULL",
                (path, model),
            ).fetchall()
        return {r[0]: (bytes(r[1]), int(r[2])) for r in rows}

    def replace_file(self, file: FileRow, chunks: Sequence[NewChunk], model: str) -> None:
        self.replace_files([(file, chunks)], model)

    def replace_files(self, files: Sequence[tuple[FileRow, Sequence[NewChunk]]], model: str) -> None:
        """Swap in the new chunks of several files, all in one transaction."""
        now = int(time.time() * 1000)
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                pending: list[tuple[int, bytes, int]] = []
                for file, chunks in files:
                    self._replace_one(file, chunks, model, now, pending)
                self._mirror_new_vectors(pending)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def _replace_one(
        self, file: FileRow, chunks: Sequence[NewChunk], model: str, now: int, pending: list[tuple[int, bytes, int]]
    ) -> None:
        self._delete_chunks(file.path)
        for c in chunks:
            cur = self.conn.execute(
                "INSERT INTO chunks(id, path, source, start_line, end_line, hash, model, dims, text,"
                " embedding, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (c.id, file.path, file.source, c.start_line, c.end_line, c.hash, model, c.dims, c.text,
                 c.embedding, now),
            )  # fmt: skip
            seq = cur.lastrowid
            self.conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (seq, c.text))
            if c.embedding is not None and c.dims and seq is not None:
                pending.append((seq, c.embedding, c.dims))
        self.conn.execute(
            "INSERT INTO files(path, source, hash, mtime_ns, size) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT(path) DO UPDATE SET source = excluded.source, hash = excluded.hash,"
            " mtime_ns = excluded.mtime_ns, size = excluded.size",
            (file.path, file.source, file.hash, file.mtime_ns, file.size),
        )

    def touch_file(self, file: FileRow) -> None:
        """Same content, new mtime: remember the stat so the next sync skips the file cheaply."""
        with self.lock:
            self.conn.execute(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (file.mtime_ns, file.size, file.path)
            )

    def delete_files(self, paths: Iterable[str]) -> int:
        n = 0
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for path in paths:
                    self._delete_chunks(path)
                    n += self.conn.execute("DELETE FROM files WHERE path = ?", (path,)).rowcount
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return n

    def _delete_chunks(self, path: str) -> None:
        seqs = [(r[0],) for r in self.conn.execute("SELECT seq FROM chunks WHERE path = ?", (path,))]
        if not seqs:
            return
        # rowid = ? on each: virtual tables do not optimise a rowid IN (subquery) and would scan
        self.conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", seqs)
        if self._has_vec_table():
            self.conn.executemany("DELETE FROM chunks_vec WHERE rowid = ?", seqs)
        self.conn.execute("DELETE FROM chunks WHERE path = ?", (path,))

    def _has_vec_table(self) -> bool:
        if not self.vec_available:
            return False
        if self._vec_dims is not None:
            return True
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone() is not None

    def _mirror_new_vectors(self, items: Sequence[tuple[int, bytes, int]]) -> None:
        """vec0 rows for freshly inserted chunks (new seqs: nothing to replace), in one statement."""
        if not self.vec_available or not items:
            return
        dims = items[0][2]
        if self._vec_dims != dims:
            created = ensure_vec_table(self.conn, dims)
            self._vec_dims = dims
            if created:  # the new table was filled from chunks, these rows included
                return
        self.conn.executemany(
            "INSERT INTO chunks_vec(rowid, embedding) VALUES (?, ?)", [(s, b) for s, b, d in items if d == dims]
        )

    def _mirror_vector(self, seq: int | None, blob: bytes, dims: int, *, fresh: bool = False) -> None:
        if not self.vec_available or seq is None:
            return
        if self._vec_dims != dims:
            created = ensure_vec_table(self.conn, dims)
            self._vec_dims = dims
            if created:  # the new table was filled from chunks, this row included
                return
        if not fresh:  # vec0 has no INSERT OR REPLACE; a fresh seq (AUTOINCREMENT) has no row to replace
            self.conn.execute("DELETE FROM chunks_vec WHERE rowid = ?", (seq,))
        self.conn.execute("INSERT INTO chunks_vec(rowid, embedding) VALUES (?, ?)", (seq, blob))

    def chunks_missing_vectors(self, model: str, limit: int) -> list[tuple[int, str, str]]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT seq, hash, text FROM chunks WHERE model = ? AND embedding IS NULL ORDER BY seq LIMIT ?",
                (model, limit),
            ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def set_vectors(self, items: Sequence[tuple[int, bytes, int]]) -> None:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for seq, blob, dims in items:
                    self.conn.execute("UPDATE chunks SET embedding = ?, dims = ? WHERE seq = ?", (blob, dims, seq))
                    self._mirror_vector(seq, blob, dims)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def counts(self) -> tuple[int, int, int]:
        """(files, chunks, chunks with a vector)."""
        with self.lock:
            files = self.conn.execute("SELECT count(*) FROM files").fetchone()[0]
            chunks, vectors = self.conn.execute("SELECT count(*), count(embedding) FROM chunks").fetchone()
        return int(files), int(chunks), int(vectors)

    # -- embedding cache ----------------------------------------------------------------------
    def cache_get(self, key: tuple[str, str, str], hashes: Sequence[str]) -> dict[str, tuple[bytes, int]]:
        out: dict[str, tuple[bytes, int]] = {}
        with self.lock:
            for i in range(0, len(hashes), _IN_BATCH):
                part = list(hashes[i : i + _IN_BATCH])
                marks = ",".join("?" * len(part))
                rows = self.conn.execute(
                    "SELECT hash, embedding, dims FROM embedding_cache WHERE provider = ? AND model = ?"  # noqa: S608
                    f" AND provider_key = ? AND hash IN ({marks})",  # marks: placeholders only
                    (*key, *part),
                ).fetchall()
                out.update({r[0]: (bytes(r[1]), int(r[2])) for r in rows})
        return out

    def cache_put(self, key: tuple[str, str, str], items: Sequence[tuple[str, bytes, int]]) -> None:
        now = int(time.time() * 1000)
        with self.lock:
            self.conn.executemany(
                "INSERT INTO embedding_cache(provider, model, provider_key, hash, embedding, dims, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(provider, model, provider_key, hash)"
                " DO UPDATE SET embedding = excluded.embedding, dims = excluded.dims, updated_at = excluded.updated_at",
                [(*key, h, blob, dims, now) for h, blob, dims in items],
            )

    def cache_prune(self, max_entries: int) -> int:
        with self.lock:
            (n,) = self.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()
            excess = int(n) - max_entries
            if excess <= 0:
                return 0
            self.conn.execute(
                "DELETE FROM embedding_cache WHERE rowid IN"
                " (SELECT rowid FROM embedding_cache ORDER BY updated_at ASC LIMIT ?)",
                (excess,),
            )
        return excess

    def seed_cache_from(self, other: Path) -> int:
        """Copy another index file's embedding cache (a rebuild must not re-embed known text)."""
        with self.lock:
            before = self.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
            self.conn.execute("ATTACH DATABASE ? AS old", (str(other),))
            try:
                self.conn.execute("INSERT OR IGNORE INTO embedding_cache SELECT * FROM old.embedding_cache")
            finally:
                self.conn.execute("DETACH DATABASE old")
            after = self.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
        return int(after) - int(before)

    # -- search -----------------------------------------------------------------------------
    def fts(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """(seq, bm25 rank) best first for chunks holding any of ``terms`` (from ``query_terms``);
        FTS5 ranks are negative, lower is better."""
        expression = fts_expression(terms)
        if expression is None:
            return []
        with self.lock:
            rows = self.conn.execute(
                "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
                (expression, limit),
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def chunk_rows(self, seqs: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        with self.lock:
            for i in range(0, len(seqs), _IN_BATCH):
                part = list(seqs[i : i + _IN_BATCH])
                marks = ",".join("?" * len(part))
                rows = self.conn.execute(
                    f"SELECT seq, path, source, start_line, end_line, text FROM chunks WHERE seq IN ({marks})",  # noqa: S608
                    part,
                ).fetchall()
                out.update({int(r[0]): ChunkRow(int(r[0]), r[1], r[2], int(r[3]), int(r[4]), r[5]) for r in rows})
        return out

    def vector_matrix(self, model: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Every vector of ``model`` as (seqs, N x d matrix); rows of another size are skipped."""
        with self.lock:
            rows = self.conn.execute(
                "SELECT seq, embedding, dims FROM chunks WHERE model = ? AND embedding IS NOT NULL", (model,)
            ).fetchall()
        return matrix_of(rows)

    def vec_knn(self, query: bytes, k: int) -> list[tuple[int, float]]:
        """(seq, cosine similarity) from ``chunks_vec``; empty when there is no vec table."""
        with self.lock:
            if not self._has_vec_table():
                return []
            rows = self.conn.execute(
                "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (query, k),
            ).fetchall()
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]
