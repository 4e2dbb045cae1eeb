"""The schema's migrations on a real PostgreSQL: once, in order, by one gateway at a time, each
whole or not at all, and never under a newer schema."""

from __future__ import annotations

import asyncio

import pytest

from homarus.storage.database import Database
from homarus.storage.migrations import Migration, SchemaTooNew, migrate, migrations


async def _tables(db: Database) -> set[str]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {r[0] for r in await cur.fetchall()}


async def _versions(db: Database) -> list[int]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT version FROM homarus_schema ORDER BY version")
        return [r[0] for r in await cur.fetchall()]


def test_the_shipped_migrations_are_numbered_without_a_gap() -> None:
    shipped = migrations()
    assert [m.version for m in shipped] == list(range(1, len(shipped) + 1))
    assert shipped[0].name == "members" and "CREATE TABLE gateway_members" in shipped[0].sql


async def test_a_fresh_database_is_migrated_once(pg_url: str) -> None:
    db = await Database.open(pg_url)
    try:
        latest = migrations()[-1].version
        assert await migrate(db) == (latest, list(range(1, latest + 1)))
        assert {"homarus_schema", "gateway_members"} <= await _tables(db)
        assert await migrate(db) == (latest, [])
        assert await _versions(db) == list(range(1, latest + 1))
    finally:
        await db.close()


async def test_gateways_starting_together_migrate_once(pg_url: str) -> None:
    dbs = [await Database.open(pg_url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(db) for db in dbs))
        applied = [versions for _, versions in results if versions]
        assert len(applied) == 1  # one migrated, the others waited on the lock and found it done
        assert await _versions(dbs[0]) == applied[0]
    finally:
        for db in dbs:
            await db.close()


async def test_a_failing_migration_leaves_nothing_half_done(pg_url: str) -> None:
    import psycopg

    db = await Database.open(pg_url)
    try:
        shipped = migrations()
        broken = Migration(len(shipped) + 1, "broken", "CREATE TABLE half (x int); SELECT no_such_function();")
        with pytest.raises(psycopg.errors.UndefinedFunction):
            await migrate(db, [*shipped, broken])
        assert "half" not in await _tables(db)
        assert await _versions(db) == [m.version for m in shipped]
        # the lock was let go: the next gateway migrates
        assert (await migrate(db))[1] == []
    finally:
        await db.close()


async def test_a_schema_newer_than_this_code_stops_the_start(pg_url: str) -> None:
    db = await Database.open(pg_url)
    try:
        await migrate(db)
        async with db.connection() as conn:
            await conn.execute("INSERT INTO homarus_schema (version, name) VALUES (99, 'future')")
        with pytest.raises(SchemaTooNew, match=r"schema version 99, newer than this Homarus knows"):
            await migrate(db)
    finally:
        await db.close()
