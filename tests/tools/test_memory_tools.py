from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from homarus.config.memory import MemorySearchConfig
from homarus.errors import InvalidRequest
from homarus.memory.manager import MemoryManager
from homarus.tools.base import Tool, ToolContext, ToolServices
from homarus.tools.memory_tools import memory_tools
from tests.memory.embedders import ConceptEmbedder


@pytest.fixture
async def manager(tmp_path: Path) -> AsyncIterator[MemoryManager]:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Facts\nThe gateway runs on host gw-3.\nThe user prefers espresso.\n")
    (ws / "memory" / "2026-01-05.md").write_text("Ticket TCK-4821: login crash on Safari.\nLine two\n")
    (ws / "AGENTS.md").write_text("not memory")
    m = MemoryManager(
        agent_id="main",
        workspace=ws,
        db_path=tmp_path / "state" / "memory" / "main.sqlite",
        config=MemorySearchConfig(),
        provider=ConceptEmbedder(),
    )
    await m.sync()
    yield m
    await m.aclose()


def _tools() -> dict[str, Tool]:
    return {t.name: t for t in memory_tools()}


def _ctx(tmp_path: Path, services: dict[str, Any]) -> ToolContext:
    return ToolContext("agent:main:main", "main", "run-1", "call-1", tmp_path / "ws", services=ToolServices(**services))


def _payload(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def test_schemas_use_the_wire_names() -> None:
    tools = _tools()
    assert set(tools["memory_search"].parameters["properties"]) == {"query", "maxResults", "minScore"}
    assert tools["memory_search"].parameters["required"] == ["query"]
    assert set(tools["memory_get"].parameters["properties"]) == {"path", "from", "lines"}
    assert tools["memory_search"].description.startswith("Mandatory recall step")


async def test_memory_search_returns_results_and_state(tmp_path: Path, manager: MemoryManager) -> None:
    tool = _tools()["memory_search"]
    result = await tool.execute(_ctx(tmp_path, {"memory": manager}), {"query": "TCK-4821", "maxResults": 2})
    assert not result.is_error
    data = _payload(result)
    assert data["mode"] == "hybrid" and data["index"] == "fresh" and data["provider"] == "test"
    top = data["results"][0]
    assert top["path"] == "memory/2026-01-05.md" and top["citation"] == "memory/2026-01-05.md#L1-L2"
    assert len(data["results"]) <= 2


async def test_memory_search_with_fts_syntax_is_a_normal_result(tmp_path: Path, manager: MemoryManager) -> None:
    tool = _tools()["memory_search"]
    for q in ['"', "NEAR(a b)", "*", "text:x OR -y"]:
        result = await tool.execute(_ctx(tmp_path, {"memory": manager}), {"query": q})
        assert "results" in _payload(result)


async def test_memory_search_rejects_bad_arguments(tmp_path: Path, manager: MemoryManager) -> None:
    tool = _tools()["memory_search"]
    ctx = _ctx(tmp_path, {"memory": manager})
    with pytest.raises(InvalidRequest):
        await tool.execute(ctx, {"query": "x", "minScore": 3})
    with pytest.raises(InvalidRequest):
        await tool.execute(ctx, {"query": "x", "maxResults": 0})
    empty = await tool.execute(ctx, {"query": "  "})
    assert empty.is_error and _payload(empty)["error"] == "query is empty"


async def test_without_memory_service_tools_say_disabled(tmp_path: Path) -> None:
    tools = _tools()
    ctx = _ctx(tmp_path, {})
    search = await tools["memory_search"].execute(ctx, {"query": "anything"})
    assert search.is_error
    data = _payload(search)
    assert data["disabled"] is True and data["error"] == "memory is disabled" and data["results"] == []
    get = await tools["memory_get"].execute(ctx, {"path": "MEMORY.md"})
    assert get.is_error and _payload(get)["error"] == "memory is disabled"


async def test_memory_get_reads_lines(tmp_path: Path, manager: MemoryManager) -> None:
    tool = _tools()["memory_get"]
    ctx = _ctx(tmp_path, {"memory": manager})
    result = await tool.execute(ctx, {"path": "MEMORY.md", "from": 2, "lines": 1})
    assert _payload(result) == {"path": "MEMORY.md", "text": "The gateway runs on host gw-3."}
    whole = _payload(await tool.execute(ctx, {"path": "memory/2026-01-05.md"}))
    assert whole["text"] == "Ticket TCK-4821: login crash on Safari.\nLine two"


@pytest.mark.parametrize("path", ["AGENTS.md", "../x.md", "/etc/passwd", "memory/a.txt"])
async def test_memory_get_refuses_other_files(tmp_path: Path, manager: MemoryManager, path: str) -> None:
    result = await _tools()["memory_get"].execute(_ctx(tmp_path, {"memory": manager}), {"path": path})
    assert result.is_error
    data = _payload(result)
    assert data["text"] == "" and data["error"]


async def test_a_failing_service_is_reported_not_raised(tmp_path: Path) -> None:
    class Broken:
        async def search(self, query: str, max_results: int | None = None, min_score: float | None = None) -> Any:
            raise RuntimeError("database is locked")

        async def read(self, path: str, from_line: int | None = None, lines: int | None = None) -> Any:
            raise PermissionError(13, "Permission denied")

    ctx = _ctx(tmp_path, {"memory": Broken()})
    search = await _tools()["memory_search"].execute(ctx, {"query": "x"})
    assert search.is_error and "database is locked" in _payload(search)["error"]
    get = await _tools()["memory_get"].execute(ctx, {"path": "MEMORY.md"})
    assert get.is_error and "Permission denied" in _payload(get)["error"]
