"""`GET /sessions/{key}/history` against a real gateway: auth, scopes, bad input, pages, the live SSE feed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from homarus.providers.scripted import Reply
from tests.conftest import TEST_TOKEN, RunningGateway
from tests.gateway.http.api_support import api_gateway, wait_for

KEY = "agent:main:notebook"
AUTH = {"Authorization": f"Bearer {TEST_TOKEN}"}


def _say(gw: RunningGateway, text: str, key: str = KEY) -> None:
    r = httpx.post(
        f"{gw.http}/v1/chat/completions",
        headers={**AUTH, "x-homarus-session-key": key},
        json={"model": "homarus", "messages": [{"role": "user", "content": text}]},
        timeout=20,
    )
    assert r.status_code == 200, r.text


def _history(gw: RunningGateway, key: str = KEY, headers: dict[str, str] | None = None, **query: Any) -> httpx.Response:
    return httpx.get(f"{gw.http}/sessions/{key}/history", params=query, headers=AUTH if headers is None else headers)


def test_history_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, [Reply("one back"), Reply("two back")]) as (gw, _):
        _say(gw, "one")
        _say(gw, "two")
        body = _history(gw).json()
        assert body["sessionKey"] == KEY and body["sessionId"]
        texts = [(m["role"], _text(m)) for m in body["messages"]]
        assert texts == [("user", "one"), ("assistant", "one back"), ("user", "two"), ("assistant", "two back")]
        assert body["hasMore"] is False and "nextCursor" not in body
        page = _history(gw, limit=3).json()
        assert [_text(m) for m in page["messages"]] == ["one back", "two", "two back"]
        assert page["hasMore"] is True and page["nextCursor"] == "1"
        older = _history(gw, limit=3, cursor=page["nextCursor"]).json()
        assert [_text(m) for m in older["messages"]] == ["one"] and older["hasMore"] is False
        # the key is case-insensitive and URL-encoded colons work
        assert _history(gw, key="AGENT%3Amain%3ANotebook").json()["total"] == 4


def test_history_auth_and_scopes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch) as (gw, _):
        _say(gw, "hi")
        assert _history(gw, headers={}).status_code == 401
        assert _history(gw, headers={"Authorization": "Bearer wrong"}).status_code == 401
        narrow = {**AUTH, "x-homarus-scopes": "operator.approvals"}
        r = _history(gw, headers=narrow)
        assert r.status_code == 403
        assert r.json() == {"ok": False, "error": {"type": "forbidden", "message": "missing scope: operator.read"}}
        assert _history(gw, headers={**AUTH, "x-homarus-scopes": ""}).status_code == 403
        assert _history(gw, headers={**AUTH, "x-homarus-scopes": "operator.read"}).status_code == 200
        assert _history(gw, headers={**AUTH, "x-openclaw-scopes": "operator.write"}).status_code == 200


def test_history_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch) as (gw, _):
        _say(gw, "hi")
        missing = _history(gw, key="agent:main:nobody")
        assert missing.status_code == 404
        assert missing.json() == {
            "ok": False,
            "error": {"type": "not_found", "message": "Session not found: agent:main:nobody"},
        }
        assert _history(gw, key="agent::x").status_code == 400
        assert "unknown agent" in _history(gw, key="agent:ghost:main").json()["error"]["message"]
        for bad in ({"limit": "0"}, {"limit": "5000"}, {"limit": "ten"}, {"cursor": "-1"}, {"cursor": "x"}):
            r = httpx.get(f"{gw.http}/sessions/{KEY}/history", params=bad, headers=AUTH)
            assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error", bad
        assert httpx.post(f"{gw.http}/sessions/{KEY}/history", headers=AUTH).status_code == 405


async def _events(resp: httpx.Response) -> AsyncIterator[tuple[str, Any]]:
    """(event name, data) pairs of an SSE response; comments and retry lines as ("", line)."""
    name, data = "", None
    async for line in resp.aiter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data = json.loads(line.removeprefix("data: "))
        elif line.startswith(("retry:", ":")):
            yield "", line
        elif line == "" and data is not None:
            yield name, data
            name, data = "", None


async def _next_event(events: AsyncIterator[tuple[str, Any]], name: str) -> Any:
    async with asyncio.timeout(10):
        async for kind, data in events:
            if kind == name:
                return data
    raise AssertionError(f"stream ended before {name}")


async def test_history_live_feed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, [Reply("first reply"), Reply("live reply")]) as (gw, _):
        await asyncio.to_thread(_say, gw, "before")
        async with httpx.AsyncClient(timeout=10) as http:
            headers = {**AUTH, "Accept": "text/event-stream"}
            async with http.stream("GET", f"{gw.http}/sessions/{KEY}/history", headers=headers) as resp:
                assert resp.status_code == 200
                assert resp.headers["content-type"] == "text/event-stream; charset=utf-8"
                assert resp.headers["cache-control"] == "no-cache"
                events = _events(resp)
                assert await anext(events) == ("", "retry: 1000")
                snapshot = await _next_event(events, "history")
                assert [_text(m) for m in snapshot["messages"]] == ["before", "first reply"]
                await asyncio.to_thread(_say, gw, "during")
                added = [await _next_event(events, "message"), await _next_event(events, "message")]
                assert [(a["index"], _text(a["message"])) for a in added] == [(2, "during"), (3, "live reply")]
                ref = gw.gateway.sessions.get(gw.gateway.sessions.resolve_key(KEY))
                assert ref is not None
                await asyncio.to_thread(gw.gateway.sessions.reset, ref.key)  # outside any run: found by polling
                fresh = await _next_event(events, "history")
                assert fresh["messages"] == [] and fresh["sessionId"] != snapshot["sessionId"]
        await asyncio.to_thread(wait_for, lambda: len(gw.gateway.bus) == 0)  # the feed left the bus


async def test_history_stream_query_and_keepalive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("homarus.gateway.http.openai_stream.KEEPALIVE_S", 0.2)
    with api_gateway(tmp_path, monkeypatch) as (gw, _):
        await asyncio.to_thread(_say, gw, "hi")
        async with (
            httpx.AsyncClient(timeout=10) as http,
            http.stream("GET", f"{gw.http}/sessions/{KEY}/history?stream=1", headers=AUTH) as resp,
        ):
            events = _events(resp)
            assert (await _next_event(events, "history"))["total"] == 2
            async with asyncio.timeout(5):
                async for kind, line in events:
                    if kind == "" and line == ": keepalive":
                        break


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")
