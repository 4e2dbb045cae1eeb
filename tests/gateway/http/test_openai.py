"""The OpenAI-compatible endpoints against a real gateway: the official `openai` client, then raw HTTP."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from homarus.messages import UserMessage
from homarus.providers.scripted import Fail, Gate, Reply
from tests.conftest import TEST_TOKEN, RunningGateway
from tests.gateway.http.api_support import api_gateway, wait_for
from tests.wsclient import open_client

LONG = "The quick brown fox jumps over the lazy dog. " * 6


def client(gw: RunningGateway, token: str = TEST_TOKEN) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gw.http}/v1", api_key=token, max_retries=0, timeout=20)


def user_texts(messages: list[Any]) -> list[str]:
    return [m.text for m in messages if isinstance(m, UserMessage)]


# -- chat completions through the openai client ----------------------------------------------------


def test_chat_completion_non_streaming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, [Reply("Hello from Homarus")]) as (gw, provider):
        done = client(gw).chat.completions.create(
            model="homarus", messages=[{"role": "user", "content": "hi"}], user="alice"
        )
        assert done.id.startswith("chatcmpl-")
        assert done.object == "chat.completion"
        assert done.model == "homarus"
        assert done.choices[0].message.role == "assistant"
        assert done.choices[0].message.content == "Hello from Homarus"
        assert done.choices[0].finish_reason == "stop"
        assert done.usage is not None and done.usage.completion_tokens > 0
        assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
        assert user_texts(provider.requests[-1].messages) == ["hi"]
        keys = [k for _, k, _ in gw.gateway.sessions.all_entries("main")]
        assert "agent:main:openai-user:alice" in keys
        assert gw.gateway.journal.get(done.id).status == "ok"  # type: ignore[union-attr]


def test_chat_completion_streaming_with_usage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, [Reply(LONG)]) as (gw, provider):
        provider.chunk, provider.pace_s = 60, 0.03  # deltas further apart than a display frame
        stream = client(gw).chat.completions.create(
            model="homarus",
            messages=[{"role": "user", "content": "tell me"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        assert chunks[0].choices[0].delta.role == "assistant"
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == LONG
        assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 3  # really streamed
        finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
        assert len(finals) == 1 and finals[0].choices[0].finish_reason == "stop"
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert chunks[-1].usage.completion_tokens > 0
        assert {c.id for c in chunks} == {chunks[0].id} and chunks[0].id.startswith("chatcmpl-")


def test_streaming_without_usage_ends_with_stop_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, [Reply("short")]) as (gw, _):
        chunks = list(
            client(gw).chat.completions.create(
                model="openclaw", messages=[{"role": "user", "content": "x"}], stream=True
            )
        )
        assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].usage is None


def test_tool_turns_stream_every_assistant_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [Reply("Checking the time.", tool_calls=[("current_time", {})]), Reply("It is now.")]
    with api_gateway(tmp_path, monkeypatch, steps) as (gw, _):
        c = client(gw)
        chunks = list(
            c.chat.completions.create(model="homarus", messages=[{"role": "user", "content": "t"}], stream=True)
        )
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        assert text == "Checking the time.\n\nIt is now."


def test_model_names_pick_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch) as (gw, _):
        c = client(gw)
        for i, model in enumerate(
            ["homarus/ops", "openclaw/ops", "homarus:ops", "agent:ops", "openclaw", "homarus/main"]
        ):
            done = c.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}], user=f"u{i}")
            assert done.model == model
        ops = {k for _, k, _ in gw.gateway.sessions.all_entries("ops")}
        main = {k for _, k, _ in gw.gateway.sessions.all_entries("main")}
        assert ops == {f"agent:ops:openai-user:u{i}" for i in range(4)}
        assert main == {"agent:main:openai-user:u4", "agent:main:openai-user:u5"}


def test_session_header_continues_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch) as (gw, provider):
        c = client(gw)
        headers = {"x-homarus-session-key": "agent:main:notebook"}
        for text in ("first", "second"):
            c.chat.completions.create(
                model="homarus", messages=[{"role": "user", "content": text}], extra_headers=headers
            )
        assert user_texts(provider.requests[-1].messages) == ["first", "second"]
        c.chat.completions.create(
            model="homarus",
            messages=[{"role": "user", "content": "third"}],
            extra_headers={"x-openclaw-session-key": "agent:main:notebook"},
        )
        assert user_texts(provider.requests[-1].messages) == ["first", "second", "third"]
        # no user, no header: every request is a fresh session
        c.chat.completions.create(model="homarus", messages=[{"role": "user", "content": "alone"}])
        assert user_texts(provider.requests[-1].messages) == ["alone"]


def test_earlier_messages_and_system_fold_into_the_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch) as (gw, provider):
        messages: Any = [
            {"role": "system", "content": "Answer like a pirate."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4, matey."},
            {"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]},
        ]
        client(gw).chat.completions.create(model="homarus", messages=messages)
        request = provider.requests[-1]
        assert "Answer like a pirate." in request.system_prompt
        prompt = user_texts(request.messages)[-1]
        assert "User: What is 2+2?" in prompt and "Assistant: 4, matey." in prompt
        assert prompt.rstrip().endswith("And 3+3?")


def test_run_failure_is_an_api_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [Fail("model exploded"), Fail("model exploded")]
    config = {"agents": {"defaults": {"model": {"primary": "test/m"}, "retry": {"maxRetries": 0}}}}
    with api_gateway(tmp_path, monkeypatch, steps, **config) as (gw, _):
        with pytest.raises(openai.InternalServerError) as info:
            client(gw).chat.completions.create(model="homarus", messages=[{"role": "user", "content": "x"}])
        assert "model exploded" in str(info.value)
        with pytest.raises(openai.APIError, match="model exploded"):
            list(
                client(gw).chat.completions.create(
                    model="homarus", messages=[{"role": "user", "content": "x"}], stream=True
                )
            )


# -- responses through the openai client -----------------------------------------------------------


def test_responses_non_streaming_and_previous_response_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, [Reply("Nice to meet you, Ada.")]) as (gw, provider):
        c = client(gw)
        first = c.responses.create(model="homarus", input="My name is Ada.", instructions="Be brief.")
        assert first.id.startswith("resp_") and first.status == "completed"
        assert first.output_text == "Nice to meet you, Ada."
        assert first.output[0].id.startswith("msg_")  # type: ignore[union-attr]
        assert first.usage is not None and first.usage.output_tokens > 0
        assert "Be brief." in provider.requests[-1].system_prompt
        second = c.responses.create(model="homarus", input="What is my name?", previous_response_id=first.id)
        assert second.previous_response_id == first.id
        assert user_texts(provider.requests[-1].messages) == ["My name is Ada.", "What is my name?"]
        third = c.responses.create(input="Still there?", previous_response_id=second.id)
        assert user_texts(provider.requests[-1].messages)[-1] == "Still there?"
        assert len(user_texts(provider.requests[-1].messages)) == 3 and third.status == "completed"


def test_responses_streaming_event_sequence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, [Reply(LONG)]) as (gw, provider):
        provider.chunk, provider.pace_s = 60, 0.03  # deltas further apart than a display frame
        events = list(
            client(gw).responses.create(
                model="homarus/ops",
                input=[{"role": "user", "content": [{"type": "input_text", "text": "stream please"}]}],
                stream=True,
            )
        )
        types = [e.type for e in events]
        head = [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
        ]
        tail = [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
        assert types[:4] == head and types[-4:] == tail
        assert set(types[4:-4]) == {"response.output_text.delta"} and len(types) > 10
        assert [e.sequence_number for e in events] == list(range(len(events)))
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert deltas == LONG
        completed = events[-1].response  # type: ignore[union-attr]
        assert completed.output_text == LONG and completed.model == "homarus/ops"


def test_responses_stream_helper_accumulates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, [Reply("helper text")]) as (gw, _):
        with client(gw).responses.stream(model="homarus", input="hi") as stream:
            for _ in stream:
                pass
            final = stream.get_final_response()
        assert final.output_text == "helper text"


# -- models ------------------------------------------------------------------------------------------


def test_models_list_and_retrieve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch) as (gw, _):
        c = client(gw)
        ids = [m.id for m in c.models.list()]
        assert ids == ["homarus", "homarus/main", "homarus/ops"]
        assert c.models.retrieve("homarus/ops").owned_by == "homarus"
        assert c.models.retrieve("openclaw").id == "openclaw"
        with pytest.raises(openai.NotFoundError):
            c.models.retrieve("homarus/nobody")
        with pytest.raises(openai.NotFoundError):
            c.models.retrieve("gpt-4o")


def test_models_follow_either_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, chat=False, responses=True) as (gw, _):
        assert httpx.get(f"{gw.http}/v1/models", headers=_auth()).status_code == 200
        r = httpx.post(f"{gw.http}/v1/chat/completions", headers=_auth(), json=_chat())
        assert r.status_code == 404 and r.json()["error"]["type"] == "invalid_request_error"


# -- bad input over raw HTTP -----------------------------------------------------------------------------


def _auth(token: str = TEST_TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _chat(**extra: Any) -> dict[str, Any]:
    return {"model": "homarus", "messages": [{"role": "user", "content": "hi"}], **extra}


def _error(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"} and isinstance(body["error"]["message"], str) and body["error"]["type"]
    error: dict[str, Any] = body["error"]
    return error


def test_disabled_endpoints_are_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch, chat=False, responses=False) as (gw, _):
        for path in ("/v1/chat/completions", "/v1/responses"):
            assert _error(httpx.post(gw.http + path, headers=_auth(), json=_chat()), 404)["code"] == "not_found"
        assert _error(httpx.get(f"{gw.http}/v1/models", headers=_auth()), 404)
        assert _error(httpx.get(f"{gw.http}/v1/models/homarus", headers=_auth()), 404)


def test_bad_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with api_gateway(tmp_path, monkeypatch) as (gw, provider):
        url = f"{gw.http}/v1/chat/completions"
        assert _error(httpx.post(url, json=_chat()), 401)["type"] == "unauthorized"
        assert _error(httpx.post(url, json=_chat(), headers=_auth("wrong-token")), 401)["message"] == "Unauthorized"
        assert _error(httpx.get(f"{gw.http}/v1/models"), 401)
        no_user = {"model": "homarus", "messages": [{"role": "system", "content": "s"}]}
        err = _error(httpx.post(url, json=no_user, headers=_auth()), 400)
        assert err["message"] == "Missing user message in `messages`." and err["type"] == "invalid_request_error"
        blank = {"model": "homarus", "messages": [{"role": "user", "content": "   "}]}
        assert "Missing user message" in _error(httpx.post(url, json=blank, headers=_auth()), 400)["message"]
        assert _error(httpx.post(url, json={"model": "homarus"}, headers=_auth()), 400)["param"] == "messages"
        assert _error(httpx.post(url, json=_chat(model="gpt-4o"), headers=_auth()), 400)["code"] == "model_not_found"
        assert _error(httpx.post(url, json=_chat(model="homarus/ghost"), headers=_auth()), 404)["code"] == (
            "model_not_found"
        )
        huge = {"model": "homarus", "messages": [{"role": "user", "content": "x" * (3 * 1024 * 1024)}]}
        assert _error(httpx.post(url, json=huge, headers=_auth()), 413)["message"] == "Payload too large"
        bad_json = {**_auth(), "Content-Type": "application/json"}
        assert _error(httpx.post(url, content=b'{"model": "homarus", ', headers=bad_json), 400)["code"] == (
            "invalid_json"
        )
        assert _error(httpx.post(url, content=b"[1, 2]", headers=bad_json), 400)["code"] == "invalid_body"
        assert _error(httpx.post(url, json=_chat(stream="yes"), headers=_auth()), 400)["param"] == "stream"
        bad_role = {"model": "homarus", "messages": [{"role": "robot", "content": "x"}]}
        assert _error(httpx.post(url, json=bad_role, headers=_auth()), 400)
        remote = {"type": "image_url", "image_url": {"url": "http://169.254.169.254/latest"}}
        remote_image = {"model": "homarus", "messages": [{"role": "user", "content": [remote]}]}
        assert "not fetched" in _error(httpx.post(url, json=remote_image, headers=_auth()), 400)["message"]
        bad_key = {**_auth(), "x-homarus-session-key": "agent:ops:x"}
        assert _error(httpx.post(url, json=_chat(model="homarus/main"), headers=bad_key), 400)["code"] == (
            "invalid_session_key"
        )
        assert _error(httpx.post(url, json=_chat(), headers={**_auth(), "x-homarus-agent-id": "ghost"}), 400)
        assert httpx.get(url, headers=_auth()).status_code == 405
        responses = f"{gw.http}/v1/responses"
        assert _error(httpx.post(responses, json={"model": "homarus"}, headers=_auth()), 400)["param"] == "input"
        unknown_prev = {"model": "homarus", "input": "x", "previous_response_id": "resp_nope"}
        assert _error(httpx.post(responses, json=unknown_prev, headers=_auth()), 404)["code"] == (
            "previous_response_not_found"
        )
        nul = {"model": "homarus", "messages": [{"role": "user", "content": "a\u0000b"}]}
        assert _error(httpx.post(url, json=nul, headers=_auth()), 400)["code"] == "invalid_message"
        odd_item = {"model": "homarus", "input": [{"type": "computer_call", "action": {}}]}
        assert _error(httpx.post(responses, json=odd_item, headers=_auth()), 400)["param"] == "input[0].type"
        assert provider.requests == []  # nothing above reached the model
        done = httpx.post(url, json=_chat(), headers=_auth()).json()
        not_a_response = {"model": "homarus", "input": "x", "previous_response_id": done["id"]}
        assert _error(httpx.post(responses, json=not_a_response, headers=_auth()), 400)["param"] == (
            "previous_response_id"
        )


def test_rate_limited_after_repeated_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"gateway": {"auth": {"rateLimit": {"maxAttempts": 2, "exemptLoopback": False}}}}
    monkeypatch.setattr("tests.gateway.http.api_support.api_config", _merged(config))
    with api_gateway(tmp_path, monkeypatch) as (gw, _):
        url = f"{gw.http}/v1/chat/completions"
        for _ in range(2):
            _error(httpx.post(url, json=_chat(), headers=_auth("nope")), 401)
        err = _error(httpx.post(url, json=_chat(), headers=_auth("nope")), 429)
        assert err["type"] == "rate_limited"


def _merged(extra: dict[str, Any]) -> Any:
    from tests.gateway.http import api_support

    base = api_support.api_config

    def config(**kw: Any) -> dict[str, Any]:
        merged = base(**kw)
        merged["gateway"] = {**merged["gateway"], **extra["gateway"]}
        return merged

    return config


# -- the client going away aborts the run ------------------------------------------------------------------


async def test_client_disconnect_mid_stream_aborts_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = asyncio.Event()  # never set: the model "thinks" until the run is aborted
    with api_gateway(tmp_path, monkeypatch, [Gate(gate, Reply(LONG))]) as (gw, _):
        async with httpx.AsyncClient(timeout=10) as http:
            req = http.build_request("POST", f"{gw.http}/v1/chat/completions", json=_chat(stream=True), headers=_auth())
            resp = await http.send(req, stream=True)
            assert resp.status_code == 200
            assert resp.headers["content-type"] == "text/event-stream; charset=utf-8"
            lines = resp.aiter_lines()
            first = await anext(lines)
            chunk = json.loads(first.removeprefix("data: "))
            assert chunk["choices"][0]["delta"]["role"] == "assistant"
            await resp.aclose()
        run_id = chunk["id"]
        record = await asyncio.to_thread(
            wait_for, lambda: (r := gw.gateway.journal.get(run_id)) is not None and r.terminal and r
        )
        assert record.status == "aborted"
        assert gw.gateway.runtime.runs.by_run_id(run_id) is None


def _runs_of(gw: Any, session_key: str) -> list[tuple[str, str]]:
    """(kind, status) of the session's runs that have ended, read from the journal file itself."""
    db = sqlite3.connect(f"file:{gw.paths.state_dir / 'runs.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT kind, status FROM runs WHERE session_key=? ORDER BY accepted_at", (session_key,))
        return [(k, st) for k, st in rows.fetchall() if st not in ("accepted", "running")]
    finally:
        db.close()


async def test_client_disconnect_while_waiting_aborts_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = asyncio.Event()
    with api_gateway(tmp_path, monkeypatch, [Gate(gate, Reply("late"))]) as (gw, _):
        with pytest.raises(httpx.ReadTimeout):
            async with httpx.AsyncClient(timeout=httpx.Timeout(5, read=0.5)) as http:
                await http.post(f"{gw.http}/v1/chat/completions", json=_chat(user="waiter"), headers=_auth())
        records = await asyncio.to_thread(wait_for, lambda: _runs_of(gw, "agent:main:openai-user:waiter"))
        assert records == [("openai", "aborted")]


async def test_operators_see_api_runs_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A WebSocket operator (the Control UI) sees the session appear and the reply as `chat` events."""
    with api_gateway(tmp_path, monkeypatch, [Reply("seen by operators")]) as (gw, _):
        ws = await open_client(gw.url)
        assert (await ws.handshake(TEST_TOKEN))["ok"]
        assert (await ws.request("sessions.subscribe"))["ok"]
        r = await asyncio.to_thread(
            httpx.post, f"{gw.http}/v1/chat/completions", json=_chat(user="bob"), headers=_auth(), timeout=20
        )
        assert r.status_code == 200
        changed = await ws.event("sessions.changed")
        assert changed["payload"]["sessionKey"] == "agent:main:openai-user:bob"
        assert changed["payload"]["reason"] == "create"
        while (final := await ws.event("chat"))["payload"]["state"] != "final":
            pass
        assert final["payload"]["message"]["content"][0]["text"] == "seen by operators"
        assert final["payload"]["runId"] == r.json()["id"]
