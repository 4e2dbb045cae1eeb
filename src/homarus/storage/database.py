"""A PostgreSQL database: one connection pool per gateway (psycopg 3 and psycopg_pool).

Connections are in autocommit mode: work that must be atomic opens ``conn.transaction()``, and a
session-level advisory lock (the schema migration's) stays held across statements. Errors are
told by where the database is (``host:port/database``), never by its URL: the URL may carry the
password, and the message ends up in logs and on the operator's terminal.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from homarus.errors import Unavailable

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["Database", "StorageUnavailable", "scrub", "where"]


class StorageUnavailable(Unavailable):
    """The database cannot be reached (or refused us); retry when it is back."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


def where(url: str) -> str:
    """``host:port/database`` of a libpq URL: what a message may show of it."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # an unparsable URL is described without quoting it
        return "(an unparsable storage.postgres.url)"
    host = str(parts.get("host") or "localhost")
    return f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or parts.get('user') or ''}"


def scrub(message: str, url: str) -> str:
    """The driver's message without the password, should it ever quote the URL."""
    from psycopg.conninfo import conninfo_to_dict

    with contextlib.suppress(Exception):
        password = conninfo_to_dict(url).get("password")
        if password:
            message = message.replace(str(password), "***")
    return message.replace(url, where(url)).strip()


@dataclass(slots=True)
class Database:
    pool: AsyncConnectionPool[Any]
    #: ``host:port/database``, for messages
    where: str
    url: str

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        timeout_s: float = 5.0,
        statement_timeout_ms: int = 30_000,
    ) -> Database:
        """Connect (once directly, so a refusal says why), then open the pool.

        Raises :class:`StorageUnavailable` naming the server and the driver's reason.
        """
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, round(timeout_s)),
            "options": f"-c statement_timeout={statement_timeout_ms}",
            "application_name": "homarus",
        }
        at = where(url)
        try:
            probe = await psycopg.AsyncConnection.connect(url, **kwargs)
        except psycopg.Error as exc:
            raise StorageUnavailable(f"PostgreSQL at {at} is unavailable: {scrub(str(exc), url)}") from None
        await probe.close()
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url, min_size=min_size, max_size=max_size, kwargs=kwargs, timeout=timeout_s, open=False, name="homarus"
        )
        try:
            await pool.open(wait=True, timeout=timeout_s)
        except Exception as exc:
            await pool.close()
            raise StorageUnavailable(f"PostgreSQL at {at} is unavailable: {scrub(str(exc), url)}") from None
        return cls(pool, at, url)

    @contextlib.asynccontextmanager
    async def connection(self, timeout_s: float | None = None) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection of the pool (waiting at most ``timeout_s``, else the pool's timeout); a lost
        or refused one is :class:`StorageUnavailable`."""
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            async with self.pool.connection(timeout=timeout_s) as conn:
                yield conn
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StorageUnavailable(
                f"PostgreSQL at {self.where} is unavailable: {scrub(str(exc), self.url)}"
            ) from None

    async def close(self) -> None:
        await self.pool.close()
