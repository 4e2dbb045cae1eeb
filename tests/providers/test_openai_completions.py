"""The openai-completions adapter against the loopback fake server and httpx.MockTransport."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx
import pytest

from homarus.config.models import ProviderConfig
from homarus.messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    ModelInfo,
    StreamError,
    StreamEvent,
    StreamOptions,
    TextContent,
    TextDelta,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from homarus.providers.classify import classify_failure, is_context_overflow, is_retryable
from homarus.providers.openai_completions import OpenAICompletionsProvider
from tests.fakes import FakeLLM, Garbage, HttpError, Reply, run_fake_llm
from tests.providers.streams import final, summarise

API = "openai-completions"
KEY = "sk-test-secret-0123456789"
TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]


@pytest.fixture
async def provider() -> AsyncIterator[OpenAICompletionsProvider]:
    p = OpenAICompletionsProvider("fake", ProviderConfig(api=API))
    yield p
    await p.aclose()


def model(base_url: str, **kw: Any) -> ModelInfo:
    return ModelInfo("fake", "fake-model", API, base_url, **kw)


async def run(
    p: OpenAICompletionsProvider, base_url: str, context: Context | None = None, **opts: Any
) -> list[StreamEvent]:
    ctx = context or Context("You are terse.", [UserMessage("hi")])
    return [e async for e in p.stream(model(base_url), ctx, StreamOptions(**opts))]


# -- golden event sequences ------------------------------------------------------------------------
async def test_plain_text(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("Hello, world!"))
    events = await run(provider, llm.base_url)
    assert summarise(events) == [("text", 0, "Hello, w"), ("text", 0, "orld!"), ("done", "stop")]
    msg = final(events)
    assert msg.text == "Hello, world!" and (msg.api, msg.provider, msg.model) == (API, "fake", "fake-model")


async def test_thinking_then_text(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("42", thinking="Let me think"))
    events = await run(provider, llm.base_url)
    assert summarise(events) == [
        ("thinking", 0, "Let me t"),
        ("thinking", 0, "hink"),
        ("text", 1, "42"),
        ("done", "stop"),
    ]
    assert final(events).content == [ThinkingContent("Let me think"), TextContent("42")]


async def test_one_tool_call_with_split_arguments(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply(tool_calls=[("read", {"path": "notes.txt"})], chunk_chars=6))
    events = await run(provider, llm.base_url, Context("", [UserMessage("read it")], TOOLS))
    assert summarise(events) == [
        ("start", 0, "call_fake_0001", "read"),
        ("args", 0, '{"path'),
        ("args", 0, '": "no'),
        ("args", 0, "tes.tx"),
        ("args", 0, 't"}'),
        ("end", 0, {"path": "notes.txt"}),
        ("done", "toolUse"),
    ]
    assert final(events).tool_calls == [ToolCall("call_fake_0001", "read", {"path": "notes.txt"})]


async def test_two_parallel_tool_calls_after_text(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("ok", tool_calls=[("read", {"path": "a"}), ("read", {"path": "b"})], chunk_chars=100))
    events = await run(provider, llm.base_url, Context("", [UserMessage("both")], TOOLS))
    assert summarise(events) == [
        ("text", 0, "ok"),
        ("start", 1, "call_fake_0001", "read"),
        ("args", 1, '{"path": "a"}'),
        ("end", 1, {"path": "a"}),
        ("start", 2, "call_fake_0002", "read"),
        ("args", 2, '{"path": "b"}'),
        ("end", 2, {"path": "b"}),
        ("done", "toolUse"),
    ]


async def test_broken_arguments_set_parse_error(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply(tool_calls=[("read", {}), ("read", {})], raw_arguments=['{"path": ', "[1]"]))
    msg = final(await run(provider, llm.base_url))
    first, second = msg.tool_calls
    assert first.arguments == {} and first.parse_error and "invalid JSON" in first.parse_error
    assert second.arguments == {} and second.parse_error == "tool arguments must be a JSON object"
    assert msg.stop_reason == "toolUse"


async def test_usage_and_cost(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("x", input_tokens=1000, output_tokens=500, cached_tokens=200))
    ctx = Context("", [UserMessage("hi")])
    events = [e async for e in provider.stream(model(llm.base_url, cost=(3.0, 15.0, 0.3, 3.75)), ctx, StreamOptions())]
    usage = final(events).usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens) == (
        1000,
        500,
        200,
        0,
        1700,
    )
    assert usage.cost.input == pytest.approx(0.003)
    assert usage.cost.output == pytest.approx(0.0075)
    assert usage.cost.cache_read == pytest.approx(0.00006)
    assert usage.cost.total == pytest.approx(0.01056)


async def test_non_streamed_body_gives_the_same_events(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("Hello, world!", thinking="hm", tool_calls=[("read", {"path": "a"})], stream=False))
    events = await run(provider, llm.base_url)
    assert summarise(events) == [
        ("thinking", 0, "hm"),
        ("text", 1, "Hello, world!"),
        ("start", 2, "call_fake_0001", "read"),
        ("args", 2, '{"path": "a"}'),
        ("end", 2, {"path": "a"}),
        ("done", "toolUse"),
    ]
    assert final(events).usage.output == 5


@pytest.mark.parametrize(("wire", "reason"), [("length", "length"), ("stop", "stop"), ("eos", "stop")])
async def test_finish_reasons(llm: FakeLLM, provider: OpenAICompletionsProvider, wire: str, reason: str) -> None:
    llm.push(Reply("cut", stop=wire))
    assert summarise(await run(provider, llm.base_url))[-1] == ("done", reason)


async def test_content_filter_is_an_error(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("partial", stop="content_filter"))
    events = await run(provider, llm.base_url)
    assert summarise(events)[-1] == ("error", "error", None)
    assert final(events).error_message == "the provider stopped the response (content_filter)"


# -- errors ------------------------------------------------------------------------------------------
async def test_401(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(HttpError(401, "Incorrect API key provided"))
    events = await run(provider, llm.base_url, api_key=KEY)
    assert summarise(events) == [("error", "error", 401)]
    msg = final(events)
    assert msg.error_message == "HTTP 401: Incorrect API key provided (authentication_error)"
    assert classify_failure(401, msg.error_message) == "auth"
    assert not is_retryable(msg.error_message, 401)


async def test_429_with_retry_after(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(HttpError(429, "Rate limit reached", retry_after="2"))
    (event,) = await run(provider, llm.base_url)
    assert isinstance(event, StreamError) and event.status == 429 and event.retry_after_s == 2.0
    assert is_retryable(event.message.error_message, 429)
    assert classify_failure(429, event.message.error_message) == "rate_limit"


@pytest.mark.parametrize(("status", "reason"), [(500, "unknown"), (529, "overloaded"), (503, "overloaded")])
async def test_server_errors(llm: FakeLLM, provider: OpenAICompletionsProvider, status: int, reason: str) -> None:
    llm.push(HttpError(status, "try later"))
    (event,) = await run(provider, llm.base_url)
    assert isinstance(event, StreamError) and event.status == status and event.retry_after_s is None
    assert is_retryable(event.message.error_message, status)
    assert classify_failure(status, event.message.error_message) == reason


async def test_context_overflow_body(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    text = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
    llm.push(HttpError(400, text, type="invalid_request_error"))
    (event,) = await run(provider, llm.base_url)
    assert isinstance(event, StreamError)
    err = event.message.error_message
    assert is_context_overflow(err, event.status, stop_reason="error", input_tokens=0, context_window=8192)
    assert not is_retryable(err, event.status)


async def test_empty_413_is_overflow(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(HttpError(413, body=b""))
    (event,) = await run(provider, llm.base_url)
    assert isinstance(event, StreamError) and event.message.error_message == "HTTP 413 (no body)"
    assert classify_failure(event.status, event.message.error_message) == "context_overflow"


async def test_timeout_before_the_head(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("late", delay_s=5))
    start = time.monotonic()
    events = await run(provider, llm.base_url, timeout_s=0.3)
    assert time.monotonic() - start < 2
    assert summarise(events) == [("error", "error", None)]
    assert final(events).error_message == "request timed out after 0.3s"


async def test_timeout_mid_stream_keeps_the_partial_text(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("a long trickling answer", chunk_delay_s=0.2))
    events = await run(provider, llm.base_url, timeout_s=0.5)
    assert summarise(events)[0] == ("text", 0, "a long t")
    msg = final(events)
    assert msg.stop_reason == "error" and msg.error_message == "request timed out after 0.5s"


async def test_dropped_connection(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("Hello there, this is cut", drop_after=3))
    events = await run(provider, llm.base_url)
    assert summarise(events) == [("text", 0, "Hello th"), ("text", 0, "ere, thi"), ("error", "error", None)]
    err = final(events).error_message
    assert err is not None and err.startswith("connection closed mid-response (other side closed)")
    assert is_retryable(err, None)


@pytest.mark.parametrize(
    ("garbage", "expected"),
    [
        (Garbage(), "stream ended before the response was complete"),
        (Garbage(b"data: {not json\n\n"), "malformed event-stream data: {not json"),
        (Garbage(b"<html>502</html>", "text/html"), "unexpected response body (text/html): <html>502</html>"),
        (Garbage(b"", "application/json"), "unexpected response body (application/json): (empty)"),
    ],
)
async def test_garbage(llm: FakeLLM, provider: OpenAICompletionsProvider, garbage: Garbage, expected: str) -> None:
    llm.push(garbage)
    events = await run(provider, llm.base_url)
    assert summarise(events) == [("error", "error", None)]
    err = final(events).error_message
    assert err is not None and err.startswith(expected)


async def test_abort_mid_stream(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("one two three four five six", chunk_delay_s=0.3))
    abort = asyncio.Event()
    events: list[StreamEvent] = []
    start = 0.0
    async for event in provider.stream(
        model(llm.base_url), Context("", [UserMessage("go")]), StreamOptions(abort=abort)
    ):
        events.append(event)
        if not abort.is_set():
            abort.set()
            start = time.monotonic()
    assert time.monotonic() - start < 0.2  # no waiting for the next chunk
    assert summarise(events) == [("text", 0, "one two "), ("error", "aborted", None)]
    assert final(events).error_message == "aborted"


async def test_consumer_breaking_early_closes_the_stream(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(Reply("a long answer that nobody reads", chunk_delay_s=0.05), Reply("next"))
    ctx = Context("", [UserMessage("go")])
    events = provider.stream(model(llm.base_url), ctx, StreamOptions())
    assert isinstance(events, AsyncGenerator)
    async with contextlib.aclosing(events):
        async for event in events:
            assert isinstance(event, TextDelta)
            break
    assert final(await run(provider, llm.base_url)).text == "next"


async def test_abort_before_start(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    abort = asyncio.Event()
    abort.set()
    assert summarise(await run(provider, llm.base_url, abort=abort)) == [("error", "aborted", None)]


async def test_connection_refused(provider: OpenAICompletionsProvider) -> None:
    with run_fake_llm() as fake:
        dead = fake.base_url
    events = await run(provider, dead)
    err = final(events).error_message
    assert err is not None and err.startswith("connection error:") and is_retryable(err, None)


# -- the request ------------------------------------------------------------------------------------
async def test_request_body_mapping(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    history: list[Message] = [
        UserMessage("look"),
        UserMessage([TextContent("and this"), ImageContent("aGk=", "image/png")]),
        AssistantMessage([ThinkingContent("hidden"), TextContent("on it"), ToolCall("call_1", "read", {"path": "a"})]),
        ToolResultMessage("call_1", "read", [TextContent("contents")]),
        AssistantMessage([ToolCall("call_2", "read", {"path": "img"})]),
        ToolResultMessage("call_2", "read", [ImageContent("aW1n", "image/jpeg")], is_error=False),
        UserMessage("thanks"),
    ]
    llm.push(Reply("ok"))
    await run(provider, llm.base_url, Context("Be brief.", history, TOOLS), max_tokens=123, temperature=0.5)
    body = llm.requests[0].json
    assert llm.requests[0].path == "/v1/chat/completions"
    assert body["model"] == "fake-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 123 and body["temperature"] == 0.5
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a file", "parameters": TOOLS[0].parameters},
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "look"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
        {
            "role": "assistant",
            "content": "on it",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "contents"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": '{"path": "img"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "(see the attached image)"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images from tool results:"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,aW1n"}},
            ],
        },
        {"role": "user", "content": "thanks"},
    ]


async def test_tools_key_only_when_needed(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    await run(provider, llm.base_url, Context("", [UserMessage("hi")]))
    history: list[Message] = [
        AssistantMessage([ToolCall("c1", "read", {})]),
        ToolResultMessage("c1", "read", [TextContent("x")]),
    ]
    await run(provider, llm.base_url, Context("", history))
    first, second = (r.json for r in llm.requests)
    assert "tools" not in first and first["max_tokens"] == 8192
    assert first["messages"] == [{"role": "user", "content": "hi"}]  # no system message when the prompt is empty
    assert second["tools"] == []


async def test_headers_key_and_no_leak(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    info = ModelInfo("fake", "fake-model", API, llm.base_url, headers=(("X-Extra", "1"),))
    ctx = Context("", [UserMessage("hi")])
    _ = [e async for e in provider.stream(info, ctx, StreamOptions(api_key=KEY))]
    _ = [e async for e in provider.stream(info, ctx, StreamOptions())]
    with_key, without = llm.requests
    assert with_key.headers["authorization"] == f"Bearer {KEY}" and with_key.headers["x-extra"] == "1"
    assert "authorization" not in without.headers and without.headers["x-extra"] == "1"
    assert KEY.encode() not in without.body and KEY not in json.dumps(without.headers)


async def test_key_echoed_in_an_error_is_scrubbed(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    llm.push(HttpError(401, f"key {KEY} is not valid"))
    events = await run(provider, llm.base_url, api_key=KEY)
    assert final(events).error_message == "HTTP 401: key *** is not valid (authentication_error)"


async def test_reasoning_effort_only_for_reasoning_models(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    ctx = Context("", [UserMessage("hi")])
    _ = [e async for e in provider.stream(model(llm.base_url, reasoning=True), ctx, StreamOptions(reasoning="xhigh"))]
    _ = [e async for e in provider.stream(model(llm.base_url), ctx, StreamOptions(reasoning="high"))]
    assert llm.requests[0].json["reasoning_effort"] == "high"
    assert "reasoning_effort" not in llm.requests[1].json


async def test_echo_when_the_queue_is_empty(llm: FakeLLM, provider: OpenAICompletionsProvider) -> None:
    assert final(await run(provider, llm.base_url, Context("", [UserMessage("ping me")]))).text == "ping me"


# -- MockTransport: byte-level stream shapes --------------------------------------------------------
def _sse(*chunks: dict[str, Any] | str) -> bytes:
    return b"".join(f"data: {c if isinstance(c, str) else json.dumps(c)}\r\n\r\n".encode() for c in chunks)


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def _mock(body: bytes, *, split: int | None = None, status: int = 200) -> list[StreamEvent]:
    async def chunks() -> AsyncIterator[bytes]:
        size = split or len(body) or 1
        for i in range(0, len(body), size):
            yield body[i : i + size]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": "text/event-stream"}, content=chunks())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = OpenAICompletionsProvider("mock", ProviderConfig(api=API), client=client)
        ctx = Context("", [UserMessage("hi")])
        return [e async for e in p.stream(model("http://mock/v1"), ctx, StreamOptions())]


async def test_one_byte_chunks_with_utf8_and_usage_on_the_choice() -> None:
    body = _sse(
        _delta({"role": "assistant", "content": "héllo "}),
        _delta({"reasoning": "🦞 thought"}),
        _delta({"content": "wörld"}),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": {"prompt_tokens": 7}}]},
        "[DONE]",
    )
    events = await _mock(body, split=1)
    msg = final(events)
    assert msg.content == [TextContent("héllo "), ThinkingContent("🦞 thought"), TextContent("wörld")]
    assert msg.stop_reason == "stop" and msg.usage.input == 7


async def test_finish_reason_without_done_is_fine_but_neither_is_an_error() -> None:
    assert summarise(await _mock(_sse(_delta({"content": "a"}, "stop"))))[-1] == ("done", "stop")
    events = await _mock(_sse(_delta({"content": "a"})))
    assert summarise(events)[-1] == ("error", "error", None)
    assert final(events).error_message == "stream ended before the response was complete (no finish_reason)"


async def test_in_stream_error_chunk() -> None:
    body = _sse(_delta({"content": "a"}), {"error": {"message": "Internal server error", "code": 502}})
    events = await _mock(body)
    assert summarise(events) == [("text", 0, "a"), ("error", "error", 502)]
    assert final(events).error_message == "Internal server error (502)"


async def test_missing_tool_call_id_is_synthesised_and_stop_with_calls_means_tool_use() -> None:
    body = _sse(
        _delta({"tool_calls": [{"index": 0, "function": {"name": "read", "arguments": '{"pa'}}]}),
        _delta({"tool_calls": [{"index": 0, "function": {"arguments": 'th": 1}'}}]}),
        _delta({}, "stop"),
        "[DONE]",
    )
    msg = final(await _mock(body, split=5))
    (call,) = msg.tool_calls
    assert call.id.startswith("call_") and len(call.id) == 29 and call.arguments == {"path": 1}
    assert msg.stop_reason == "toolUse"


# -- the fake server itself ---------------------------------------------------------------------------
async def test_fake_server_models_unknown_routes_and_recording(llm: FakeLLM) -> None:
    async with httpx.AsyncClient() as client:
        listing = await client.get(f"{llm.base_url}/models")
        missing = await client.post(f"{llm.base_url}/embeddings", json={"input": "x"})
        plain = await client.post(
            f"{llm.base_url}/chat/completions", json={"messages": [{"role": "user", "content": "yo"}]}
        )
    assert listing.json()["data"][0]["id"] == "fake-model"
    assert missing.status_code == 404
    assert plain.json()["choices"][0]["message"]["content"] == "yo"  # non-stream echo
    assert [(r.method, r.path) for r in llm.requests] == [
        ("GET", "/v1/models"),
        ("POST", "/v1/embeddings"),
        ("POST", "/v1/chat/completions"),
    ]
    assert llm.requests[1].json == {"input": "x"} and llm.pending == 0


def _conversation(turns: int) -> list[Any]:
    out: list[Any] = []
    for i in range(turns):
        out.append(UserMessage(f"question {i}"))
        if i % 3 == 1:  # a tool call, its result (with an image every other time), then the answer
            out.append(AssistantMessage([ToolCall(f"c{i}", "look", {"n": i})], stop_reason="toolUse"))
            blocks: list[Any] = [TextContent(f"result {i}")]
            if i % 2:
                blocks.append(ImageContent("aGk=", "image/png"))
            out.append(ToolResultMessage(f"c{i}", "look", blocks))
        out.append(AssistantMessage([TextContent(f"answer {i}")]))
    return out


def test_a_conversation_converts_only_what_its_last_request_did_not_have(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a cache, each request converts its new messages only (those re-read from the transcript
    are new objects too), and its body is byte for byte the one built without the cache."""
    import copy

    from homarus.providers import openai_completions as oc

    converted: list[Any] = []
    wire = oc._wire

    def counted(m: Any) -> Any:
        converted.append(m)
        return wire(m)

    monkeypatch.setattr(oc, "_wire", counted)
    history = _conversation(12)
    cache: dict[str, Any] = {}
    model = ModelInfo(id="m", provider="p", api="openai-completions")
    for turn in range(len(history) - 4):
        # the previous request's tail comes back re-read (new objects); one new message each time
        messages = [*history[:turn], *copy.deepcopy(history[turn : turn + 4])]
        converted.clear()
        body = oc.build_body(model, Context("system", messages, [], cache), StreamOptions())
        fresh = len(converted)
        assert body == oc.build_body(model, Context("system", messages, []), StreamOptions())
        # the shared history is taken as it was: the re-read message and the 4 after it, two more
        # when the cut falls right after a tool result whose image is placed after it
        assert fresh <= 7 if turn else fresh == len(messages)
    # a history replaced from the start (a compaction) is converted whole
    converted.clear()
    oc.build_body(model, Context("system", copy.deepcopy(history), [], cache), StreamOptions())
    assert len(converted) == len(history)
