"""``sessions.compact``: a session's context summarised (or trimmed) on request, between runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from homarus.agents.manual_compaction import TRIMMED
from homarus.messages import Context, UserMessage
from homarus.providers.scripted import Fail, Gate, Reply, Responder, ScriptedProvider, Step
from homarus.sessions.store import SessionStore
from tests.conftest import RunningGateway, run_gateway
from tests.gateway.test_queue_modes import _client, _config, _send, _started, _user_texts, _wait
from tests.wsclient import Client

SUMMARY = "## Goal\nTalk.\n## Progress\nThree long exchanges."


def _is_summary_request(ctx: Context) -> bool:
    return ctx.system_prompt.startswith("You write context summaries")


def _lines(gw: RunningGateway) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
    entry: dict[str, Any] = SessionStore(sessions).read()["agent:main:main"]
    text = (sessions / f"{entry['sessionId']}.jsonl").read_text()
    return entry, [json.loads(x) for x in text.splitlines()]


async def _talk(c: Client, n: int) -> None:
    for i in range(n):
        await _send(c, f"question {i} " + "y" * 600, f"talk-{i}")
        assert (await _wait(c, f"talk-{i}"))["status"] == "ok"


def _provider(summary: Step) -> ScriptedProvider:
    def answer(ctx: Context) -> Reply | Fail:
        return Reply("x" * 600)

    return ScriptedProvider([Responder(answer)] * 3 + [summary] + [Responder(answer)] * 3)


async def test_a_session_is_summarised_on_request_and_the_next_turn_starts_from_the_summary(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("steer")) as gw:
        provider = _provider(Reply(SUMMARY))
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        await _talk(c, 3)
        answer = await c.request("sessions.compact", {"key": "main"})
        assert answer["ok"], answer
        report = answer["payload"]
        assert report["ok"] is True and report["compacted"] is True and report["key"] == "agent:main:main"
        result = report["result"]
        assert result["tokensBefore"] > result["tokensAfter"] > 0
        assert _is_summary_request(provider.requests[3])
        assert "question 0" in _user_texts(provider.requests[3])[0]
        entry, lines = _lines(gw)
        compactions = [x for x in lines if x["type"] == "compaction"]
        assert len(compactions) == 1 and SUMMARY in compactions[0]["summary"]
        assert compactions[0]["firstKeptEntryId"] == result["firstKeptEntryId"]
        assert result["firstKeptEntryId"] in {x.get("id") for x in lines}
        assert entry["compactionCount"] == 1
        assert sum(1 for x in lines if x["type"] == "message") == 6  # the transcript keeps every message

        await _send(c, "and now?", "after")
        assert (await _wait(c, "after"))["status"] == "ok"
        first = provider.requests[4].messages[0]
        assert isinstance(first, UserMessage) and SUMMARY in first.text
        assert not any("question 0" in t for t in _user_texts(provider.requests[4]))
        # what the UI shows is still the whole conversation
        history = (await c.request("chat.history", {"sessionKey": "main"}))["payload"]["messages"]
        assert sum(1 for m in history if m["role"] == "user") == 4


async def test_a_trim_keeps_the_newest_messages_and_the_transcript_keeps_all(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("steer")) as gw:
        provider = _provider(Responder(lambda ctx: Reply("x" * 600)))
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        await _talk(c, 3)
        roomy = (await c.request("sessions.compact", {"key": "main", "maxLines": 50}))["payload"]
        assert roomy == {"ok": True, "key": "agent:main:main", "compacted": False, "kept": 6}
        trimmed = (await c.request("sessions.compact", {"key": "main", "maxLines": 2}))["payload"]
        assert trimmed["compacted"] is True and trimmed["kept"] == 2
        entry, lines = _lines(gw)
        assert [x["summary"] for x in lines if x["type"] == "compaction"] == [TRIMMED]
        assert entry["compactionCount"] == 1 and len(provider.requests) == 3  # no model call for a trim
        await _send(c, "next", "after")
        assert (await _wait(c, "after"))["status"] == "ok"
        texts = _user_texts(provider.requests[3])
        assert TRIMMED in texts[0] and "question 2" in texts[1] and texts[-1] == "next"
        assert len(provider.requests[3].messages) == 4  # the note, the kept pair, the new message


async def test_a_busy_session_is_refused_and_a_message_during_compaction_waits_for_it(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("steer")) as gw:
        hold_run, hold_summary = asyncio.Event(), asyncio.Event()
        provider = ScriptedProvider(
            [
                Reply("x" * 600),
                Gate(hold_run, Reply("x" * 600)),
                Gate(hold_summary, Reply(SUMMARY)),
                Reply("after the summary"),
            ]
        )
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        await _send(c, "first " + "y" * 600, "one")
        assert (await _wait(c, "one"))["status"] == "ok"
        await _send(c, "second " + "y" * 600, "two")
        await _started(provider, 2)
        busy = await c.request("sessions.compact", {"key": "main"})
        assert busy["ok"] is False and busy["error"]["code"] == "INVALID_REQUEST"
        assert busy["error"]["message"] == "Session agent:main:main has an active run; retry after it finishes."
        gw.call_soon(hold_run.set)
        assert (await _wait(c, "two"))["status"] == "ok"

        other = await _client(gw)  # one request at a time per client
        compacting = asyncio.ensure_future(other.request("sessions.compact", {"key": "main"}, timeout=15))
        await _started(provider, 3)
        await _send(c, "meanwhile", "three")  # steer mode: it must not steer into the summary
        await asyncio.sleep(0.2)
        assert len(provider.requests) == 3
        gw.call_soon(hold_summary.set)
        assert (await compacting)["payload"]["compacted"] is True
        assert (await _wait(c, "three"))["status"] == "ok"
        texts = _user_texts(provider.requests[3])
        assert SUMMARY in texts[0] and texts[-1] == "meanwhile"


async def test_a_failed_summary_answers_its_reason_and_changes_nothing(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("steer")) as gw:
        gw.gateway.models.overrides["test"] = _provider(Fail("model is down", status=503))
        c = await _client(gw)
        await _talk(c, 3)
        _, before = _lines(gw)
        report = (await c.request("sessions.compact", {"key": "main"}))["payload"]
        assert report["ok"] is False and report["compacted"] is False
        assert "summary request failed" in report["reason"] or "model is down" in report["reason"]
        entry, after = _lines(gw)
        assert after == before and not entry.get("compactionCount")


async def test_a_session_too_small_to_summarise_says_so(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=_config("steer")) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("short")])
        c = await _client(gw)
        await _send(c, "hi", "hi")
        assert (await _wait(c, "hi"))["status"] == "ok"
        report = (await c.request("sessions.compact", {"key": "main"}))["payload"]
        assert report == {"ok": False, "key": "agent:main:main", "compacted": False, "reason": report["reason"]}
        assert report["reason"]
