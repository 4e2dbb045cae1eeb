"""The silent pre-compaction memory flush: due → one turn that writes memory/DAY.md, then compaction."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from homarus.messages import Context, ToolResultMessage, UserMessage
from homarus.providers.scripted import Reply, Responder, ScriptedProvider
from homarus.sessions.store import SessionStore
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import open_client


def _last_user(ctx: Context) -> str:
    users = [m for m in ctx.messages if isinstance(m, UserMessage)]
    return users[-1].text if users else ""


async def test_flush_writes_notes_once_then_compaction_follows(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    config: dict[str, Any] = {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 12000}]}}},
        "agents": {
            "defaults": {
                "model": {"primary": "test/m"},
                "workspace": str(ws),
                "heartbeat": {"every": "0m"},
                "compaction": {
                    "reserveTokensFloor": 1000,
                    "keepRecentTokens": 500,
                    "memoryFlush": {"softThresholdTokens": 4000},
                },
            }
        },
    }
    day = time.strftime("%Y-%m-%d", time.localtime())
    flush_prompts: list[str] = []

    def answer(ctx: Context) -> Reply:
        if ctx.system_prompt.startswith("You write context summaries"):
            return Reply("## Goal\nTalk.\n## Progress\nLong messages.")
        last = _last_user(ctx)
        if ctx.messages and isinstance(ctx.messages[-1], ToolResultMessage):
            return Reply("NO_REPLY")  # the note is written: nothing to say
        if last.startswith("Pre-compaction memory flush"):
            flush_prompts.append(last)
            note = {"path": f"memory/{day}.md", "content": "- The user's project is called Lobster.\n"}
            return Reply("", tool_calls=[("write", note)])
        return Reply("x" * 4000)

    with run_gateway(tmp_path / "gw", config=config) as gw:
        provider = ScriptedProvider([Responder(answer)] * 40)
        gw.gateway.models.overrides["test"] = provider
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN))["ok"]
        sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
        entry: dict[str, Any] = {}
        for i in range(10):  # ~2,000 tokens a run: the flush is due a little before compaction
            assert (await c.request("agent", {"message": "y" * 4000, "idempotencyKey": f"m{i}"}))["ok"]
            assert (await c.request("agent.wait", {"runId": f"m{i}", "timeoutMs": 20_000}, timeout=25))["ok"]
            deadline = time.monotonic() + 10
            note = ws / "memory" / f"{day}.md"
            while flush_prompts and not note.exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)  # the queued flush turn is still running
            await asyncio.sleep(0.2)
            entry = SessionStore(sessions).read()["agent:main:main"]
            if entry.get("compactionCount"):
                break
        kinds = [
            "summary" if r.system_prompt.startswith("You write context") else _last_user(r)[:5]
            for r in provider.requests
        ]
        assert len(flush_prompts) == 1, kinds  # once per compaction cycle
        assert kinds.index("Pre-c") < kinds.index("summary"), kinds  # notes first, then the summary
        assert (ws / "memory" / f"{day}.md").read_text() == "- The user's project is called Lobster.\n"
        assert entry["memoryFlushCompactionCount"] == 0 and entry.get("compactionCount", 0) >= 1
        transcript = (sessions / f"{entry['sessionId']}.jsonl").read_text()
        assert "compaction" in transcript
