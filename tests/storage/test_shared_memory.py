"""Two gateways on one real PostgreSQL share the agent's memory index: the files of the shared
workspace are indexed once, by whichever gateway gets there first, and both search the same rows.
Neither writes a SQLite index under its state directory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client


def _config(url: str, workspace: Path) -> dict[str, Any]:
    return {
        "agents": {"defaults": {"workspace": str(workspace), "memorySearch": {"provider": "none"}}},
        "storage": {"backend": "postgres", "postgres": {"url": url}},
    }


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN))["ok"]
    return c


async def _search(c: Client, query: str) -> dict[str, Any]:
    res = await c.request("memory.search", {"query": query, "minScore": 0})
    assert res["ok"], res
    payload: dict[str, Any] = res["payload"]
    return payload


async def test_two_gateways_search_one_memory_index(tmp_path: Path, pg_url: str) -> None:
    ws = tmp_path / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Long-term\nThe deploy host is gw-3.\n")
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url, ws)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url, ws)) as b,
    ):
        ca, cb = await _client(a), await _client(b)
        found = await _search(ca, "deploy host")
        assert [r["path"] for r in found["results"]] == ["MEMORY.md"] and found["mode"] == "fts-only"

        # a note written on the shared volume: both watchers see it, one gateway indexes it
        (ws / "memory" / "2026-11-29.md").write_text("Moved the backups to the NAS in the cellar.\n")
        for _ in range(200):
            status = (await cb.request("memory.status", {}))["payload"]
            if status["files"] == 2:
                break
            await asyncio.sleep(0.05)
        assert status["files"] == 2 and status["shared"] and status["engine"].startswith("PostgreSQL")
        assert status["dbPath"].startswith("postgresql://127.0.0.1:") and "@" not in status["dbPath"]
        found = await _search(cb, "where are the backups")
        assert found["results"][0]["path"] == "memory/2026-11-29.md"
        for side in ("a", "b"):
            assert not (tmp_path / side / "state" / "memory").exists()
