"""A fake LLM server on 127.0.0.1 that speaks OpenAI Chat Completions and Anthropic Messages.

Plain ``asyncio.start_server`` in a background thread (own event loop), so it works from sync and
async tests alike and gives byte-level control: chunked SSE, delays, dropped connections, garbage.

    from tests.fakes import HttpError, Reply, run_fake_llm

    with run_fake_llm() as llm:
        llm.push(Reply("Hello!"), Reply(tool_calls=[("read", {"path": "a.txt"})]), HttpError(429, retry_after="2"))
        # provider config: {"api": "openai-completions", "baseUrl": llm.base_url, "models": [{"id": "fake-model"}]}
        #              or: {"api": "anthropic-messages", "baseUrl": llm.base_url, ...}  (same URL works)
        ...
        assert llm.requests[0].json["messages"][-1]["content"] == "hi"

Endpoints: ``POST /v1/chat/completions`` (SSE when ``stream`` is true, else one JSON body),
``POST /v1/messages`` (Anthropic SSE or JSON), ``GET /v1/models``. Every request (also to unknown
paths) is recorded in ``requests`` with its lower-cased headers and parsed JSON body. Each model
request consumes one pushed step; with an empty queue the server echoes the last user message text.
Each response closes its connection, so a dropped stream never poisons a pooled connection.
``respond`` (a function of the request) answers before the queue, for concurrent sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from tests.fakes.http_wire import read_request

__all__ = ["FakeLLM", "Garbage", "HttpError", "RecordedRequest", "Reply", "Step", "run_fake_llm"]


@dataclass
class Reply:
    """A successful answer, streamed as SSE when the client asked for streaming."""

    text: str = ""
    thinking: str | None = None
    #: (name, arguments) per call; ids are ``call_fake_0001``.. (OpenAI) / ``toolu_fake_0001``.. (Anthropic)
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: raw argument JSON per call instead of ``json.dumps(arguments)`` (to send broken JSON)
    raw_arguments: list[str] | None = None
    #: token counts; defaults: ceil(request bytes / 4) and ceil(len(text) / 4) + 1
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int = 0
    usage: bool = True
    #: wire stop reason override, e.g. "length" (OpenAI) or "max_tokens" (Anthropic)
    stop: str | None = None
    chunk_chars: int = 8
    #: seconds before the response head, and between SSE events
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    #: close the connection (without the final chunk) after this many SSE events
    drop_after: int | None = None
    #: False: answer with one JSON body even when streaming was requested
    stream: bool | None = None


@dataclass
class HttpError:
    """An error response with the API's JSON error shape (or ``body`` verbatim, b"" for none)."""

    status: int
    message: str = "fake error"
    type: str | None = None
    retry_after: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    delay_s: float = 0.0


@dataclass
class Garbage:
    """Bytes that are neither JSON nor an event stream."""

    body: bytes = b"\x00\xff<html>not a model reply</html>"
    content_type: str = "text/event-stream"
    status: int = 200


Step = Reply | HttpError | Garbage


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    body: bytes


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


class FakeLLM:
    def __init__(self, models: tuple[str, ...]) -> None:
        self.models = models
        self.host = "127.0.0.1"
        self.port = 0
        self._steps: deque[Step] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        #: asked first for every model request: a step, or None for the queue (or the echo)
        self.respond: Callable[[RecordedRequest], Step | None] | None = None
        #: when set, a request without this key (``Authorization: Bearer`` or ``x-api-key``) gets a 401
        self.required_key: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def push(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._steps)

    def _next(self, request: RecordedRequest, anthropic: bool) -> Step:
        if self.respond is not None and (step := self.respond(request)) is not None:
            return step
        with self._lock:
            if self._steps:
                return self._steps.popleft()
        return Reply(_last_user_text(request.json, anthropic) or "ok")

    # -- HTTP ------------------------------------------------------------------------------------
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader)
            with self._lock:
                self._requests.append(request)
            await self._route(request, writer)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass  # the client went away or sent something that is not HTTP
        except asyncio.CancelledError:
            # server shutdown; ending normally keeps asyncio's stream callback from logging the cancel
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _route(self, req: RecordedRequest, writer: asyncio.StreamWriter) -> None:
        path = req.path.split("?")[0].removeprefix("/v1")
        if self.required_key is not None and self.required_key not in (
            req.headers.get("x-api-key"),
            req.headers.get("authorization", "").removeprefix("Bearer "),
        ):
            body: dict[str, Any] = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
            if "x-api-key" in req.headers or "anthropic-version" in req.headers:
                body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            await _send(writer, 401, "application/json", json.dumps(body).encode())
            return
        if req.method == "GET" and path == "/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
            await _send(writer, 200, "application/json", json.dumps({"object": "list", "data": data}).encode())
        elif req.method == "POST" and path in ("/chat/completions", "/messages"):
            anthropic = path == "/messages"
            await self._answer(self._next(req, anthropic), req, writer, anthropic)
        else:
            await _send(writer, 404, "application/json", b'{"error": {"message": "no such route"}}')

    async def _answer(self, step: Step, req: RecordedRequest, writer: asyncio.StreamWriter, anthropic: bool) -> None:
        if isinstance(step, Garbage):
            await _send(writer, step.status, step.content_type, step.body)
            return
        await asyncio.sleep(step.delay_s)
        if isinstance(step, HttpError):
            etype = step.type or _ERROR_TYPES.get(step.status, "api_error")
            body = step.body
            if body is None:
                err = {"type": etype, "message": step.message}
                shape = {"type": "error", "error": err} if anthropic else {"error": {**err, "code": None}}
                body = json.dumps(shape).encode()
            headers = dict(step.headers)
            if step.retry_after is not None:
                headers["retry-after"] = step.retry_after
            await _send(writer, step.status, "application/json", body, headers)
            return
        want_stream = bool(isinstance(req.json, dict) and req.json.get("stream")) and step.stream is not False
        render = _anthropic if anthropic else _openai
        events = render(step, req, want_stream, self._ids)
        if not want_stream:
            await _send(writer, 200, "application/json", json.dumps(events[0][1]).encode())
            return
        writer.write(_head(200, "text/event-stream", {"transfer-encoding": "chunked"}))
        for n, (name, data) in enumerate(events):
            if step.drop_after is not None and n >= step.drop_after:
                writer.transport.abort()
                return
            if n and step.chunk_delay_s:
                await asyncio.sleep(step.chunk_delay_s)
            payload = data if isinstance(data, str) else json.dumps(data)
            frame = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            raw = frame.encode()
            writer.write(b"%x\r\n%s\r\n" % (len(raw), raw))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()


# -- wire formats ----------------------------------------------------------------------------------
Event = tuple[str, Any]  # (SSE event name or "", JSON payload or raw string); non-stream: [("", body)]


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _tokens(step: Reply, req: RecordedRequest) -> tuple[int, int]:
    prompt = step.input_tokens if step.input_tokens is not None else math.ceil(len(req.body) / 4)
    return prompt, step.output_tokens if step.output_tokens is not None else math.ceil(len(step.text) / 4) + 1


def _args(step: Reply, i: int) -> str:
    if step.raw_arguments is not None and i < len(step.raw_arguments):
        return step.raw_arguments[i]
    return json.dumps(step.tool_calls[i][1])


def _openai(step: Reply, req: RecordedRequest, stream: bool, ids: Iterator[int]) -> list[Event]:
    model = req.json.get("model", "fake-model") if isinstance(req.json, dict) else "fake-model"
    prompt, completion = _tokens(step, req)
    usage = {
        "prompt_tokens": prompt + step.cached_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt + step.cached_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": step.cached_tokens},
    }
    calls = [(f"call_fake_{next(ids):04d}", name, _args(step, i)) for i, (name, _) in enumerate(step.tool_calls)]
    finish = step.stop or ("tool_calls" if calls else "stop")
    base = {"id": "chatcmpl-fake", "created": 0, "model": model}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
        if step.thinking:
            message["reasoning_content"] = step.thinking
        if calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in calls
            ]
        body = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        return [("", {**body, "usage": usage} if step.usage else body)]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> Event:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return ("", {**base, "object": "chat.completion.chunk", "choices": [choice]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": p}) for p in _pieces(step.thinking or "", step.chunk_chars)]
    out += [chunk({"content": p}) for p in _pieces(step.text, step.chunk_chars)]
    for i, (cid, name, args) in enumerate(calls):
        out.append(chunk({"tool_calls": [{"index": i, "id": cid, "type": "function", "function": {"name": name}}]}))
        out += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in _pieces(args, step.chunk_chars)
        ]
    out.append(chunk({}, finish))
    options = req.json.get("stream_options") if isinstance(req.json, dict) else None
    if step.usage and isinstance(options, dict) and options.get("include_usage"):
        out.append(("", {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    return [*out, ("", "[DONE]")]


def _anthropic(step: Reply, req: RecordedRequest, stream: bool, ids: Iterator[int]) -> list[Event]:
    model = req.json.get("model", "fake-model") if isinstance(req.json, dict) else "fake-model"
    prompt, completion = _tokens(step, req)
    usage = {"input_tokens": prompt, "output_tokens": completion, "cache_read_input_tokens": step.cached_tokens}
    usage["cache_creation_input_tokens"] = 0
    calls = [(f"toolu_fake_{next(ids):04d}", name, _args(step, i)) for i, (name, _) in enumerate(step.tool_calls)]
    stop = step.stop or ("tool_use" if calls else "end_turn")
    if not stream:
        content: list[dict[str, Any]] = []
        if step.thinking:
            content.append({"type": "thinking", "thinking": step.thinking, "signature": "fake-signature"})
        if step.text:
            content.append({"type": "text", "text": step.text})
        for cid, name, args in calls:
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = {}
            content.append({"type": "tool_use", "id": cid, "name": name, "input": parsed})
        body = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content}
        body |= {"stop_reason": stop, "stop_sequence": None}
        return [("", {**body, "usage": usage} if step.usage else body)]

    def ev(kind: str, **payload: Any) -> Event:
        return (kind, {"type": kind, **payload})

    start_usage = {**usage, "output_tokens": 1} if step.usage else {}
    message: dict[str, Any] = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": []}
    out = [ev("message_start", message={**message, "stop_reason": None, "usage": start_usage}), ev("ping")]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if step.thinking:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(step.thinking, step.chunk_chars)]
        deltas.append({"type": "signature_delta", "signature": "fake-signature"})
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
    if step.text:
        blocks.append(
            (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": p} for p in _pieces(step.text, step.chunk_chars)],
            )
        )
    for cid, name, args in calls:
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(args, step.chunk_chars)]
        blocks.append(({"type": "tool_use", "id": cid, "name": name, "input": {}}, deltas))
    for index, (block, deltas) in enumerate(blocks):
        out.append(ev("content_block_start", index=index, content_block=block))
        out += [ev("content_block_delta", index=index, delta=d) for d in deltas]
        out.append(ev("content_block_stop", index=index))
    end_usage = {"output_tokens": completion} if step.usage else {}
    out.append(ev("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=end_usage))
    return [*out, ev("message_stop")]


def _last_user_text(body: Any, anthropic: bool) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    for m in reversed(messages if isinstance(messages, list) else []):
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
        if texts or not anthropic:
            return "\n".join(texts)
    return ""


# -- raw HTTP/1.1 ------------------------------------------------------------------------------------
async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest:
    method, target, headers, body = await read_request(reader)
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    return RecordedRequest(method, target, headers, parsed, body)


def _head(status: int, content_type: str, headers: dict[str, str] | None = None) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Overloaded" if status == 529 else "Status"
    lines = [f"HTTP/1.1 {status} {phrase}", f"content-type: {content_type}", "connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send(
    writer: asyncio.StreamWriter, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None
) -> None:
    writer.write(_head(status, content_type, {**(headers or {}), "content-length": str(len(body))}) + body)
    await writer.drain()


@contextlib.contextmanager
def run_fake_llm(models: tuple[str, ...] = ("fake-model",)) -> Iterator[FakeLLM]:
    """Serve a :class:`FakeLLM` on ``127.0.0.1:<ephemeral>`` for the duration of the ``with`` block."""
    fake = FakeLLM(models)
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        stop = asyncio.Event()
        state["loop"], state["stop"] = asyncio.get_running_loop(), stop
        server = await asyncio.start_server(fake.handle, fake.host, 0, limit=1 << 20)
        fake.port = server.sockets[0].getsockname()[1]
        ready.set()
        await stop.wait()
        server.close()  # handlers still running are cancelled when asyncio.run returns

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # surfaced to the caller below
            state["error"] = exc
            ready.set()

    thread = threading.Thread(target=target, name="fake-llm", daemon=True)
    thread.start()
    if not ready.wait(10) or "error" in state:
        raise RuntimeError(f"fake LLM server did not start: {state.get('error')!r}")
    try:
        yield fake
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(10)
