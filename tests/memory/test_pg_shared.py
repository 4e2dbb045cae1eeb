"""One agent's memory index shared by several gateways on a real PostgreSQL (memory/pg_index.py).

Each "gateway" is a MemoryManager with its own PgIndex over its own pool, as two processes would
have; the workspace is shared, as the scale-out example's volume is.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from homarus.config.memory import MemorySearchConfig
from homarus.memory.manager import MemoryManager
from homarus.memory.pg_index import LOCK_CLASS, PgIndex
from homarus.memory.pg_store import PgMemoryStore
from homarus.storage.blocking import BlockingDatabase
from homarus.storage.database import StorageUnavailable
from homarus.storage.migrations import migrate_at
from tests.memory.embedders import ConceptEmbedder
from tests.pg_cluster import pg_cluster

Gateway = Callable[..., MemoryManager]


class _Killed(BaseException):
    """The process stopping mid-write (not an Exception: nothing may catch it on the way)."""


def _write(ws: Path) -> None:
    (ws / "MEMORY.md").write_text("# Long-term\nThe gateway runs on host gw-3.\nThe user prefers espresso.\n")
    (ws / "memory" / "2026-01-05.md").write_text(
        "\n\n".join(f"## note {i}\nalpha fact number {i} about the project. " * 6 for i in range(30)) + "\n"
    )


@pytest.fixture
async def url(pg_url: str) -> str:
    await migrate_at(pg_url)
    return pg_url


@pytest.fixture
async def gateway(ws: Path, url: str) -> AsyncIterator[Gateway]:
    made: list[tuple[MemoryManager, BlockingDatabase]] = []

    def factory(provider: ConceptEmbedder | None, config: dict[str, Any] | None = None, **index: Any) -> MemoryManager:
        db = BlockingDatabase(url, max_size=4, timeout_s=5.0)
        cfg = MemorySearchConfig.model_validate(config or {})
        m = MemoryManager(
            agent_id="main", workspace=ws, db_path=Path("unused"), config=cfg, provider=provider,
            index=PgIndex(db, "main", use_vec=False, **index),
        )  # fmt: skip
        made.append((m, db))
        return m

    yield factory
    for m, db in made:
        await m.aclose()
        await asyncio.to_thread(db.close)


def _count(url: str, sql: str, *args: Any) -> int:
    db = BlockingDatabase(url, max_size=1)
    try:
        with db.connection() as conn:
            row = conn.execute(sql, args).fetchone()
            return int(row[0]) if row else 0
    finally:
        db.close()


async def test_one_gateway_indexes_and_the_other_searches_the_same_rows(ws: Path, gateway: Gateway, url: str) -> None:
    _write(ws)
    a_emb, b_emb = ConceptEmbedder(), ConceptEmbedder()
    a, b = gateway(a_emb), gateway(b_emb, {"sync": {"onSearch": False}})
    report = await a.sync()
    assert report.full and report.files_indexed == 2 and report.chunks_embedded == report.chunks_written > 3

    resp = await b.search("what does the user like to drink", min_score=0)
    assert resp.mode == "hybrid" and resp.results[0].path == "MEMORY.md"
    assert b_emb.calls == [(1, "query")]  # b embedded its query and nothing else
    status = await b.status()
    assert (status.files, status.chunks) == (2, report.chunks_written)
    assert status.shared and status.engine.startswith("PostgreSQL ") and "password" not in status.db_path
    assert status.to_dict()["vectorBackend"] == "in-memory matrix (vectors persisted in bytea column)"


async def test_syncs_on_two_gateways_embed_each_text_once(ws: Path, gateway: Gateway, url: str) -> None:
    _write(ws)
    a_emb, b_emb = ConceptEmbedder(delay_s=0.05), ConceptEmbedder(delay_s=0.05)
    a, b = gateway(a_emb), gateway(b_emb)
    ra, rb = await asyncio.gather(a.sync(), b.sync())
    # one wrote everything, the other waited for the lock and then found nothing to do
    assert sorted([ra.files_indexed, rb.files_indexed]) == [0, 2]
    assert a_emb.texts_embedded + b_emb.texts_embedded == max(ra.chunks_written, rb.chunks_written)
    assert _count(url, "SELECT count(*) FROM memory_files") == 2
    assert _count(url, "SELECT count(DISTINCT gen) FROM memory_chunks") == 1


async def test_a_change_indexed_elsewhere_reaches_this_gateways_vectors(ws: Path, gateway: Gateway) -> None:
    _write(ws)
    a = gateway(ConceptEmbedder())
    b = gateway(ConceptEmbedder(), {"sync": {"onSearch": False}, "query": {"hybrid": {"enabled": False}}})
    await a.sync()
    assert (await b.search("espresso")).mode == "vector"  # b's matrix is loaded now
    (ws / "memory" / "travel.md").write_text("Flight to Lisbon booked for March.\n")
    await a.sync()
    # "trip" shares no word with the note: only a reloaded matrix finds it, and b never synced
    resp = await b.search("upcoming trip", min_score=0)
    assert resp.results and resp.results[0].path == "memory/travel.md"
    (ws / "memory" / "travel.md").unlink()
    await a.sync()
    resp = await b.search("upcoming trip", min_score=0)
    assert all(r.path != "memory/travel.md" for r in resp.results)


async def test_a_rebuild_switches_generations_while_the_other_gateway_searches(
    ws: Path, gateway: Gateway, url: str
) -> None:
    _write(ws)
    a = gateway(ConceptEmbedder(model="v1"))
    await a.sync()
    await a.aclose()
    slow = ConceptEmbedder(model="v2", delay_s=0.05)
    a2 = gateway(slow)
    b = gateway(ConceptEmbedder(model="v1"), {"sync": {"onSearch": False}})
    rebuild = asyncio.ensure_future(a2.sync())
    answered = 0
    while not rebuild.done():
        resp = await b.search("espresso", min_score=0)
        assert resp.results and resp.results[0].path == "MEMORY.md"  # the old generation answers meanwhile
        answered += 1
        await asyncio.sleep(0.01)
    report = await rebuild
    assert report.full and answered >= 1
    assert (await b.status()).indexed_with == {"provider": "test", "model": "v2", "vectorDims": 128}
    assert _count(url, "SELECT count(DISTINCT gen) FROM memory_chunks") == 1
    assert _count(url, "SELECT count(*) FROM memory_generations") == 1
    # the first index was a generation of its own too (1: empty, 2: v1, 3: v2)
    assert _count(url, "SELECT generation FROM memory_indexes WHERE agent = 'main'") == 3


async def test_a_rebuild_cut_short_leaves_the_index_and_its_leftovers_are_removed(
    ws: Path, gateway: Gateway, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(ws)
    a = gateway(ConceptEmbedder(model="v1"))
    await a.sync()
    chunks = _count(url, "SELECT count(*) FROM memory_chunks")
    real = PgMemoryStore.replace_files
    writes = 0

    def dying(self: PgMemoryStore, *args: Any, **kwargs: Any) -> None:
        nonlocal writes
        writes += 1
        if writes == 2:  # the first group of the new generation is written, then the process "dies"
            raise _Killed
        real(self, *args, **kwargs)

    monkeypatch.setattr(PgMemoryStore, "replace_files", dying)
    monkeypatch.setattr("homarus.memory.index.FILES_PER_GROUP", 1)
    b = gateway(ConceptEmbedder(model="v2"))
    # the cleanup on failure is stopped too, as a kill -9 would stop it
    monkeypatch.setattr(PgIndex, "_drop_generation", lambda *a: None)
    with pytest.raises(_Killed):
        await b.sync()
    monkeypatch.undo()
    assert _count(url, "SELECT count(DISTINCT gen) FROM memory_chunks") == 2  # the leftover
    c = gateway(ConceptEmbedder(model="v1"), {"sync": {"onSearch": False}})
    assert (await c.search("espresso", min_score=0)).results[0].path == "MEMORY.md"
    assert (await c.status()).chunks == chunks  # the leftover is not read
    await c.sync()  # the next writer removes it first
    assert _count(url, "SELECT count(DISTINCT gen) FROM memory_chunks") == 1
    assert _count(url, "SELECT count(*) FROM memory_chunks") == chunks


async def test_a_writer_waits_for_the_other_and_gives_up_retryably(ws: Path, gateway: Gateway, url: str) -> None:
    _write(ws)
    db = BlockingDatabase(url, max_size=1)
    try:
        with db.connection() as conn:  # another gateway holds the index's lock
            conn.execute("SELECT pg_advisory_lock(%s, hashtext('main'))", (LOCK_CLASS,))
            m = gateway(ConceptEmbedder(), wait_s=0.6)
            with pytest.raises(StorageUnavailable, match="another gateway"):
                await m.sync()
            assert (await m.status()).index == "stale"
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext('main'))", (LOCK_CLASS,))
    finally:
        db.close()
    assert (await m.sync()).files_indexed == 2


async def test_a_writer_that_loses_its_connection_loses_the_lock(ws: Path, gateway: Gateway, url: str) -> None:
    _write(ws)
    slow = ConceptEmbedder(delay_s=0.3)
    a = gateway(slow, **{"wait_s": 30.0})
    b = gateway(ConceptEmbedder(), **{"wait_s": 30.0})
    first = asyncio.ensure_future(a.sync())
    while not slow.calls:
        await asyncio.sleep(0.01)
    # a's database session ends (a network split, a killed gateway): its lock goes with it
    killed = _count(
        url,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s",
        LOCK_CLASS,
    )
    assert killed == 1
    report = await asyncio.wait_for(b.sync(), 20)
    assert report.files_indexed == 2
    with contextlib.suppress(StorageUnavailable):
        await first  # a cannot write on: its connection is gone
    assert _count(url, "SELECT count(*) FROM memory_files") == 2
    assert (await b.search("espresso")).results[0].path == "MEMORY.md"


async def test_agents_do_not_see_each_others_memory(ws: Path, url: str, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "memory").mkdir(parents=True)
    (other / "MEMORY.md").write_text("The other agent likes green tea.\n")
    _write(ws)
    db = BlockingDatabase(url, max_size=4)
    managers = [
        MemoryManager(
            agent_id=agent,
            workspace=path,
            db_path=Path("unused"),
            config=MemorySearchConfig(),
            provider=ConceptEmbedder(),
            index=PgIndex(db, agent, use_vec=False),
        )
        for agent, path in (("main", ws), ("other", other))
    ]
    try:
        for m in managers:
            await m.sync()
        main, second = managers
        assert all(r.path != "MEMORY.md" or "tea" not in r.snippet for r in (await main.search("green tea")).results)
        found = (await second.search("green tea", min_score=0)).results
        assert [r.path for r in found] == ["MEMORY.md"] and "tea" in found[0].snippet
        assert (await second.status()).files == 1
    finally:
        for m in managers:
            await m.aclose()
        await asyncio.to_thread(db.close)


async def test_pgvector_searches_the_vector_column(ws: Path, gateway: Gateway, url: str) -> None:
    has = _count(url, "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")
    if not has:
        pytest.skip("the pgvector extension is not installed here (Debian 12 does not package it)")
    _write(ws)
    db = BlockingDatabase(url, max_size=2)
    m = MemoryManager(
        agent_id="main", workspace=ws, db_path=Path("unused"), config=MemorySearchConfig(),
        provider=ConceptEmbedder(), vector_backend="sqlite-vec", index=PgIndex(db, "main", use_vec=True),
    )  # fmt: skip
    try:
        await m.sync()
        assert (await m.status()).vector_backend.startswith("pgvector")
        resp = await m.search("what does the user like to drink", min_score=0)
        assert resp.mode == "hybrid" and resp.results[0].path == "MEMORY.md"
    finally:
        await m.aclose()
        await asyncio.to_thread(db.close)


async def test_the_database_away_fails_searches_fast_and_retryably_then_they_recover(ws: Path, tmp_path: Path) -> None:
    _write(ws)
    with pg_cluster() as own:  # a server of its own: stopped here
        url = own.create_database("memory_outage")
        await migrate_at(url)
        db = BlockingDatabase(url, max_size=2, timeout_s=2.0)
        m = MemoryManager(
            agent_id="main", workspace=ws, db_path=Path("unused"), config=MemorySearchConfig(),
            provider=ConceptEmbedder(), index=PgIndex(db, "main", use_vec=False),
        )  # fmt: skip
        try:
            await m.sync()
            assert (await m.search("espresso")).results
            own.stop("immediate")
            started = time.monotonic()
            with pytest.raises(StorageUnavailable) as caught:
                await m.search("espresso")
            assert time.monotonic() - started < 10
            assert caught.value.retryable and own.password not in caught.value.message
            (ws / "memory" / "2026-11-29.md").write_text("The cellar holds the backups.\n")
            with pytest.raises(StorageUnavailable):
                await m.sync()
            assert m._index_state()[0] == "stale"
            own.start()
            for _ in range(50):  # the pool reconnects by itself
                try:
                    found = await m.search("espresso")
                    break
                except StorageUnavailable:
                    await asyncio.sleep(0.2)
            else:
                raise AssertionError("searches did not recover")
            assert found.results[0].path == "MEMORY.md"
            await m.sync()  # nothing was lost: the change made meanwhile is indexed now
            assert (await m.search("where are the backups")).results[0].path == "memory/2026-11-29.md"
        finally:
            await m.aclose()
            await asyncio.to_thread(db.close)
