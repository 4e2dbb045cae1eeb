"""End to end over real sockets: WS client → gateway → OpenAI/Anthropic wire format → fake LLM server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import TEST_TOKEN, run_gateway
from tests.fakes import HttpError, Reply, run_fake_llm
from tests.wsclient import open_client


def _config(api: str, base_url: str) -> dict[str, Any]:
    return {
        "models": {
            "providers": {
                "fake": {
                    "api": api,
                    "baseUrl": base_url,
                    "apiKey": "sk-test-secret-1234",
                    "models": [{"id": "fake-model", "contextWindow": 128000}],
                }
            }
        },
        "agents": {"defaults": {"model": {"primary": "fake/fake-model"}, "retry": {"baseDelayMs": 10}}},
    }


async def _turn(url: str, message: str, idem: str) -> dict[str, Any]:
    client = await open_client(url)
    assert (await client.handshake(TEST_TOKEN, caps=["tool-events"]))["ok"]
    await client.send(
        {"type": "req", "id": "t", "method": "agent", "params": {"message": message, "idempotencyKey": idem}}
    )
    first = await client.response("t")
    assert first["payload"]["status"] == "accepted", first
    final = await client.response("t", timeout=15)
    return final


async def test_openai_wire_turn_with_tool_call(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_gateway(tmp_path, config=_config("openai-completions", llm.base_url)) as gw:
        llm.push(Reply(tool_calls=[("current_time", {"timezone": "UTC"})]), Reply("It is time."))
        final = await _turn(gw.url, "hi", "o1")
        assert final["ok"], final
        assert final["payload"]["result"]["payloads"] == [{"text": "It is time."}]
        first, second = llm.requests[0], llm.requests[1]
        assert first.path == "/v1/chat/completions"
        assert first.headers["authorization"] == "Bearer sk-test-secret-1234"
        body = first.json
        assert body["model"] == "fake-model" and body["stream"] is True
        assert body["messages"][0]["role"] == "system" and body["messages"][-1] == {"role": "user", "content": "hi"}
        assert {t["function"]["name"] for t in body["tools"]} >= {"current_time", "session_status"}
        # the request for "hi" with the default tools and bundled skills stays small (the original sends ~60 KB)
        assert len(first.body) <= 20 * 1024, len(first.body)
        tool_msg = second.json["messages"][-1]
        assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_fake_0001"
        assert "UTC" in tool_msg["content"] if isinstance(tool_msg["content"], str) else True
        log = (gw.paths.state_dir / "agents" / "main" / "sessions").glob("*.jsonl")
        text = "".join(p.read_text() for p in log)
        assert "sk-test-secret-1234" not in text


async def test_openai_429_is_retried_then_succeeds(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_gateway(tmp_path, config=_config("openai-completions", llm.base_url)) as gw:
        llm.push(HttpError(429, "rate limited, slow down", retry_after="0"), Reply("after the retry"))
        final = await _turn(gw.url, "hello", "o2")
        assert final["payload"]["result"]["payloads"] == [{"text": "after the retry"}]
        assert len(llm.requests) == 2


async def test_openai_garbage_is_a_clean_failure(tmp_path: Path) -> None:
    config = _config("openai-completions", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    config["agents"]["defaults"]["retry"] = {"maxRetries": 0}
    with run_gateway(tmp_path, config=config) as gw:
        final = await _turn(gw.url, "hello", "o3")
        assert final["ok"] is False and final["error"]["code"] == "UNAVAILABLE"
        assert "sk-test-secret-1234" not in json.dumps(final)


async def test_anthropic_wire_turn(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_gateway(tmp_path, config=_config("anthropic-messages", llm.base_url)) as gw:
        llm.push(Reply(tool_calls=[("session_status", {})]), Reply("Status checked."))
        final = await _turn(gw.url, "status?", "a1")
        assert final["ok"], final
        assert final["payload"]["result"]["payloads"] == [{"text": "Status checked."}]
        first, second = llm.requests[0], llm.requests[1]
        assert first.path == "/v1/messages" and first.headers["x-api-key"] == "sk-test-secret-1234"
        assert "authorization" not in first.headers
        results = second.json["messages"][-1]
        assert results["role"] == "user" and results["content"][0]["type"] == "tool_result"
