"""Connecting to PostgreSQL: a refusal says where and why (never the password), a server that goes
away is a retryable error, and the pool recovers by itself when it is back."""

from __future__ import annotations

import asyncio
import socket

import pytest

from homarus.storage.database import Database, StorageUnavailable, where
from tests.pg_cluster import PgCluster, pg_cluster


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_url_is_described_without_its_credentials() -> None:
    assert where("postgresql://me:s3cret@db.example:6543/assistant?sslmode=require") == "db.example:6543/assistant"
    assert where("postgresql://me:s3cret@db.example/assistant") == "db.example:5432/assistant"
    assert "s3cret" not in where("postgresql://me:s3cret@[::1]:bad/x")


async def test_an_unreachable_server_says_where_and_why(pg: PgCluster) -> None:
    url = f"postgresql://homarus:hunter2-secret@127.0.0.1:{_closed_port()}/assistant"
    with pytest.raises(StorageUnavailable) as caught:
        await Database.open(url, timeout_s=2)
    message = caught.value.message
    assert message.startswith("PostgreSQL at 127.0.0.1:") and "/assistant is unavailable" in message
    assert "refused" in message.lower() and "hunter2" not in message
    assert caught.value.retryable


async def test_a_wrong_password_is_refused_without_showing_it(pg: PgCluster) -> None:
    url = pg.url().replace(pg.password, "not-the-password-123")
    with pytest.raises(StorageUnavailable) as caught:
        await Database.open(url, timeout_s=5)
    assert "password authentication failed" in caught.value.message
    assert "not-the-password-123" not in caught.value.message and pg.password not in caught.value.message


async def test_a_server_that_goes_away_is_retryable_and_the_pool_recovers() -> None:
    with pg_cluster() as own:  # its own server: this test stops it
        db = await Database.open(own.url(), min_size=2, max_size=2, timeout_s=2)
        try:
            async with db.connection() as conn:
                assert (await (await conn.execute("SELECT 1")).fetchone()) == (1,)
            own.stop("immediate")
            with pytest.raises(StorageUnavailable) as caught:
                async with db.connection() as conn:
                    await conn.execute("SELECT 1")
            assert caught.value.retryable and own.password not in caught.value.message
            own.start()
            for _ in range(50):  # the pool drops the broken connections and makes new ones
                try:
                    async with db.connection() as conn:
                        assert (await (await conn.execute("SELECT 2")).fetchone()) == (2,)
                    break
                except StorageUnavailable:
                    await asyncio.sleep(0.2)
            else:
                raise AssertionError("the pool did not recover after the server came back")
        finally:
            await db.close()
