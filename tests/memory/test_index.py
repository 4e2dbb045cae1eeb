from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from homarus.memory.schema import MIGRATIONS
from homarus.memory.sources import list_memory_files
from homarus.memory.store import MemoryStore
from tests.memory.conftest import ManagerFactory
from tests.memory.embedders import ConceptEmbedder


def _paragraphs(tag: str, n: int) -> str:
    # ~10 chunks of 1600 chars for n=40
    return (
        "\n\n".join(f"## {tag} note {i}\n" + f"{tag} fact number {i} about the project. " * 8 for i in range(n)) + "\n"
    )


def _write(ws: Path) -> None:
    (ws / "MEMORY.md").write_text("# Long-term\nThe gateway runs on host gw-3.\nThe user prefers espresso.\n")
    (ws / "memory" / "2026-01-05.md").write_text(_paragraphs("alpha", 40))
    (ws / "memory" / "2026-01-06.md").write_text(_paragraphs("beta", 5))


def _db_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.both_backends
async def test_differential_sync_skips_unchanged_and_reembeds_only_changed_chunks(
    ws: Path, make_manager: ManagerFactory
) -> None:
    _write(ws)
    emb = ConceptEmbedder()
    m = make_manager(emb)
    first = await m.sync()
    assert first.full and first.files_indexed == 3 and first.files_skipped == 0
    total_chunks = first.chunks_written
    assert first.chunks_embedded == total_chunks > 5

    again = await m.sync()
    assert not again.full
    assert (again.files_indexed, again.files_skipped, again.chunks_embedded) == (0, 3, 0)

    # append a paragraph to the big file: earlier chunks keep their text and their vectors
    big = ws / "memory" / "2026-01-05.md"
    big.write_text(big.read_text() + "\n## appendix\nA brand new closing remark about espresso.\n")
    changed = await m.sync()
    assert (changed.files_indexed, changed.files_skipped) == (1, 2)
    assert 1 <= changed.chunks_embedded <= 2
    assert changed.chunks_reused >= 8
    status = await m.status()
    assert status.chunks == status.chunks_with_vectors
    assert status.index == "fresh"


@pytest.mark.both_backends
async def test_same_content_new_mtime_is_not_reembedded(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    emb = ConceptEmbedder()
    m = make_manager(emb)
    await m.sync()
    f = ws / "MEMORY.md"
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    before = emb.texts_embedded
    r = await m.sync()
    assert r.files_skipped == 3 and r.files_indexed == 0
    assert emb.texts_embedded == before


@pytest.mark.both_backends
async def test_renamed_file_is_served_from_the_embedding_cache(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    emb = ConceptEmbedder()
    m = make_manager(emb)
    await m.sync()
    src = ws / "memory" / "2026-01-06.md"
    found = (await m.search("beta fact", max_results=50, min_score=0)).results
    n_chunks = len([c for c in found if c.path == "memory/2026-01-06.md"])
    src.rename(ws / "memory" / "2026-02-01.md")
    before = emb.texts_embedded
    r = await m.sync()
    assert r.files_removed == 1 and r.files_indexed == 1
    assert r.chunks_embedded == 0 and r.cache_hits >= n_chunks > 0
    assert emb.texts_embedded == before
    paths = {x.path for x in (await m.search("beta fact", max_results=50, min_score=0)).results}
    assert "memory/2026-02-01.md" in paths and "memory/2026-01-06.md" not in paths


@pytest.mark.both_backends
async def test_deleted_file_rows_are_removed(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()
    before = await m.status()
    (ws / "memory" / "2026-01-05.md").unlink()
    r = await m.sync()
    assert r.files_removed == 1
    after = await m.status()
    assert after.files == before.files - 1 and after.chunks < before.chunks
    resp = await m.search("alpha fact number", min_score=0)
    assert all(x.path != "memory/2026-01-05.md" for x in resp.results)


async def test_model_change_rebuilds_atomically_into_a_new_file(
    ws: Path, make_manager: ManagerFactory, tmp_path: Path
) -> None:
    _write(ws)
    m1 = make_manager(ConceptEmbedder(model="v1"))
    await m1.sync()
    await m1.aclose()
    m2 = make_manager(ConceptEmbedder(model="v2"))
    r = await m2.sync()
    assert r.full
    status = await m2.status()
    assert status.indexed_with == {"provider": "test", "model": "v2", "vectorDims": 128}
    leftovers = [n for n in _db_files(tmp_path / "state" / "memory") if ".tmp-" in n or ".backup-" in n]
    assert leftovers == []


async def test_failed_full_reindex_leaves_the_old_index_intact(
    ws: Path, make_manager: ManagerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(ws)
    m1 = make_manager(ConceptEmbedder(model="v1"))
    await m1.sync()
    old = await m1.search("espresso", min_score=0)
    assert old.results
    await m1.aclose()

    real = MemoryStore.replace_files

    def failing(self: MemoryStore, *args: object, **kwargs: object) -> None:
        if ".tmp-" in self.path.name:  # the rebuild's first write: the disk is full
            raise OSError(28, "No space left on device")
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryStore, "replace_files", failing)
    m2 = make_manager(ConceptEmbedder(model="v2"))
    with pytest.raises(OSError, match="No space"):
        await m2.sync()
    monkeypatch.undo()
    directory = tmp_path / "state" / "memory"
    assert [n for n in _db_files(directory) if ".tmp-" in n] == []
    status = await m2.status()
    assert status.indexed_with is not None and status.indexed_with["model"] == "v1"
    assert status.files == 3
    assert status.index == "stale" and status.index_reason and "reindex" in status.index_reason
    # the old rows still answer keyword searches
    assert (await m2.search("espresso", min_score=0)).results
    # and the next sync completes the rebuild
    r = await m2.sync()
    assert r.full and (await m2.status()).index == "fresh"


@pytest.mark.both_backends
async def test_concurrent_syncs_share_one_run(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    emb = ConceptEmbedder(delay_s=0.05)
    m = make_manager(emb)
    reports = await asyncio.gather(m.sync(), m.sync(), m.sync())
    assert reports[0] is reports[1] is reports[2]
    first_calls = len(emb.calls)
    # a forced sync waits for the running one, then rebuilds
    a, b = await asyncio.gather(m.sync(), m.sync(force=True))
    assert not a.full and b.full and a is not b
    assert len(emb.calls) == first_calls  # the rebuild was served from the cache


async def test_corrupt_index_file_is_moved_aside_and_rebuilt(
    ws: Path, make_manager: ManagerFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _write(ws)
    db = tmp_path / "state" / "memory" / "main.sqlite"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 500)
    m = make_manager(ConceptEmbedder())
    with caplog.at_level(logging.ERROR, logger="homarus.memory.indexfile"):
        r = await m.sync()
    assert r.files_indexed == 3
    assert any("unreadable" in rec.getMessage() for rec in caplog.records)
    assert any(".corrupt-" in n for n in _db_files(db.parent))
    resp = await m.search("espresso")
    assert resp.results
    status = await m.status()
    assert status.recovered is None  # cleared by the successful rebuild
    assert status.index == "fresh"


@pytest.mark.both_backends
async def test_embedding_failure_indexes_without_vectors_then_backfills(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    emb = ConceptEmbedder(fail=True)
    m = make_manager(emb)
    r = await m.sync()
    assert r.embedding_error and "503" in r.embedding_error
    status = await m.status()
    assert status.chunks > 0 and status.chunks_with_vectors == 0
    assert status.index == "stale"
    resp = await m.search("espresso")
    assert resp.mode == "fts-only" and resp.results and resp.reason and "503" in resp.reason

    emb.fail = False
    r2 = await m.sync()
    assert r2.vectors_backfilled == status.chunks and r2.embedding_error is None
    assert (await m.status()).index == "fresh"
    assert (await m.search("espresso")).mode == "hybrid"


@pytest.mark.both_backends
async def test_wrong_dimensions_are_an_embedding_error(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder(wrong_dims=True))
    r = await m.sync()
    assert r.embedding_error and "dimensional" in r.embedding_error
    assert (await m.status()).chunks_with_vectors == 0


@pytest.mark.both_backends
async def test_no_provider_still_indexes_for_keywords(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(None)
    r = await m.sync()
    assert r.files_indexed == 3 and r.chunks_embedded == 0
    resp = await m.search("espresso")
    assert resp.mode == "fts-only" and resp.provider is None
    assert resp.reason == "no embedding provider configured"
    assert resp.results[0].path == "MEMORY.md"


@pytest.mark.both_backends
async def test_binary_huge_and_symlinked_files_are_left_out(
    ws: Path, make_manager: ManagerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(ws)
    (ws / "memory" / "blob.md").write_bytes(b"\x00\x01binary\x00" * 100)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("the launch code is 0000")
    (ws / "memory" / "link.md").symlink_to(outside / "secret.md")
    (ws / "memory" / "linkdir").symlink_to(outside)
    monkeypatch.setattr("homarus.memory.index.MAX_FILE_BYTES", 1000)
    m = make_manager(ConceptEmbedder())
    r = await m.sync()
    reasons = dict(r.ignored)
    assert reasons["memory/blob.md"] == "binary content"
    assert "larger than" in reasons["memory/2026-01-05.md"]
    listed = {f.path for f in list_memory_files(ws)}
    assert "memory/link.md" not in listed and not any(p.startswith("memory/linkdir") for p in listed)
    found = (await m.search("launch code", max_results=50, min_score=0)).results
    assert not any("launch" in x.snippet or "link" in x.path for x in found)


async def test_extra_paths_directories_and_files(ws: Path, make_manager: ManagerFactory, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "deep").mkdir(parents=True)
    (notes / "deep" / "a.md").write_text("Kubernetes cluster named orca-7\n")
    (notes / "skip.txt").write_text("not markdown")
    single = tmp_path / "single.md"
    single.write_text("Quarterly budget is 40k\n")
    m = make_manager(ConceptEmbedder(), {"extraPaths": [str(notes), str(single), str(notes)]})
    r = await m.sync()
    assert r.files_total == 2
    resp = await m.search("orca-7")
    assert resp.results[0].path == (notes / "deep" / "a.md").as_posix()


async def test_migrations_are_named_ordered_and_applied_once(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    store = MemoryStore.open(path, use_vec=False)
    store.close()
    store = MemoryStore.open(path, use_vec=False)
    store.close()
    conn = sqlite3.connect(path)
    names = [r[0] for r in conn.execute("SELECT key FROM meta WHERE key LIKE 'migration:%' ORDER BY key")]
    conn.close()
    assert names == [f"migration:{n}" for n, _ in MIGRATIONS]
    assert [n for n, _ in MIGRATIONS] == sorted(n for n, _ in MIGRATIONS)


async def test_index_without_sqlite_vec_uses_blob_vectors(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder(), {"store": {"vector": {"enabled": False}}})
    await m.sync()
    status = await m.status()
    assert "BLOB" in status.vector_backend
    resp = await m.search("which computer serves the proxy")
    assert resp.mode == "hybrid" and resp.results[0].path == "MEMORY.md"


@pytest.mark.both_backends
async def test_sync_of_known_paths_looks_only_at_them(ws: Path, make_manager: ManagerFactory, tmp_path: Path) -> None:
    _write(ws)
    sub = ws / "memory" / "projects"
    sub.mkdir()
    (sub / "a.md").write_text("Project alpha.\n")
    (sub / "b.md").write_text("Project beta.\n")
    (ws / "AGENTS.md").write_text("not memory\n")
    m = make_manager(ConceptEmbedder())
    first = await m.sync(paths=[str(ws / "MEMORY.md")])  # nothing scanned yet: a full scan instead
    assert first.files_indexed == 5

    (ws / "MEMORY.md").write_text("# Long-term\nThe user now prefers tea.\n")
    (ws / "memory" / "2026-01-06.md").write_text("changed but not reported\n")
    r = await m.sync(paths=[str(ws / "MEMORY.md"), str(ws / "AGENTS.md"), str(tmp_path / "elsewhere.md")])
    assert (r.files_indexed, r.files_removed) == (1, 0)
    assert (await m.search("tea")).results[0].path == "MEMORY.md"

    for f in sub.iterdir():
        f.unlink()
    sub.rmdir()
    r = await m.sync(paths=[str(sub)])
    assert r.files_removed == 2
    (ws / "memory" / "new").mkdir()
    (ws / "memory" / "new" / "c.md").write_text("Project gamma.\n")
    (ws / "memory" / "link.md").symlink_to(ws / "AGENTS.md")
    r = await m.sync(paths=[str(ws / "memory" / "new"), str(ws / "memory" / "link.md")])
    assert r.files_indexed == 1
    full = await m.sync()  # a full scan still catches the unreported edit
    assert full.files_indexed == 1 and (await m.status()).files == 4


@pytest.mark.both_backends
async def test_a_change_of_unknown_place_forces_a_full_scan(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()
    (ws / "MEMORY.md").write_text("edited by a tool\n")
    (ws / "memory" / "2026-01-06.md").write_text("edited and reported\n")
    m.mark_dirty()  # e.g. a tool wrote somewhere under memory/
    r = await m.sync(paths=[str(ws / "memory" / "2026-01-06.md")])
    assert r.files_indexed == 2


async def test_the_stdlib_sqlite3_binding_works_too(
    ws: Path, make_manager: ManagerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import homarus.memory.sqlite as binding_module

    stdlib = binding_module.Binding(sqlite3, "sqlite3", sqlite3.sqlite_version, False)
    monkeypatch.setattr(binding_module, "_BINDING", stdlib)
    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()
    status = await m.status()
    assert status.engine.startswith("sqlite3 ") and "BLOB" in status.vector_backend
    resp = await m.search("which computer serves the proxy")
    assert resp.mode == "hybrid" and resp.results[0].path == "MEMORY.md"
    assert (await m.search("NEAR(x *")).mode == "hybrid"


async def test_damage_found_during_a_sync_rebuilds_the_index(
    ws: Path, make_manager: ManagerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from homarus.memory.index import Indexer
    from homarus.memory.sqlite import binding

    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()
    real = Indexer.sync
    failed = False

    async def damaged(self: Indexer, *args: object, **kwargs: object) -> None:
        nonlocal failed
        if not failed:
            failed = True
            raise binding().module.DatabaseError("database disk image is malformed")
        await real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Indexer, "sync", damaged)
    (ws / "MEMORY.md").write_text("rewritten\n")
    r = await m.sync()
    assert r.full and r.files_indexed == 3
    assert any(".corrupt-" in n for n in _db_files(tmp_path / "state" / "memory"))
    assert (await m.search("rewritten")).results[0].path == "MEMORY.md"


async def test_other_database_errors_are_not_mistaken_for_damage(
    ws: Path, make_manager: ManagerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from homarus.memory.index import Indexer
    from homarus.memory.sqlite import binding

    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()

    async def locked(self: Indexer, *args: object, **kwargs: object) -> None:
        raise binding().module.OperationalError("database is locked")

    monkeypatch.setattr(Indexer, "sync", locked)
    m.mark_dirty()
    with pytest.raises(Exception, match="locked"):
        await m.sync()
    assert not any(".corrupt-" in n for n in _db_files(tmp_path / "state" / "memory"))
    assert (await m.status()).index == "stale"


@pytest.mark.both_backends
async def test_searches_keep_working_during_a_rebuild(
    ws: Path, make_manager: ManagerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(ws)
    emb = ConceptEmbedder()
    m = make_manager(emb)
    await m.sync()
    from homarus.memory.index import Indexer

    real_fill = Indexer.sync

    async def slow_fill(self: Indexer, *args: Any, **kwargs: Any) -> None:
        await asyncio.sleep(0.3)  # the rebuild takes its time: searches run meanwhile
        await real_fill(self, *args, **kwargs)

    monkeypatch.setattr(Indexer, "sync", slow_fill)
    emb.delay_s = 0.02
    rebuild = asyncio.ensure_future(m.sync(force=True))
    seen = []
    while not rebuild.done():
        resp = await m.search("espresso")
        assert not [w for w in resp.warnings if "failed" in w]
        seen.append(resp.index)
        assert resp.results and resp.results[0].path == "MEMORY.md"
    assert (await rebuild).full
    assert "syncing" in seen
    assert (await m.search("espresso")).index == "fresh"
