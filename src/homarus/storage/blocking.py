"""The database for blocking callers: a thread-safe psycopg pool for code in worker threads.

The session index and transcripts are read and written by code that runs in worker threads
(``asyncio.to_thread``), as their SQLite and file versions are; a blocking pool lets that code stay
as it is, without hopping back onto the event loop for each statement (which would also deadlock
when the loop itself is the caller). It is opened on first use, so a gateway that never touches
those stores holds no connection for them, and maps the driver's connection errors to the same
retryable :class:`StorageUnavailable` as the asynchronous pool, without quoting the URL.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from homarus.storage.database import StorageUnavailable, scrub, where

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

__all__ = ["LOCK_TIMEOUT_MS", "BlockingDatabase"]

#: the longest a statement waits for a row lock before failing (retryable)
LOCK_TIMEOUT_MS = 10_000


class BlockingDatabase:
    def __init__(
        self, url: str, *, max_size: int = 4, timeout_s: float = 5.0, statement_timeout_ms: int = 30_000
    ) -> None:
        self.url = url
        self.where = where(url)
        self.max_size = max_size
        self.timeout_s = timeout_s
        self.statement_timeout_ms = statement_timeout_ms
        self._pool: ConnectionPool[Any] | None = None
        #: the cluster's heartbeat found the database away: fail at once instead of waiting out the
        #: pool's timeout (some callers are on the event loop); cleared when the heartbeat is back
        self.away = False
        self._lock = threading.Lock()
        self._closed = False

    def _opened(self) -> ConnectionPool[Any]:
        with self._lock:
            if self._closed:
                raise StorageUnavailable(f"PostgreSQL at {self.where}: the gateway is stopping")
            if self._pool is None:
                from psycopg_pool import ConnectionPool

                kwargs: dict[str, Any] = {
                    "autocommit": True,
                    "connect_timeout": max(1, round(self.timeout_s)),
                    # a row lock (a transcript's append) is waited for as long as a file lock was
                    "options": f"-c statement_timeout={self.statement_timeout_ms} -c lock_timeout={LOCK_TIMEOUT_MS}",
                    "application_name": "homarus",
                }
                self._pool = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.max_size,
                    kwargs=kwargs,
                    timeout=self.timeout_s,
                    open=True,
                    name="homarus-blocking",
                )
            return self._pool

    @contextlib.contextmanager
    def connection(self) -> Iterator[Connection[Any]]:
        """A connection of the pool (autocommit: open ``conn.transaction()`` for atomic work); a
        lost or refused one is :class:`StorageUnavailable`."""
        if self.away:
            raise StorageUnavailable(f"PostgreSQL at {self.where} is unavailable (retrying in the background)")
        pool = self._opened()
        with self.errors(), pool.connection() as conn:
            yield conn

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """A lost or refused connection met inside as :class:`StorageUnavailable` (for code that
        holds one connection across calls, as a lock's owner does)."""
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            yield
        except (psycopg.OperationalError, PoolTimeout) as exc:
            reason = scrub(str(exc), self.url)
            raise StorageUnavailable(f"PostgreSQL at {self.where} is unavailable: {reason}") from None

    def close(self) -> None:
        """Close the pool (blocks while its threads stop: call it from a worker thread)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
