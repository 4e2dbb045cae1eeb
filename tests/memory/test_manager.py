from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from homarus.config.memory import MemorySearchConfig
from homarus.errors import Forbidden, InvalidRequest
from homarus.memory.embedding import EmbeddingSettings
from homarus.memory.manager import MemoryManager, embedding_settings, resolve_db_path
from tests.memory.conftest import ManagerFactory
from tests.memory.embedders import ConceptEmbedder

NASTY_QUERIES = [
    '"',
    '"unbalanced quote',
    "NEAR(gateway host, 2)",
    "gateway*",
    "*",
    "-gateway",
    "text:gateway",
    "{text}: gateway",
    "gateway AND OR NOT host",
    "^gateway",
    "(((",
    "'; DROP TABLE chunks; --",
    "\x00\x01\x02",
    "🦞" * 50,
    "gateway " * 5000,
]


def _write(ws: Path) -> None:
    (ws / "MEMORY.md").write_text("# Facts\nThe gateway runs on host gw-3.\nThe user prefers espresso.\n")
    (ws / "memory" / "2026-01-05.md").write_text("Ticket TCK-4821: login crash on Safari.\nLine two\nLine three\n")
    (ws / "memory" / "people.md").write_text("Ana is the designer.\n")


@pytest.mark.both_backends
@pytest.mark.parametrize("provider", [True, False])
async def test_fts_syntax_in_queries_never_errors(ws: Path, make_manager: ManagerFactory, provider: bool) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder() if provider else None)
    await m.sync()
    for q in NASTY_QUERIES:
        resp = await m.search(q)
        assert not [w for w in resp.warnings if "failed" in w], (q, resp.warnings)
    resp = await m.search("NEAR(gateway host, 2)", min_score=0)
    assert resp.results and resp.results[0].path == "MEMORY.md"


@pytest.mark.both_backends
async def test_empty_query_says_so(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()
    resp = await m.search("   \n\t ")
    assert resp.results == () and resp.reason == "empty query"


@pytest.mark.both_backends
async def test_provider_failure_at_query_time_degrades_to_keywords(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    emb = ConceptEmbedder()
    m = make_manager(emb)
    await m.sync()
    emb.fail = True
    resp = await m.search("TCK-4821")
    assert resp.mode == "fts-only" and resp.provider is None
    assert resp.reason is not None and "503" in resp.reason
    assert resp.results[0].path == "memory/2026-01-05.md"
    assert resp.to_dict()["mode"] == "fts-only"


async def test_slow_provider_times_out_into_keywords(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    emb = ConceptEmbedder()
    m = make_manager(emb, query_timeout_s=0.05)
    await m.sync()
    emb.delay_s = 2.0
    resp = await m.search("espresso")
    assert resp.mode == "fts-only" and resp.reason and "timed out" in resp.reason
    assert resp.results[0].path == "MEMORY.md"


@pytest.mark.both_backends
async def test_results_carry_span_snippet_and_citation(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()
    resp = await m.search("TCK-4821 login crash")
    top = resp.results[0]
    assert (top.path, top.start_line, top.end_line, top.source) == ("memory/2026-01-05.md", 1, 3, "memory")
    assert top.citation == "memory/2026-01-05.md#L1-L3"
    assert top.snippet.startswith("Ticket TCK-4821")
    assert 0 < top.score <= 1
    d = resp.to_dict()
    assert d["results"][0]["startLine"] == 1 and d["index"] == "fresh" and d["provider"] == "test"


@pytest.mark.both_backends
async def test_max_results_and_min_score_are_applied(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()
    assert len((await m.search("the", max_results=1, min_score=0)).results) == 1
    assert (await m.search("espresso", min_score=1.0)).results[0].score == 1.0
    assert len((await m.search("espresso", max_results=10_000, min_score=-3)).results) == 3


@pytest.mark.both_backends
async def test_index_state_is_reported_honestly(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder(), {"sync": {"onSearch": False}})
    resp = await m.search("espresso")
    assert resp.index == "stale" and resp.results == ()
    assert resp.index_reason == "not synced since startup"
    await m.sync()
    assert (await m.search("espresso")).index == "fresh"
    m.mark_dirty()
    assert (await m.search("espresso")).index == "stale"


@pytest.mark.both_backends
async def test_search_on_a_dirty_index_syncs_in_the_background(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder(delay_s=0.05))
    first = await m.search("espresso")  # no older index to answer from: the first search waits for it
    assert first.index == "fresh" and first.results
    (ws / "memory" / "coffee.md").write_text("The grinder is set to 14 for espresso.\n")
    m.mark_dirty()
    second = await m.search("grinder espresso")  # answered from the current index while it syncs
    assert second.index == "syncing"
    await m.sync()  # joins the background run
    assert any(r.path == "memory/coffee.md" for r in (await m.search("grinder")).results)


@pytest.mark.both_backends
async def test_status_reports_the_index(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder())
    before = await m.status()
    assert before.files == 0 and before.index == "stale" and before.last_sync is None
    await m.sync()
    s = await m.status()
    assert (s.files, s.chunks, s.chunks_with_vectors) == (3, 3, 3)
    assert (s.provider, s.model, s.dims) == ("test", "concept-hash-v1", 128)
    assert s.index == "fresh" and not s.dirty and s.last_sync is not None
    d = s.to_dict()
    assert d["lastSync"]["filesIndexed"] == 3 and d["engine"] and d["shared"] is (d["dbPath"].startswith("postgresql:"))


# -- read() confinement ---------------------------------------------------------------------
async def test_read_returns_lines(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(None)
    whole = await m.read("memory/2026-01-05.md")
    assert whole.text == "Ticket TCK-4821: login crash on Safari.\nLine two\nLine three"
    part = await m.read("memory/2026-01-05.md", from_line=2, lines=1)
    assert part.text == "Line two" and part.path == "memory/2026-01-05.md"
    assert (await m.read("MEMORY.md", from_line=99)).text == ""
    assert (await m.read(str(ws / "MEMORY.md"))).path == "MEMORY.md"  # absolute inside the workspace is fine
    missing = await m.read("memory/2030-01-01.md")
    assert missing.missing and missing.text == ""
    with pytest.raises(InvalidRequest):
        await m.read("MEMORY.md", from_line=0)


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "memory/../../outside.md",
        "memory/../AGENTS.md",
        "AGENTS.md",
        "/etc/passwd",
        "memory/notes.txt",
        "memory",
        "",
        "  ",
        "memory/\x00.md",
    ],
)
async def test_read_refuses_non_memory_paths(ws: Path, make_manager: ManagerFactory, path: str) -> None:
    _write(ws)
    (ws / "AGENTS.md").write_text("instructions")
    (ws / "memory" / "notes.txt").write_text("text")
    (ws.parent / "outside.md").write_text("outside")
    m = make_manager(None)
    with pytest.raises((Forbidden, InvalidRequest)):
        await m.read(path)


async def test_read_refuses_symlinks(ws: Path, make_manager: ManagerFactory, tmp_path: Path) -> None:
    _write(ws)
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    (ws / "memory" / "link.md").symlink_to(secret)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "x.md").write_text("x")
    (ws / "memory" / "sub").symlink_to(tmp_path / "dir")
    m = make_manager(None)
    for path in ("memory/link.md", "memory/sub/x.md"):
        with pytest.raises(Forbidden, match="symlink"):
            await m.read(path)


async def test_read_allows_extra_paths(ws: Path, make_manager: ManagerFactory, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("alpha\nbeta\n")
    (tmp_path / "other.md").write_text("no")
    m = make_manager(None, {"extraPaths": [str(notes)]})
    assert (await m.read(str(notes / "a.md"), from_line=2)).text == "beta"
    with pytest.raises(Forbidden):
        await m.read(str(tmp_path / "other.md"))
    with pytest.raises(Forbidden):
        await m.read(str(notes / ".." / "other.md"))


# -- construction -----------------------------------------------------------------------------
def test_db_path_and_embedding_settings_from_config(tmp_path: Path) -> None:
    cfg = MemorySearchConfig()
    assert resolve_db_path(cfg, tmp_path, "work") == tmp_path / "memory" / "work.sqlite"
    custom = MemorySearchConfig.model_validate({"store": {"path": str(tmp_path / "idx" / "{agentId}.db")}})
    assert resolve_db_path(custom, tmp_path, "work") == tmp_path / "idx" / "work.db"
    settings = embedding_settings(
        MemorySearchConfig.model_validate(
            {"provider": "openai", "fallback": "local", "model": "m", "remote": {"apiKey": "k", "headers": {"X": "1"}}}
        )
    )
    assert settings == EmbeddingSettings(
        provider="openai", fallback="local", model="m", remote_api_key="k", remote_headers={"X": "1"}
    )


async def test_from_config_builds_a_working_manager(ws: Path, tmp_path: Path) -> None:
    _write(ws)
    m = MemoryManager.from_config(
        agent_id="main", workspace=ws, state_dir=tmp_path / "state", config=MemorySearchConfig(), provider=None
    )
    try:
        await m.sync()
        assert os.path.exists(tmp_path / "state" / "memory" / "main.sqlite")
        assert (await m.search("espresso")).results
    finally:
        await m.aclose()


@pytest.mark.both_backends
async def test_a_large_vector_matrix_is_reloaded_in_the_background(
    ws: Path, make_manager: ManagerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("homarus.memory.retrieval.BACKGROUND_RELOAD_ROWS", 1)
    _write(ws)
    m = make_manager(ConceptEmbedder())
    await m.sync()
    assert (await m.search("espresso")).results  # loads the matrix
    (ws / "memory" / "travel.md").write_text("Flight to Lisbon booked for March.\n")
    await m.sync()
    for _ in range(100):  # "trip" shares no word with the note: only the reloaded vectors find it
        resp = await m.search("upcoming trip", min_score=0)
        if resp.results and resp.results[0].path == "memory/travel.md":
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the matrix was not reloaded")


@pytest.mark.both_backends
async def test_wrong_query_dimensions_degrade_to_keywords(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    emb = ConceptEmbedder()
    m = make_manager(emb)
    await m.sync()
    emb.wrong_dims = True
    resp = await m.search("espresso")
    assert resp.mode == "fts-only" and resp.reason and "dimensions" in resp.reason
    assert resp.results[0].path == "MEMORY.md"


@pytest.mark.both_backends
async def test_index_of_another_size_degrades_to_keywords(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder(dims=64))
    await m.sync()
    await m.aclose()
    # same provider and model id, different vector size, and no sync yet: the matrix does not fit the query
    m2 = make_manager(ConceptEmbedder(dims=32), {"sync": {"onSearch": False}})
    resp = await m2.search("espresso")
    assert resp.mode == "fts-only" and resp.reason and "dimensions" in resp.reason
    assert resp.results and (await m2.status()).index == "stale"


@pytest.mark.both_backends
async def test_hybrid_disabled_searches_vectors_only(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    emb = ConceptEmbedder()
    m = make_manager(emb, {"query": {"hybrid": {"enabled": False}}})
    await m.sync()
    resp = await m.search("which computer serves the proxy")
    assert resp.mode == "vector" and resp.results[0].path == "MEMORY.md"
    emb.fail = True
    fallback = await m.search("espresso")
    assert fallback.mode == "fts-only" and fallback.results[0].path == "MEMORY.md"


async def test_a_workspace_reached_through_a_symlink_still_works(
    ws: Path, make_manager: ManagerFactory, tmp_path: Path
) -> None:
    _write(ws)
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    m = make_manager(ConceptEmbedder(), workspace=alias)
    await m.sync()
    assert (await m.status()).files == 3
    assert (await m.read("MEMORY.md", from_line=2, lines=1)).text == "The gateway runs on host gw-3."
    assert (await m.search("espresso")).results[0].path == "MEMORY.md"


async def test_a_fallback_provider_is_named_in_results(ws: Path, make_manager: ManagerFactory) -> None:
    _write(ws)
    m = make_manager(ConceptEmbedder(), provider_reason="openai: no API key; using fallback local")
    await m.sync()
    d = (await m.search("espresso")).to_dict()
    assert d["fallback"] == {"reason": "openai: no API key; using fallback local"} and d["mode"] == "hybrid"
    assert (await m.status()).provider_reason == "openai: no API key; using fallback local"


async def test_unsupported_session_source_is_reported(ws: Path, make_manager: ManagerFactory) -> None:
    m = make_manager(None, {"sources": ["memory", "sessions"]})
    status = await m.status()
    assert status.warnings and "not indexed yet" in status.warnings[0]
