"""Tables written in SQL both engines speak, on a durable SQLite file or on a cluster's PostgreSQL.

Small stores (the channels' inbox and pairing, the paired devices) keep their statements to what
SQLite and PostgreSQL both accept (``?`` parameters, ``ON CONFLICT``, ``RETURNING``) and run them
through :class:`Statements`: :class:`SqliteStatements` on a file of the state dir (one writer lock,
``BEGIN IMMEDIATE``), :class:`PgStatements` on the cluster's blocking pool (``?`` becomes psycopg's
``%s``; a literal ``%`` is escaped for it). Hand-written because the two DB-API drivers differ in
exactly these places and a query builder would hide the SQL the stores' docstrings reason about.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from homarus.fs import open_durable_sqlite

if TYPE_CHECKING:
    from psycopg import Connection

    from homarus.storage.blocking import BlockingDatabase

__all__ = ["PgStatements", "Rows", "SqliteStatements", "Statements", "Tx", "import_tables"]


class Rows(Protocol):
    """A statement's outcome: its rows and how many it changed."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Tx(Protocol):
    def execute(self, sql: str, args: tuple[Any, ...] = (), /) -> Rows: ...
    def executemany(self, sql: str, args: list[tuple[Any, ...]], /) -> object: ...


class Statements(Protocol):
    """A store's tables, wherever they are (blocking: callers in worker threads, or quick enough)."""

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...
    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> int: ...
    def transaction(self) -> AbstractContextManager[Tx]: ...
    def close(self) -> None: ...


class SqliteStatements:
    """A durable SQLite file (``open_durable_sqlite``) with ``schema`` applied; thread-safe."""

    def __init__(self, path: Path, schema: str) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._db = open_durable_sqlite(path)
        self._db.executescript(schema)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        """One statement in its own transaction; the number of rows it changed."""
        with self._lock:
            return self._db.execute(sql, args).rowcount

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Tx]:
        """Several statements, all or none (``BEGIN IMMEDIATE``: no other writer in between)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")


@functools.lru_cache(maxsize=512)
def _pg(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


class _PgTx:
    def __init__(self, conn: Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, args: tuple[Any, ...] = (), /) -> Rows:
        return self.conn.execute(_pg(sql), args)

    def executemany(self, sql: str, args: list[tuple[Any, ...]], /) -> object:
        with self.conn.cursor() as cur:
            cur.executemany(_pg(sql), args)
        return None


class PgStatements:
    """The same statements on the cluster's database; each call takes a pooled connection.

    ``serialize`` (an advisory lock key) makes every transaction take that lock first: one writer
    at a time across the cluster, as ``BEGIN IMMEDIATE`` gives on the file, for stores whose
    transactions check counts before they insert.
    """

    def __init__(self, db: BlockingDatabase, *, serialize: int | None = None) -> None:
        self.db = db
        self.where = f"postgresql://{db.where}"
        self.serialize = serialize

    def close(self) -> None:
        """Nothing to close: the pool belongs to the gateway's database."""

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.db.connection() as conn:
            return conn.execute(_pg(sql), args).fetchall()

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        with self.db.connection() as conn:
            return conn.execute(_pg(sql), args).rowcount

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Tx]:
        with self.db.connection() as conn, conn.transaction():
            if self.serialize is not None:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.serialize,))
            yield _PgTx(conn)


def import_tables(
    db: BlockingDatabase,
    path: Path,
    tables: dict[str, tuple[str, ...]],
    *,
    dry_run: bool = False,
    in_order: bool = True,
) -> dict[str, tuple[int, int]]:
    """Copy ``tables`` (name -> columns) of an embedded SQLite file into the database's tables of
    the same names: table -> (rows found, rows added). A row the database has already (by its
    keys) is kept as it is there, so a second run adds nothing; all of it in one transaction.
    ``in_order``: rows in the order they were written (``rowid``; not for a WITHOUT ROWID table)."""
    import sqlite3

    from homarus.errors import ConfigError

    if not path.exists():
        return {}
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    order = " ORDER BY rowid" if in_order else ""
    try:
        found = {
            table: source.execute(f"SELECT {', '.join(cols)} FROM {table}{order}").fetchall()  # noqa: S608
            for table, cols in tables.items()
        }
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path} cannot be read ({exc})") from None
    finally:
        source.close()
    report = {table: (len(rows), 0) for table, rows in found.items()}
    if dry_run:
        return report
    with db.connection() as conn, conn.transaction():
        for table, rows in found.items():
            cols = tables[table]
            marks = ", ".join(["%s"] * len(cols))
            sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks}) ON CONFLICT DO NOTHING"  # noqa: S608
            added = sum(conn.execute(sql, row).rowcount for row in rows)
            report[table] = (len(rows), added)
    return report
