"""An agent's memory index in PostgreSQL: the rows of ``store.MemoryStore``, shared by a cluster.

Same contract as the SQLite store (see ``backend.IndexStore``), with these differences:

* Rows carry the agent and a *generation*; ``memory_indexes`` names the generation searches read
  and a *version* every write bumps. A store made for a sync is bound to one generation (the
  current one, or the new one a rebuild fills); a reader follows whichever is current.
* Keyword search is PostgreSQL full-text search over a stored ``tsvector`` of the chunk's words
  cut as the query's are (``search.words``: lower-cased word tokens, like FTS5's unicode61;
  'simple' configuration: no stemming, no stop words), the query terms OR-ed as
  ``plainto_tsquery`` values (the user's text never becomes tsquery syntax), scored like BM25
  (see ``fts``): PostgreSQL's own ``ts_rank`` knows no inverse document frequency, and without it
  a ticket number ranks no higher than the word "ticket".
* Vectors are the same float32 bytes in a ``bytea`` column and are searched in the gateway's
  in-memory matrix, as with SQLite; when the ``pgvector`` extension is installed they are mirrored
  into a ``vector`` column that ``vec_knn`` searches (the counterpart of sqlite-vec).

Every method is blocking (``asyncio.to_thread``). A reader takes a pooled connection per call; a
writer is given the one connection that holds the index's lock (``pg_index``), so a gateway that
lost it cannot write.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.errors import ConfigError
from homarus.memory.backend import Matrix, Stamp
from homarus.memory.search import words
from homarus.memory.store import ChunkRow, FileRow, NewChunk, decode_vector, matrix_of

if TYPE_CHECKING:
    from psycopg import Connection

__all__ = ["Connect", "PgMemoryStore", "import_embedding_cache", "vector_literal"]

Connect = Callable[[], AbstractContextManager["Connection[Any]"]]

_CURRENT = "(SELECT generation FROM memory_indexes WHERE agent = %(agent)s)"
#: the part of a chunk's text whose words are indexed
MAX_INDEXED_CHARS = 256 * 1024
#: document frequencies are counted up to this many chunks (a word this common barely matters)
DF_CAP = 1000
COUNT_TTL_S = 30.0
_BUMP = "UPDATE memory_indexes SET version = version + 1 WHERE agent = %(agent)s"


def _words(text: str) -> str:
    # a chunk is bounded by the chunker; the cut keeps a one-line giant within a tsvector's 1 MB
    return " ".join(words(text[:MAX_INDEXED_CHARS]))


def vector_literal(blob: bytes | None) -> str | None:
    """float32 bytes as pgvector's text form (``[0.1,0.2]``)."""
    if blob is None:
        return None
    return "[" + ",".join(format(x, ".9g") for x in decode_vector(blob)) + "]"


class PgMemoryStore:
    def __init__(self, connect: Connect, agent: str, *, gen: int | None = None, vec: bool = False) -> None:
        self.connect = connect
        self.agent = agent
        #: the generation this store writes (None: a reader, following the current one)
        self.gen = gen
        self._vec = vec
        self._g = "%(gen)s" if gen is not None else _CURRENT
        self._count: tuple[float, int] | None = None
        #: chunks this store wrote (the index's writer analyzes the table after many)
        self.written = 0

    @property
    def vec_available(self) -> bool:
        return self._vec

    def _p(self, **more: Any) -> dict[str, Any]:
        return {"agent": self.agent, "gen": self.gen, **more}

    def _rows(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            return conn.execute(sql, self._p(**params)).fetchall()

    # -- meta -------------------------------------------------------------------------------
    def stamp(self) -> Stamp:
        with self.connect() as conn:
            return self._stamp(conn)

    def _stamp(self, conn: Connection[Any]) -> Stamp:
        row = conn.execute(
            "SELECT generation, version FROM memory_indexes WHERE agent = %(agent)s", self._p()
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def index_meta(self) -> dict[str, Any] | None:
        rows = self._rows(f"SELECT meta FROM memory_generations WHERE agent = %(agent)s AND gen = {self._g}")  # noqa: S608
        value = rows[0][0] if rows else None
        return value if isinstance(value, dict) else None

    def set_index_meta(self, meta: dict[str, Any]) -> None:
        with self.connect() as conn:
            conn.execute(
                "INSERT INTO memory_generations(agent, gen, meta)"  # noqa: S608 - _g is a constant
                f" VALUES (%(agent)s, {self._g}, %(meta)s::jsonb)"
                " ON CONFLICT (agent, gen) DO UPDATE SET meta = excluded.meta",
                self._p(meta=json.dumps(meta, sort_keys=True)),
            )

    # -- files and chunks -------------------------------------------------------------------
    def files(self) -> dict[str, FileRow]:
        rows = self._rows(
            f"SELECT path, source, hash, mtime_ns, size FROM memory_files WHERE agent = %(agent)s AND gen = {self._g}"  # noqa: S608
        )
        return {r[0]: FileRow(r[0], r[1], r[2], int(r[3]), int(r[4])) for r in rows}

    def vectors_by_hash(self, path: str, model: str) -> dict[str, tuple[bytes, int]]:
        rows = self._rows(
            "SELECT hash, embedding, dims FROM memory_chunks WHERE agent = %(agent)s"  # noqa: S608
            f" AND gen = {self._g} AND path = %(path)s AND model = %(model)s AND embedding IS NOT NULL",
            path=path, model=model,
        )  # fmt: skip
        return {r[0]: (bytes(r[1]), int(r[2])) for r in rows}

    def replace_files(self, files: Sequence[tuple[FileRow, Sequence[NewChunk]]], model: str) -> None:
        """Swap in the new chunks of several files, all in one transaction."""
        now = int(time.time() * 1000)
        columns = "agent, gen, id, path, source, start_line, end_line, hash, model, dims, text, embedding,"
        columns += " updated_at, tsv"
        values = f"%(agent)s, {self._g}, %(id)s, %(path)s, %(source)s, %(start)s, %(end)s, %(hash)s, %(model)s,"
        values += " %(dims)s, %(text)s, %(embedding)s, %(now)s, to_tsvector('simple', %(words)s)"
        if self._vec:
            columns += ", embedding_v"
            values += ", %(v)s::vector"
        insert = f"INSERT INTO memory_chunks({columns}) VALUES ({values})"  # noqa: S608 - constants only
        with self.connect() as conn, conn.transaction():
            for file, chunks in files:
                self._delete_paths(conn, [file.path])
                with conn.cursor() as cur:
                    cur.executemany(
                        insert,
                        [
                            self._p(
                                id=c.id, path=file.path, source=file.source, start=c.start_line, end=c.end_line,
                                hash=c.hash, model=model, dims=c.dims, text=c.text.replace("\x00", ""),
                                embedding=c.embedding, now=now, v=vector_literal(c.embedding) if self._vec else None,
                                words=_words(c.text),
                            )
                            for c in chunks
                        ],
                    )  # fmt: skip
                conn.execute(
                    "INSERT INTO memory_files(agent, gen, path, source, hash, mtime_ns, size)"  # noqa: S608
                    f" VALUES (%(agent)s, {self._g}, %(path)s, %(source)s, %(hash)s, %(mtime)s, %(size)s)"
                    " ON CONFLICT (agent, gen, path) DO UPDATE SET source = excluded.source,"
                    " hash = excluded.hash, mtime_ns = excluded.mtime_ns, size = excluded.size",
                    self._p(path=file.path, source=file.source, hash=file.hash, mtime=file.mtime_ns, size=file.size),
                )
            conn.execute(_BUMP, self._p())
        self.written += sum(len(chunks) for _, chunks in files)

    def _delete_paths(self, conn: Connection[Any], paths: list[str]) -> int:
        p = self._p(paths=paths)
        where = f"WHERE agent = %(agent)s AND gen = {self._g} AND path = ANY(%(paths)s)"
        conn.execute(f"DELETE FROM memory_chunks {where}", p)  # noqa: S608 - constants only
        return conn.execute(f"DELETE FROM memory_files {where}", p).rowcount  # noqa: S608

    def touch_file(self, file: FileRow) -> None:
        with self.connect() as conn:
            conn.execute(
                "UPDATE memory_files SET mtime_ns = %(mtime)s, size = %(size)s"  # noqa: S608
                f" WHERE agent = %(agent)s AND gen = {self._g} AND path = %(path)s",
                self._p(mtime=file.mtime_ns, size=file.size, path=file.path),
            )

    def delete_files(self, paths: Iterable[str]) -> int:
        wanted = list(paths)
        if not wanted:
            return 0
        with self.connect() as conn, conn.transaction():
            n = self._delete_paths(conn, wanted)
            conn.execute(_BUMP, self._p())
        return n

    def chunks_missing_vectors(self, model: str, limit: int) -> list[tuple[int, str, str]]:
        rows = self._rows(
            f"SELECT seq, hash, text FROM memory_chunks WHERE agent = %(agent)s AND gen = {self._g}"  # noqa: S608
            " AND model = %(model)s AND embedding IS NULL ORDER BY seq LIMIT %(limit)s",
            model=model, limit=limit,
        )  # fmt: skip
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def set_vectors(self, items: Sequence[tuple[int, bytes, int]]) -> None:
        mirror = ", embedding_v = %(v)s::vector" if self._vec else ""
        with self.connect() as conn, conn.transaction():
            with conn.cursor() as cur:
                cur.executemany(
                    f"UPDATE memory_chunks SET embedding = %(e)s, dims = %(d)s{mirror}"  # noqa: S608
                    " WHERE seq = %(seq)s AND agent = %(agent)s",
                    [self._p(e=blob, d=dims, seq=seq, v=vector_literal(blob) if self._vec else None)
                     for seq, blob, dims in items],
                )  # fmt: skip
            conn.execute(_BUMP, self._p())

    def counts(self) -> tuple[int, int, int]:
        """(files, chunks, chunks with a vector)."""
        rows = self._rows(
            f"SELECT (SELECT count(*) FROM memory_files WHERE agent = %(agent)s AND gen = {self._g}),"  # noqa: S608
            f" count(*), count(embedding) FROM memory_chunks WHERE agent = %(agent)s AND gen = {self._g}"
        )
        return int(rows[0][0]), int(rows[0][1]), int(rows[0][2])

    # -- embedding cache (one per agent, every generation's) ---------------------------------------
    def cache_get(self, key: tuple[str, str, str], hashes: Sequence[str]) -> dict[str, tuple[bytes, int]]:
        if not hashes:
            return {}
        rows = self._rows(
            "SELECT hash, embedding, dims FROM memory_embedding_cache WHERE agent = %(agent)s"
            " AND provider = %(provider)s AND model = %(model)s AND provider_key = %(key)s AND hash = ANY(%(hashes)s)",
            provider=key[0], model=key[1], key=key[2], hashes=list(hashes),
        )  # fmt: skip
        return {r[0]: (bytes(r[1]), int(r[2])) for r in rows}

    def cache_put(self, key: tuple[str, str, str], items: Sequence[tuple[str, bytes, int]]) -> None:
        now = int(time.time() * 1000)
        with self.connect() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memory_embedding_cache(agent, provider, model, provider_key, hash, embedding, dims,"
                " updated_at) VALUES (%(agent)s, %(provider)s, %(model)s, %(key)s, %(hash)s, %(e)s, %(d)s, %(now)s)"
                " ON CONFLICT (agent, provider, model, provider_key, hash) DO UPDATE SET"
                " embedding = excluded.embedding, dims = excluded.dims, updated_at = excluded.updated_at",
                [self._p(provider=key[0], model=key[1], key=key[2], hash=h, e=blob, d=dims, now=now)
                 for h, blob, dims in items],
            )  # fmt: skip

    def cache_prune(self, max_entries: int) -> int:
        with self.connect() as conn:
            cur = conn.execute(
                "DELETE FROM memory_embedding_cache WHERE (agent, provider, model, provider_key, hash) IN"
                " (SELECT agent, provider, model, provider_key, hash FROM memory_embedding_cache"
                "  WHERE agent = %(agent)s ORDER BY updated_at DESC OFFSET %(keep)s)",
                self._p(keep=max(0, max_entries)),
            )
            return cur.rowcount

    # -- search -----------------------------------------------------------------------------
    def fts(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """(seq, -score) best first, negative like FTS5's ranks (lower is better).

        The score is BM25's shape built from what PostgreSQL has: per term, ``ts_rank`` (term
        frequency, saturating, normalised by length) weighted by the term's inverse document
        frequency, summed. Document frequencies are counted first, each up to ``DF_CAP`` matches
        (a bounded count for a common word). Chunks are then *found* by the terms under the cap
        only, when there are such: ranking every chunk holding a word that a quarter of them hold
        unpacks tens of thousands of tsvectors (240 ms at 100,000 chunks), and such a chunk
        without any rarer word of the query would rank below the ones found anyway. Common words
        still count in the score of the chunks found.
        """
        if not terms:
            return []
        names = [f"t{i}" for i in range(len(terms))]
        # every name below is t<i> or a column: the user's words only ever travel as parameters;
        # each tsquery is written out where it is used, so the planner sees it and takes the GIN index
        g = self._g
        query = {n: f"plainto_tsquery('simple', %({n})s)" for n in names}
        # agent and generation as expressions no btree index serves: otherwise the planner walks
        # the (agent, gen, path) index and unpacks every chunk's tsvector to test it (23 µs each)
        mine = f"c.agent || '' = %(agent)s AND c.gen + 0 = {g}"
        counts = ", ".join(
            f"(SELECT count(*) FROM (SELECT 1 FROM memory_chunks c WHERE {mine}"  # noqa: S608
            f" AND c.tsv @@ {query[n]} LIMIT {DF_CAP}) s)"
            for n in names
        )
        params = self._p(limit=limit, **dict(zip(names, terms, strict=True)))
        total = self._chunk_count()  # before taking the connection: a writer's is not re-entrant
        with self.connect() as conn:
            row = conn.execute(f"SELECT {counts}", params).fetchone()
            df = {n: int(v) for n, v in zip(names, row or (), strict=False)}
            present = [n for n in names if df.get(n, 0) > 0]
            if not present:
                return []
            n_chunks = float(max(total, max(df.values())))
            weight = {n: math.log((n_chunks - df[n] + 0.5) / (df[n] + 0.5) + 1) for n in present}
            finding = [n for n in present if df[n] < DF_CAP] or present
            score = " + ".join(f"%(w{n})s * ts_rank(c.tsv, {query[n]}, 1)" for n in present)
            sql = (
                f"SELECT c.seq, {score} AS r FROM memory_chunks c"  # noqa: S608 - names only
                f" WHERE {mine} AND c.tsv @@ ({' || '.join(query[n] for n in finding)})"
                " ORDER BY r DESC, c.seq LIMIT %(limit)s"
            )
            rows = conn.execute(sql, {**params, **{f"w{n}": w for n, w in weight.items()}}).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def _chunk_count(self) -> int:
        """The number of chunks, for IDF (re-counted every ``COUNT_TTL_S``: IDF barely moves)."""
        now = time.monotonic()
        if self._count is None or now - self._count[0] > COUNT_TTL_S:
            rows = self._rows(f"SELECT count(*) FROM memory_chunks WHERE agent = %(agent)s AND gen = {self._g}")  # noqa: S608
            self._count = (now, int(rows[0][0]))
        return max(1, self._count[1])

    def chunk_rows(self, seqs: Sequence[int]) -> dict[int, ChunkRow]:
        if not seqs:
            return {}
        rows = self._rows(
            "SELECT seq, path, source, start_line, end_line, text FROM memory_chunks"
            " WHERE seq = ANY(%(seqs)s) AND agent = %(agent)s",
            seqs=list(seqs),
        )
        return {int(r[0]): ChunkRow(int(r[0]), r[1], r[2], int(r[3]), int(r[4]), r[5]) for r in rows}

    def vector_matrix(self, model: str) -> Matrix:
        with self.connect() as conn:
            return self._matrix(conn, model)

    def stamped_matrix(self, model: str) -> tuple[Stamp, Matrix]:
        """The vectors and the stamp they reflect, read in one snapshot."""
        with self.connect() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            return self._stamp(conn), self._matrix(conn, model)

    def _matrix(self, conn: Connection[Any], model: str) -> Matrix:
        rows = conn.execute(
            "SELECT seq, embedding, dims FROM memory_chunks WHERE agent = %(agent)s"  # noqa: S608
            f" AND gen = {self._g} AND model = %(model)s AND embedding IS NOT NULL",
            self._p(model=model),
        ).fetchall()
        return matrix_of(rows)

    def vec_knn(self, query: bytes, k: int) -> list[tuple[int, float]]:
        """(seq, cosine similarity) by pgvector; empty without it."""
        if not self._vec:
            return []
        import psycopg

        try:
            rows = self._rows(
                "SELECT seq, 1 - (embedding_v <=> %(q)s::vector) FROM memory_chunks"  # noqa: S608
                f" WHERE agent = %(agent)s AND gen = {self._g} AND embedding_v IS NOT NULL"
                " ORDER BY embedding_v <=> %(q)s::vector LIMIT %(k)s",
                q=vector_literal(query), k=k,
            )  # fmt: skip
        except psycopg.DataError as exc:  # vectors of another size: the retriever falls back to keywords
            raise ValueError(str(exc)) from None
        return [(int(r[0]), float(r[1])) for r in rows]


def import_embedding_cache(
    connect: Connect, agent: str, path: Path, *, dry_run: bool = False, batch: int = 500
) -> tuple[int, int]:
    """Copy a SQLite index file's embedding cache into the agent's shared one: (found, added).

    The index itself is not copied: the first sync on PostgreSQL builds it from the memory files,
    and with the cache in place it sends no text to the embedding provider again. Rows already
    there are kept.
    """
    import sqlite3

    if not path.is_file():
        return 0, 0
    src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    found = added = 0
    try:
        cur = src.execute(
            "SELECT provider, model, provider_key, hash, embedding, dims, updated_at FROM embedding_cache"
        )
        while rows := cur.fetchmany(batch):
            found += len(rows)
            if dry_run:
                continue
            with connect() as conn, conn.transaction(), conn.cursor() as pg:
                pg.executemany(
                    "INSERT INTO memory_embedding_cache(agent, provider, model, provider_key, hash, embedding,"
                    " dims, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    [(agent, r[0], r[1], r[2], r[3], bytes(r[4]), int(r[5]), int(r[6])) for r in rows],
                )
                added += max(0, pg.rowcount)
    except sqlite3.Error as exc:
        raise ConfigError(f"the memory index {path} cannot be read: {exc}") from None
    finally:
        src.close()
    return found, added
