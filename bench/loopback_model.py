"""A fake model vendor for the agent bench: an OpenAI Chat Completions SSE endpoint on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import orjson

from bench.harness import HOST

TOOL_REPLY = "It is later than you think."
HTTP_TOOL_MARK = "[bench:tool]"  # the loopback model server calls current_time when it sees this


class LoopbackModel:
    """A minimal OpenAI Chat Completions endpoint on 127.0.0.1 in a thread with its own loop.

    Records every request body. Answers with an SSE stream: a ``current_time`` tool call when the
    last message is a user message containing ``HTTP_TOOL_MARK``, else one short text reply.
    Keep-alive, like a real API, with Content-Length on every response.
    """

    def __init__(self) -> None:
        self.port = 0
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        self._calls = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def requests(self) -> list[bytes]:
        with self._lock:
            return list(self.bodies)

    def start(self) -> None:
        ready = threading.Event()
        errors: list[BaseException] = []

        async def main() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            server = await asyncio.start_server(self._handle, HOST, 0, limit=1 << 22)
            self.port = int(server.sockets[0].getsockname()[1])
            ready.set()
            async with server:
                await self._stop.wait()

        def target() -> None:
            try:
                asyncio.run(main())
            except BaseException as exc:  # surfaced to start() below
                errors.append(exc)
                ready.set()

        self._thread = threading.Thread(target=target, name="loopback-model", daemon=True)
        self._thread.start()
        if not ready.wait(10) or errors:
            raise RuntimeError(f"loopback model server did not start: {errors!r}")

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for _ in range(100_000):  # requests on one kept-alive connection
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                headers = {}
                for line in head.decode("latin-1").split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await self._body(reader, headers)
                with self._lock:
                    self.bodies.append(body)
                writer.write(self._response(body))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    @staticmethod
    async def _body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if headers.get("transfer-encoding", "").lower() != "chunked":
            return await reader.readexactly(int(headers.get("content-length", "0")))
        parts: list[bytes] = []
        for _ in range(1_000_000):
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        return b"".join(parts)

    def _response(self, body: bytes) -> bytes:
        request = orjson.loads(body)
        last = (request.get("messages") or [{}])[-1]
        base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": request["model"]}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        if last.get("role") == "user" and HTTP_TOOL_MARK in str(last.get("content")):
            with self._lock:
                self._calls += 1
                call_id = f"call_bench_{self._calls}"
            function = {"name": "current_time", "arguments": "{}"}
            call = {"index": 0, "id": call_id, "type": "function", "function": function}
            chunks = [chunk({"role": "assistant", "content": None, "tool_calls": [call]}), chunk({}, "tool_calls")]
        else:
            reply = TOOL_REPLY if last.get("role") == "tool" else "Hello!"
            chunks = [chunk({"role": "assistant", "content": reply}), chunk({}, "stop")]
        usage = {"prompt_tokens": len(body) // 4, "completion_tokens": 5, "total_tokens": len(body) // 4 + 5}
        chunks.append({**base, "choices": [], "usage": usage})
        sse = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            f"content-length: {len(sse)}\r\n\r\n"
        )
        return head.encode("latin-1") + sse


def describe_request(body: bytes) -> dict[str, Any]:
    request = orjson.loads(body)
    messages = request.get("messages") or []
    system: dict[str, Any] = next((m for m in messages if m.get("role") == "system"), {})
    tools = request.get("tools") or []
    return {
        "bytes": len(body),
        "keys": sorted(request),
        "messages": len(messages),
        "system_prompt_chars": len(str(system.get("content") or "")),
        "system_prompt_bytes": len(str(system.get("content") or "").encode()),
        "tools": len(tools),
        "tools_bytes": len(orjson.dumps(tools)),
        "tool_names": [t.get("function", {}).get("name") for t in tools],
    }
