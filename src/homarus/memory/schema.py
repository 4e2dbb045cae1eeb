"""The memory index's tables, created by named, ordered migrations recorded in ``meta``.

Tables (one SQLite file per agent):

* ``meta(key, value)``: applied migrations (``migration:<name>``) and the index description
  (``index_meta``: provider, model, provider key, sources, chunking, vector dims) that decides
  whether a sync may be differential or must rebuild everything.
* ``files``: one row per indexed Markdown file (sha256, mtime, size) for differential sync.
* ``chunks``: the chunk text, line span, hash and its vector as a little-endian float32 BLOB
  (NULL while it has none: no provider, or the provider failed and a later sync fills it in).
  ``seq`` is an explicit, never reused integer key (AUTOINCREMENT): the FTS and vec0 rowids stay
  stable across VACUUM and a new chunk never meets a leftover row of a deleted one.
* ``embedding_cache``: vectors by (provider, model, provider key, chunk hash), so unchanged text
  is never embedded twice, even across full rebuilds (the cache is copied into the new file).
* ``chunks_fts``: FTS5 over the chunk text, rowid = ``chunks.seq``. Nothing is filtered on its
  UNINDEXED columns: that made OR queries several times slower in the reference measurements.
* ``chunks_vec``: sqlite-vec ``vec0`` (cosine), rowid = ``chunks.seq``, created once the vector
  size is known and only when the extension loads; recreated when the size changes.

Migrations only ever append: a released migration is never edited, a new one is added instead.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

__all__ = ["INDEX_META_KEY", "MIGRATIONS", "ensure_vec_table", "migrate", "read_index_meta", "write_index_meta"]

INDEX_META_KEY = "index_meta"
VEC_DIMS_KEY = "vec_dims"

MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "0001_base",
        (
            """CREATE TABLE IF NOT EXISTS files (
                path TEXT PRIMARY KEY, source TEXT NOT NULL DEFAULT 'memory',
                hash TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL)""",
            """CREATE TABLE IF NOT EXISTS chunks (
                seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL,
                source TEXT NOT NULL DEFAULT 'memory', start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
                hash TEXT NOT NULL, model TEXT NOT NULL, dims INTEGER, text TEXT NOT NULL,
                embedding BLOB, updated_at INTEGER NOT NULL)""",
            "CREATE INDEX IF NOT EXISTS idx_chunks_path ON chunks(path)",
            "CREATE INDEX IF NOT EXISTS idx_chunks_hash ON chunks(hash)",
            # chunks still waiting for a vector (the provider failed): found without a table scan
            "CREATE INDEX IF NOT EXISTS idx_chunks_novec ON chunks(model) WHERE embedding IS NULL",
            """CREATE TABLE IF NOT EXISTS embedding_cache (
                provider TEXT NOT NULL, model TEXT NOT NULL, provider_key TEXT NOT NULL, hash TEXT NOT NULL,
                embedding BLOB NOT NULL, dims INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                PRIMARY KEY (provider, model, provider_key, hash))""",
            "CREATE INDEX IF NOT EXISTS idx_embedding_cache_updated_at ON embedding_cache(updated_at)",
            "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, tokenize = 'unicode61')",
        ),
    ),
)


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply the migrations this file lacks, each in its own transaction; return their names."""
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    applied = {row[0] for row in conn.execute("SELECT key FROM meta WHERE key LIKE 'migration:%'")}
    done: list[str] = []
    for name, statements in MIGRATIONS:
        if f"migration:{name}" in applied:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql in statements:
                conn.execute(sql)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?)", (f"migration:{name}", str(int(time.time() * 1000)))
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        done.append(name)
    return done


def read_index_meta(conn: sqlite3.Connection) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (INDEX_META_KEY,)).fetchone()
    if row is None:
        return None
    try:
        value = json.loads(row[0])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def write_index_meta(conn: sqlite3.Connection, meta: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (INDEX_META_KEY, json.dumps(meta, sort_keys=True)),
    )


def ensure_vec_table(conn: sqlite3.Connection, dims: int) -> bool:
    """Create ``chunks_vec`` for ``dims``-long vectors (dropping one of another size).

    Returns True when it was (re)created: every vector already in ``chunks`` was copied into it.
    """
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (VEC_DIMS_KEY,)).fetchone()
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone() is not None
    if exists and row is not None and int(row[0]) == dims:
        return False
    if exists:
        conn.execute("DROP TABLE chunks_vec")
    conn.execute(f"CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[{int(dims)}] distance_metric=cosine)")
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (VEC_DIMS_KEY, str(int(dims))),
    )
    # vectors already in chunks (e.g. the table was dropped for a size change) are mirrored again
    conn.execute(
        "INSERT INTO chunks_vec(rowid, embedding) SELECT seq, embedding FROM chunks WHERE dims = ?", (int(dims),)
    )
    return True
