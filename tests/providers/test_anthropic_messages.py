"""The anthropic-messages adapter against the loopback fake server and httpx.MockTransport."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
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
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from homarus.providers.anthropic_messages import AnthropicMessagesProvider, wire_tool_id
from homarus.providers.classify import classify_failure, is_context_overflow, is_retryable
from tests.fakes import FakeLLM, Garbage, HttpError, Reply
from tests.providers.streams import final, summarise

API = "anthropic-messages"
KEY = "sk-ant-test-secret-0123456789"
TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]


@pytest.fixture
async def provider() -> AsyncIterator[AnthropicMessagesProvider]:
    p = AnthropicMessagesProvider("fake", ProviderConfig(api=API))
    yield p
    await p.aclose()


def model(base_url: str, **kw: Any) -> ModelInfo:
    return ModelInfo("fake", "claude-fake", API, base_url, **kw)


async def run(
    p: AnthropicMessagesProvider, base_url: str, context: Context | None = None, **opts: Any
) -> list[StreamEvent]:
    ctx = context or Context("You are terse.", [UserMessage("hi")])
    return [e async for e in p.stream(model(base_url), ctx, StreamOptions(**opts))]


# -- golden event sequences ------------------------------------------------------------------------
async def test_plain_text(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("Hello, world!"))
    events = await run(provider, llm.base_url)
    assert summarise(events) == [("text", 0, "Hello, w"), ("text", 0, "orld!"), ("done", "stop")]
    assert final(events).text == "Hello, world!"
    assert llm.requests[0].path == "/v1/messages"


async def test_base_url_without_v1(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    await run(provider, llm.base_url.removesuffix("/v1"))
    assert llm.requests[0].path == "/v1/messages"


async def test_thinking_with_signature(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("42", thinking="Let me think"))
    events = await run(provider, llm.base_url)
    assert summarise(events) == [
        ("thinking", 0, "Let me t"),
        ("thinking", 0, "hink"),
        ("text", 1, "42"),
        ("done", "stop"),
    ]
    assert final(events).content == [ThinkingContent("Let me think", "fake-signature"), TextContent("42")]


async def test_one_tool_call_with_split_arguments(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply(tool_calls=[("read", {"path": "notes.txt"})], chunk_chars=6))
    events = await run(provider, llm.base_url, Context("", [UserMessage("read it")], TOOLS))
    assert summarise(events) == [
        ("start", 0, "toolu_fake_0001", "read"),
        ("args", 0, '{"path'),
        ("args", 0, '": "no'),
        ("args", 0, "tes.tx"),
        ("args", 0, 't"}'),
        ("end", 0, {"path": "notes.txt"}),
        ("done", "toolUse"),
    ]


async def test_two_parallel_tool_calls_after_text(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("ok", tool_calls=[("read", {"path": "a"}), ("read", {})], chunk_chars=100))
    events = await run(provider, llm.base_url, Context("", [UserMessage("both")], TOOLS))
    assert summarise(events) == [
        ("text", 0, "ok"),
        ("start", 1, "toolu_fake_0001", "read"),
        ("args", 1, '{"path": "a"}'),
        ("end", 1, {"path": "a"}),
        ("start", 2, "toolu_fake_0002", "read"),
        ("args", 2, "{}"),
        ("end", 2, {}),
        ("done", "toolUse"),
    ]


async def test_broken_arguments_set_parse_error(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply(tool_calls=[("read", {})], raw_arguments=['{"path": ']))
    (call,) = final(await run(provider, llm.base_url)).tool_calls
    assert call.arguments == {} and call.parse_error is not None and "invalid JSON" in call.parse_error


async def test_usage_and_cost(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("x", input_tokens=1000, output_tokens=500, cached_tokens=200))
    ctx = Context("", [UserMessage("hi")])
    info = model(llm.base_url, cost=(3.0, 15.0, 0.3, 3.75))
    usage = final([e async for e in provider.stream(info, ctx, StreamOptions())]).usage
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


async def test_non_streamed_body_gives_the_same_events(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("Hello", thinking="hm", tool_calls=[("read", {"path": "a"})], stream=False, output_tokens=9))
    events = await run(provider, llm.base_url)
    assert summarise(events) == [
        ("thinking", 0, "hm"),
        ("text", 1, "Hello"),
        ("start", 2, "toolu_fake_0001", "read"),
        ("end", 2, {"path": "a"}),
        ("done", "toolUse"),
    ]
    msg = final(events)
    assert msg.usage.output == 9 and msg.content[0] == ThinkingContent("hm", "fake-signature")


@pytest.mark.parametrize(
    ("wire", "reason"), [("max_tokens", "length"), ("stop_sequence", "stop"), ("end_turn", "stop")]
)
async def test_stop_reasons(llm: FakeLLM, provider: AnthropicMessagesProvider, wire: str, reason: str) -> None:
    llm.push(Reply("cut", stop=wire))
    assert summarise(await run(provider, llm.base_url))[-1] == ("done", reason)


async def test_refusal_is_an_error(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("no", stop="refusal"))
    events = await run(provider, llm.base_url)
    assert summarise(events)[-1] == ("error", "error", None)
    assert final(events).error_message == "the provider stopped the response (refusal)"


# -- errors ------------------------------------------------------------------------------------------
async def test_401(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(HttpError(401, "invalid x-api-key"))
    events = await run(provider, llm.base_url, api_key=KEY)
    assert summarise(events) == [("error", "error", 401)]
    msg = final(events)
    assert msg.error_message == "HTTP 401: invalid x-api-key (authentication_error)"
    assert classify_failure(401, msg.error_message) == "auth"


async def test_429_with_retry_after(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(HttpError(429, "Number of request tokens has exceeded your rate limit", retry_after="7"))
    (event,) = await run(provider, llm.base_url)
    assert isinstance(event, StreamError) and event.status == 429 and event.retry_after_s == 7.0
    assert classify_failure(429, event.message.error_message) == "rate_limit"
    assert is_retryable(event.message.error_message, 429)


async def test_500(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(HttpError(500, "Internal server error"))
    (event,) = await run(provider, llm.base_url)
    assert isinstance(event, StreamError) and event.status == 500
    assert event.message.error_message == "HTTP 500: Internal server error (api_error)"
    assert is_retryable(event.message.error_message, 500)


async def test_529_overloaded(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(HttpError(529, "Overloaded"))
    (event,) = await run(provider, llm.base_url)
    assert isinstance(event, StreamError) and event.status == 529
    assert event.message.error_message == "HTTP 529: Overloaded (overloaded_error)"
    assert classify_failure(529, event.message.error_message) == "overloaded"


async def test_context_overflow_body(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(HttpError(400, "prompt is too long: 213462 tokens > 200000 maximum"))
    (event,) = await run(provider, llm.base_url)
    assert isinstance(event, StreamError)
    err = event.message.error_message
    assert is_context_overflow(err, event.status, stop_reason="error", input_tokens=0, context_window=200_000)
    assert classify_failure(event.status, err) == "context_overflow" and not is_retryable(err, event.status)


async def test_timeout(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("late", delay_s=5))
    start = time.monotonic()
    events = await run(provider, llm.base_url, timeout_s=0.2)
    assert time.monotonic() - start < 2
    assert summarise(events) == [("error", "error", None)]
    assert final(events).error_message == "request timed out after 0.2s"


async def test_dropped_connection(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("Hello there, this is cut", drop_after=5))  # message_start, ping, block start, 2 deltas
    events = await run(provider, llm.base_url)
    assert summarise(events) == [("text", 0, "Hello th"), ("text", 0, "ere, thi"), ("error", "error", None)]
    err = final(events).error_message
    assert err is not None and "other side closed" in err and is_retryable(err, None)


@pytest.mark.parametrize(
    ("garbage", "expected"),
    [
        (Garbage(), "stream ended before the response was complete (no message_stop)"),
        (Garbage(b"event: message_start\ndata: {oops\n\n"), "malformed event-stream data: {oops"),
        (Garbage(b"<html>bad gateway</html>", "text/html"), "unexpected response body (text/html): <html>"),
    ],
)
async def test_garbage(llm: FakeLLM, provider: AnthropicMessagesProvider, garbage: Garbage, expected: str) -> None:
    llm.push(garbage)
    events = await run(provider, llm.base_url)
    assert summarise(events) == [("error", "error", None)]
    err = final(events).error_message
    assert err is not None and err.startswith(expected)


async def test_abort_mid_stream(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
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
    assert time.monotonic() - start < 0.2
    assert summarise(events) == [("text", 0, "one two "), ("error", "aborted", None)]
    assert final(events).content == [TextContent("one two ")]


async def test_abort_while_waiting_for_the_head(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    llm.push(Reply("late", delay_s=5))
    abort = asyncio.Event()
    asyncio.get_running_loop().call_later(0.1, abort.set)
    start = time.monotonic()
    events = await run(provider, llm.base_url, abort=abort)
    assert time.monotonic() - start < 1
    assert summarise(events) == [("error", "aborted", None)]


# -- the request ------------------------------------------------------------------------------------
async def test_request_body_mapping(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    foreign = "call_abc|fc_" + "x" * 80  # an OpenAI Responses id: too long and with a "|"
    history: list[Message] = [
        UserMessage("look"),
        UserMessage([TextContent("and this"), ImageContent("aGk=", "image/png")]),
        AssistantMessage(
            [
                ThinkingContent("signed", "sig"),
                ThinkingContent("from another model"),
                TextContent("on it"),
                ToolCall(foreign, "read", {"path": "a"}),
                ToolCall("toolu_2", "read", {"path": "b"}),
            ]
        ),
        ToolResultMessage(foreign, "read", [TextContent("contents")]),
        ToolResultMessage("toolu_2", "read", [TextContent("boom")], is_error=True),
        UserMessage("thanks"),
    ]
    await run(provider, llm.base_url, Context("Be brief.", history, TOOLS), max_tokens=123, temperature=0.5)
    body = llm.requests[0].json
    wire = wire_tool_id(foreign)
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", wire) and wire.startswith("call_abc_fc_xxx")
    assert body["model"] == "claude-fake" and body["stream"] is True
    assert body["max_tokens"] == 123 and body["temperature"] == 0.5 and body["system"] == "Be brief."
    assert body["tools"] == [{"name": "read", "description": "Read a file", "input_schema": TOOLS[0].parameters}]
    assert body["messages"] == [
        {"role": "user", "content": "look"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed", "signature": "sig"},
                {"type": "text", "text": "from another model"},
                {"type": "text", "text": "on it"},
                {"type": "tool_use", "id": wire, "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": wire, "content": [{"type": "text", "text": "contents"}]},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "boom"}],
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": "thanks"},
    ]


def test_wire_tool_id() -> None:
    assert wire_tool_id("toolu_01ABC-x") == "toolu_01ABC-x"
    assert wire_tool_id("a.b") != wire_tool_id("a:b")  # distinct ids stay distinct after sanitising
    assert wire_tool_id("a.b") == wire_tool_id("a.b")
    for raw in ("", "|||", "x" * 65, "call 1", "ünïcode"):
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", wire_tool_id(raw)), raw
    assert wire_tool_id("x" * 64) == "x" * 64


async def test_headers_key_version_and_no_leak(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    info = ModelInfo("fake", "claude-fake", API, llm.base_url, headers=(("anthropic-beta", "x"),))
    ctx = Context("", [UserMessage("hi")])
    _ = [e async for e in provider.stream(info, ctx, StreamOptions(api_key=KEY))]
    _ = [e async for e in provider.stream(info, ctx, StreamOptions())]
    with_key, without = llm.requests
    assert with_key.headers["x-api-key"] == KEY and with_key.headers["anthropic-version"] == "2023-06-01"
    assert with_key.headers["anthropic-beta"] == "x" and "authorization" not in with_key.headers
    assert "x-api-key" not in without.headers and without.headers["anthropic-version"] == "2023-06-01"
    assert KEY.encode() not in without.body and KEY not in json.dumps(without.headers)
    assert "system" not in without.json and "tools" not in without.json and without.json["max_tokens"] == 8192


async def test_thinking_budget(llm: FakeLLM, provider: AnthropicMessagesProvider) -> None:
    ctx = Context("", [UserMessage("hi")])
    opts = StreamOptions(reasoning="medium", temperature=0.3, max_tokens=4000)
    _ = [e async for e in provider.stream(model(llm.base_url, reasoning=True), ctx, opts)]
    body = llm.requests[0].json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] == 8192 + 1024 and "temperature" not in body


# -- MockTransport ------------------------------------------------------------------------------------
def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


START = {"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_creation_input_tokens": 4}}}


async def _mock(body: bytes, split: int | None = None) -> list[StreamEvent]:
    async def chunks() -> AsyncIterator[bytes]:
        size = split or len(body)
        for i in range(0, len(body), size):
            yield body[i : i + size]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunks())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = AnthropicMessagesProvider("mock", ProviderConfig(api=API), client=client)
        ctx = Context("", [UserMessage("hi")])
        return [e async for e in p.stream(model("http://mock"), ctx, StreamOptions())]


async def test_overloaded_error_event_mid_stream() -> None:
    body = _sse(
        START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hé"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    events = await _mock(body, split=3)
    assert summarise(events) == [("text", 0, "hé"), ("error", "error", 529)]
    err = final(events).error_message
    assert err == "Overloaded (overloaded_error)" and classify_failure(529, err) == "overloaded"


async def test_cumulative_usage_redacted_thinking_and_no_message_stop() -> None:
    body = _sse(
        START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "x"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "hi"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
    )
    events = await _mock(body)
    assert summarise(events) == [("text", 0, "hi"), ("done", "stop")]
    usage = final(events).usage
    assert (usage.input, usage.output, usage.cache_write, usage.total_tokens) == (10, 3, 4, 17)


async def test_stream_cut_before_any_stop_is_an_error() -> None:
    body = _sse(START, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "a"}})
    events = await _mock(body)
    assert summarise(events) == [("text", 0, "a"), ("error", "error", None)]
