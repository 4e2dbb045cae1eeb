"""Which SQLite the memory store talks to, and whether sqlite-vec could be loaded into it.

The interpreter's own ``sqlite3`` module on our machines is built without
``enable_load_extension``, so the store prefers ``pysqlite3`` (``pysqlite3-binary``: the same
DB-API as the stdlib module, bundling a recent SQLite with FTS5). When it is missing the stdlib
module is used and vectors stay in plain BLOB columns searched in process: the store never
depends on the extension being present, it only uses it when it is.

The two modules define distinct exception classes, so callers catch :data:`DB_ERRORS` rather than
``sqlite3.Error``. Connections are typed as the stdlib's ``sqlite3.Connection`` (pysqlite3 ships no
stubs and is API-compatible).
"""

from __future__ import annotations

import importlib
import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import cast

__all__ = ["DB_ERRORS", "Binding", "binding", "connect"]

log = logging.getLogger(__name__)

#: how long a writer waits for another connection's lock before failing
BUSY_TIMEOUT_MS = 5000


@dataclass(frozen=True, slots=True)
class Binding:
    module: ModuleType
    name: str
    sqlite_version: str
    #: the module can load extensions at all (not whether sqlite-vec is installed)
    can_load_extensions: bool


_BINDING: Binding | None = None


def binding() -> Binding:
    """The preferred DB-API module available here (resolved once per process)."""
    global _BINDING
    if _BINDING is None:
        try:
            module = importlib.import_module("pysqlite3.dbapi2")
            name = "pysqlite3"
        except ImportError:
            module, name = sqlite3, "sqlite3"
        can_load = hasattr(module.Connection, "enable_load_extension")
        _BINDING = Binding(module, name, str(module.sqlite_version), can_load)
    return _BINDING


def _error_classes() -> tuple[type[Exception], ...]:
    classes: list[type[Exception]] = [sqlite3.Error]
    try:
        other = importlib.import_module("pysqlite3.dbapi2")
        classes.append(other.Error)
    except ImportError:
        pass
    return tuple(classes)


#: every DB-API error class either binding can raise
DB_ERRORS: tuple[type[Exception], ...] = _error_classes()
_LOAD_ERRORS: tuple[type[Exception], ...] = (*DB_ERRORS, OSError, AttributeError)


def connect(path: Path | str, *, load_vec: bool) -> tuple[sqlite3.Connection, bool]:
    """Open ``path`` (WAL, NORMAL sync, busy timeout) and try to load sqlite-vec when asked.

    Returns the connection and whether ``vec0`` is usable on it.
    """
    b = binding()
    # isolation_level=None: transactions are explicit (BEGIN/COMMIT in the store), never implicit
    conn = cast(sqlite3.Connection, b.module.connect(str(path), check_same_thread=False, isolation_level=None))
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = OFF")
    except BaseException:
        conn.close()
        raise
    vec = _load_vec(conn) if load_vec else False
    return conn, vec


def _load_vec(conn: sqlite3.Connection) -> bool:
    if not binding().can_load_extensions:
        return False
    try:
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError:
        return False
    try:
        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
        conn.execute("SELECT vec_version()").fetchone()
    except _LOAD_ERRORS as exc:
        log.warning("sqlite-vec could not be loaded (%s); vectors are searched in process", exc)
        return False
    return True
