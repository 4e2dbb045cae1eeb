from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.memory.conftest import ManagerFactory
from tests.memory.embedders import ConceptEmbedder

FAST = {"sync": {"watchDebounceMs": 100}}


async def _until(predicate: Callable[[], Awaitable[bool]], timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"condition not reached in time: {what}")


async def test_watcher_follows_edits_new_directories_and_deletions(ws: Path, make_manager: ManagerFactory) -> None:
    (ws / "MEMORY.md").write_text("The user prefers espresso.\n")
    m = make_manager(ConceptEmbedder(), FAST)
    await m.sync()
    assert m.start_watching()
    await asyncio.sleep(0.3)  # let the watchers register

    async def has(text: str) -> bool:
        resp = await m.search(text, min_score=0, max_results=20)
        return any(text in r.snippet for r in resp.results) and resp.index == "fresh"

    (ws / "memory" / "2026-02-01.md").write_text("Quarterly offsite in Porto.\n")
    await _until(lambda: has("Porto"), what="new file")
    (ws / "MEMORY.md").write_text("The user prefers green tea now.\n")
    await _until(lambda: has("green tea"), what="edit")
    sub = ws / "memory" / "projects"
    sub.mkdir()
    (sub / "orca.md").write_text("Project orca ships in May.\n")
    await _until(lambda: has("orca ships"), what="new directory")

    async def gone() -> bool:
        return (await m.status()).files == 2

    (ws / "memory" / "2026-02-01.md").unlink()
    await _until(gone, what="deletion")


async def test_watcher_notices_memory_dir_created_later(tmp_path: Path, make_manager: ManagerFactory) -> None:
    ws = tmp_path / "workspace"
    (ws / "memory").rmdir()
    m = make_manager(ConceptEmbedder(), FAST)
    await m.sync()
    assert m.start_watching()
    await asyncio.sleep(0.3)
    (ws / "memory").mkdir()
    await asyncio.sleep(0.5)  # the recursive watcher restarts on the new directory
    (ws / "memory" / "late.md").write_text("Late note about kayaks.\n")

    async def found() -> bool:
        return (await m.status()).files == 1

    await _until(found)


async def test_watching_can_be_turned_off(ws: Path, make_manager: ManagerFactory) -> None:
    m = make_manager(None, {"sync": {"watch": False}})
    assert not m.start_watching()


async def test_warm_session_syncs_once_per_session_key(ws: Path, make_manager: ManagerFactory) -> None:
    (ws / "MEMORY.md").write_text("fact\n")
    m = make_manager(None)
    m.warm_session("agent:main:main")
    report = await m.sync()  # joins the background sync
    assert report.reason == "session-start"
    m.warm_session("agent:main:main")
    assert m._inflight is not None and m._inflight.done()  # no second sync for the same key
