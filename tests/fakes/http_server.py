"""A tiny HTTP/1.1 server on a loopback address, in the test's own event loop.

Records every request (method, target, lower-cased headers, body, the local address it reached)
and answers through a route function. One request per connection
(``Connection: close``). ``close()`` cancels handlers still running, so a server that was told
to hang never outlives its test::

    async with serve(lambda req: Answer(200, body=b"hi")) as srv:
        ... srv.url("/x") ... srv.requests[0].headers["host"] ...
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["Answer", "LoopbackServer", "Seen", "serve"]

_MAX_HEAD = 64 * 1024


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    #: the address the client connected to (proves which pinned IP was used)
    local_host: str


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    #: seconds to wait before answering (a slow or hanging server)
    delay_s: float = 0.0
    #: stream this many filler bytes after ``body`` (without Content-Length), in 64 KiB chunks
    stream_bytes: int = 0


Route = Callable[[Seen], Answer | Awaitable[Answer]]


class LoopbackServer:
    def __init__(self, route: Route, host: str, ssl_context: ssl.SSLContext | None) -> None:
        self.route = route
        self.host = host
        self.port = 0
        self.requests: list[Seen] = []
        self.connections = 0
        #: bytes of the streamed body actually written before the client went away
        self.streamed = 0
        self._ssl = ssl_context
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def url(self, path: str = "/", *, host: str | None = None) -> str:
        scheme = "https" if self._ssl else "http"
        return f"{scheme}://{host or self.host}:{self.port}{path}"

    async def start(self, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, port, ssl=self._ssl)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            await self._serve_one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ssl.SSLError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _MAX_HEAD:
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
        seen = Seen(method, target, headers, body, writer.get_extra_info("sockname")[0])
        self.requests.append(seen)
        answer = self.route(seen)
        if not isinstance(answer, Answer):
            answer = await answer
        if answer.delay_s:
            await asyncio.sleep(answer.delay_s)
        out_headers = {"connection": "close", **{k.lower(): v for k, v in answer.headers.items()}}
        if not answer.stream_bytes:
            out_headers.setdefault("content-length", str(len(answer.body)))
        reason = "OK" if answer.status < 300 else "Redirect" if answer.status < 400 else "Error"
        head_out = f"HTTP/1.1 {answer.status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in out_headers.items())
        writer.write(head_out.encode("latin-1") + b"\r\n" + answer.body)
        await writer.drain()
        chunk = b"x" * 65536
        while self.streamed < answer.stream_bytes:
            writer.write(chunk)
            await writer.drain()
            self.streamed += len(chunk)


@contextlib.asynccontextmanager
async def serve(
    route: Route, *, host: str = "127.0.0.1", port: int = 0, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[LoopbackServer]:
    server = LoopbackServer(route, host, ssl_context)
    await server.start(port)
    try:
        yield server
    finally:
        await server.close()
