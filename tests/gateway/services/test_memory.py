"""Memory through the gateway: a model's memory_search/memory_get over the agent's Markdown memory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import open_client


def _config(workspace: Path, **memory: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {
            "defaults": {
                "model": {"primary": "test/m"},
                "workspace": str(workspace),
                "heartbeat": {"every": "0m"},
                "memorySearch": memory,
            }
        },
    }


async def _tool_results(tmp_path: Path, config: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    with run_gateway(tmp_path / "gw", config=config) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("", tool_calls=calls), Reply("done")])
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN, caps=["tool-events"]))["ok"]
        assert (await c.request("agent", {"message": "what do I drink?", "idempotencyKey": "k"}))["ok"]
        assert (await c.request("agent.wait", {"runId": "k", "timeoutMs": 60_000}, timeout=70))["ok"]
        return _results(c.events)


def _results(events: list[dict[str, Any]]) -> list[Any]:
    """The ``result`` tool events, in order."""
    return [
        e["payload"]["data"]
        for e in events
        if e["event"] == "agent" and e["payload"]["stream"] == "tool" and e["payload"]["data"]["phase"] == "result"
    ]


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Preferences\n\nThe user drinks oolong tea, never coffee.\n")
    (ws / "memory" / "2026-11-20.md").write_text("# 2026-11-20\n\nBooked the dentist for December 3rd.\n")
    (ws / "secret.txt").write_text("not memory\n")
    return ws


@pytest.mark.parametrize("provider", ["none", "auto"])
async def test_search_and_get_through_a_run(tmp_path: Path, provider: str) -> None:
    ws = _workspace(tmp_path)
    calls = [
        ("memory_search", {"query": "oolong tea"}),
        ("memory_get", {"path": "memory/2026-11-20.md"}),
        ("memory_get", {"path": "secret.txt"}),
    ]
    search, get, refused = await _tool_results(tmp_path, _config(ws, provider=provider), calls)
    found = json.loads(search["result"])
    assert found["results"] and found["results"][0]["path"] == "MEMORY.md", json.dumps(found)
    assert "oolong" in found["results"][0]["snippet"]
    if provider == "none":
        assert found["mode"] == "fts-only"
    assert "dentist" in get["result"]
    assert refused["isError"] and "not memory" not in refused["result"]


async def test_disabled_memory_says_so(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    (result,) = await _tool_results(tmp_path, _config(ws, enabled=False), [("memory_search", {"query": "tea"})])
    payload = json.loads(result["result"])
    assert payload["disabled"] is True and payload["results"] == []


async def test_status_and_search_methods(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with run_gateway(tmp_path / "gw", config=_config(ws, provider="none")) as gw:
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN, ["operator.read"]))["ok"]
        found = await c.request("memory.search", {"query": "dentist December"}, timeout=30)
        assert found["ok"] and found["payload"]["results"][0]["path"] == "memory/2026-11-20.md"
        status = await c.request("memory.status", {}, timeout=30)
        assert status["ok"] and status["payload"]["files"] == 2, status
        bad = await c.request("memory.status", {"agentId": "nobody"})
        assert not bad["ok"] and "unknown agent" in bad["error"]["message"]
        assert not (await c.request("memory.search", {"query": ""}))["ok"]
    with run_gateway(tmp_path / "off", config=_config(ws, enabled=False)) as gw:
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN))["ok"]
        off = await c.request("memory.status", {})
        assert not off["ok"] and "disabled" in off["error"]["message"]


async def test_memory_is_indexed_at_startup_with_the_local_model(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with run_gateway(tmp_path / "gw", config=_config(ws)) as gw:  # provider auto: the local model
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN, ["operator.read"]))["ok"]
        status: dict[str, Any] = {}
        for _ in range(200):  # nobody searched or ran: the startup sync indexes on its own
            status = (await c.request("memory.status", {}, timeout=30))["payload"]
            if status["files"] == 2 and status["index"] == "fresh":
                break
            await asyncio.sleep(0.1)
        assert status["files"] == 2 and status["chunksWithVectors"] == status["chunks"] > 0, status
        assert status["provider"] == "local"


async def test_no_memory_files_builds_no_index_until_one_appears(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    calls = [
        ("memory_search", {"query": "tea"}),
        ("write", {"path": "MEMORY.md", "content": "The user drinks oolong tea.\n"}),
        ("memory_search", {"query": "oolong"}),
    ]
    with run_gateway(tmp_path / "gw", config=_config(ws, provider="none")) as gw:
        turns = [Reply("", tool_calls=[call]) for call in calls]
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [turns[0], Reply("nothing yet"), *turns[1:], Reply("ok")]
        )
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN, caps=["tool-events"]))["ok"]
        assert (await c.request("agent", {"message": "tea?", "idempotencyKey": "k1"}))["ok"]
        assert (await c.request("agent.wait", {"runId": "k1", "timeoutMs": 60_000}, timeout=70))["ok"]
        # no memory files: an honest empty answer, and nothing was built for it
        assert not gw.gateway.built("memory")
        assert not (gw.paths.state_dir / "memory" / "main.sqlite").exists()
        (first,) = _results(c.events)
        found = json.loads(first["result"])
        assert found["results"] == [] and "no memory yet" in found["reason"]
        # the run writes MEMORY.md; the next search builds the index and finds it
        assert (await c.request("agent", {"message": "remember", "idempotencyKey": "k2"}))["ok"]
        assert (await c.request("agent.wait", {"runId": "k2", "timeoutMs": 60_000}, timeout=70))["ok"]
        assert gw.gateway.built("memory")
        last = json.loads(_results(c.events)[-1]["result"])
        assert [r["path"] for r in last["results"]] == ["MEMORY.md"]
