"""Server-Sent Events: an incremental parser, and a streamed HTTP reply raced against abort and a deadline.

:class:`SSEParser` follows the WHATWG event-stream rules closely enough for LLM APIs: chunks may split
anywhere (mid-line, mid-CRLF, mid-UTF-8 sequence); ``data:`` lines accumulate joined by ``\\n``;
comments (``:``) and ``id``/``retry`` are ignored; an event is dispatched on a blank line.

:class:`HttpStream` runs one ``httpx`` request in a helper task that feeds a bounded queue. The caller
only ever waits on that queue, so each wait can be raced against ``abort`` and the overall deadline
without cancelling httpx from a foreign task; cancelling the helper task closes the response.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    import httpx

__all__ = [
    "Aborted",
    "DeadlineExceeded",
    "HttpHead",
    "HttpStream",
    "SSEError",
    "SSEEvent",
    "SSEParser",
    "describe_transport_error",
]

T = TypeVar("T")

#: a single SSE line longer than this is not an LLM stream; stop before buffering unbounded garbage
MAX_LINE_CHARS = 8 * 1024 * 1024


class SSEError(ValueError):
    """The byte stream is not a usable event stream."""


class SSEEvent(NamedTuple):
    event: str
    data: str


class SSEParser:
    """Feed chunks with :meth:`feed`; call :meth:`close` at end of stream for a trailing event."""

    def __init__(self) -> None:
        # errors="replace": the SSE spec decodes with replacement; broken bytes then fail JSON parsing
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buf = ""
        self._event = ""
        self._data: list[str] = []
        self._first = True

    def feed(self, chunk: bytes | str) -> list[SSEEvent]:
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        if self._first and text:
            self._first = False
            text = text.removeprefix("\ufeff")
        self._buf += text
        out: list[SSEEvent] = []
        start = 0
        buf = self._buf
        while True:
            lf = buf.find("\n", start)
            cr = buf.find("\r", start)
            if lf < 0 and cr < 0:
                break
            if cr < 0 or (0 <= lf < cr):
                end, nxt = lf, lf + 1
            elif cr == len(buf) - 1:
                break  # a lone trailing CR may be the first half of a CRLF split across chunks
            else:
                end, nxt = cr, cr + 2 if buf[cr + 1] == "\n" else cr + 1
            self._line(buf[start:end], out)
            start = nxt
        self._buf = buf[start:]
        if len(self._buf) > MAX_LINE_CHARS:
            raise SSEError(f"event-stream line longer than {MAX_LINE_CHARS} characters")
        return out

    def close(self) -> list[SSEEvent]:
        """End of stream. Unlike the browser spec, a final event without its blank line is still
        dispatched: some servers end with ``data: [DONE]\\n`` and close."""
        out = self.feed(self._decoder.decode(b"", final=True))
        if self._buf:
            self._line(self._buf.removesuffix("\r"), out)
            self._buf = ""
        self._line("", out)
        return out

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                out.append(SSEEvent(self._event or "message", "\n".join(self._data)))
            self._event, self._data = "", []
            return
        if line.startswith(":"):
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value


# -- streamed HTTP with abort and deadline -----------------------------------------------------------
class Aborted(Exception):
    """``options.abort`` was set."""


class DeadlineExceeded(TimeoutError):
    """The whole request (streaming included) ran past its time budget."""


@dataclass(frozen=True, slots=True)
class HttpHead:
    status: int
    headers: Mapping[str, str]

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").lower()


_END = object()


class HttpStream:
    """One streamed request. ``open`` → :class:`HttpHead`; then ``chunks``/``events``/``read``; ``aclose``.

    Every wait raises :class:`Aborted` once ``abort`` is set and :class:`DeadlineExceeded` after
    ``timeout_s``; transport failures surface as the original ``httpx`` exceptions.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        *,
        content: bytes,
        headers: Mapping[str, str],
        abort: asyncio.Event | None,
        timeout_s: float,
    ) -> None:
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + timeout_s
        self._abort = abort
        self._abort_wait: asyncio.Future[Any] | None = None
        # small bound: backpressure instead of reading a runaway stream into memory
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=32)
        self._task = asyncio.ensure_future(self._pump(client, url, content, headers, timeout_s))

    async def _pump(
        self, client: httpx.AsyncClient, url: str, content: bytes, headers: Mapping[str, str], t: float
    ) -> None:
        try:
            async with client.stream("POST", url, content=content, headers=headers, timeout=t) as response:
                await self._queue.put(HttpHead(response.status_code, response.headers))
                async for chunk in response.aiter_bytes():
                    await self._queue.put(chunk)
            await self._queue.put(_END)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # handed to the reader, which maps it to a StreamError
            await self._queue.put(exc)

    async def _guard(self, aw: Awaitable[T]) -> T:
        task = asyncio.ensure_future(aw)
        waiters: set[asyncio.Future[Any]] = {task}
        if self._abort is not None:
            if self._abort.is_set():
                task.cancel()
                raise Aborted
            if self._abort_wait is None:
                self._abort_wait = asyncio.ensure_future(self._abort.wait())
            waiters.add(self._abort_wait)
        remaining = self._deadline - asyncio.get_running_loop().time()
        try:
            done, _ = await asyncio.wait(waiters, timeout=max(remaining, 0), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task in done:
            return task.result()
        task.cancel()
        if self._abort is not None and self._abort.is_set():
            raise Aborted
        raise DeadlineExceeded

    async def _next(self) -> Any:
        item = await self._guard(self._queue.get())
        if isinstance(item, BaseException):
            raise item
        return item

    async def open(self) -> HttpHead:
        item = await self._next()
        if not isinstance(item, HttpHead):  # pragma: no cover - the pump always sends the head first
            raise RuntimeError("no response head")
        return item

    async def chunks(self) -> AsyncIterator[bytes]:
        while (item := await self._next()) is not _END:
            yield item

    async def read(self, limit: int) -> bytes:
        """The rest of the body, at most ``limit`` bytes (the remainder is dropped)."""
        out = bytearray()
        async for chunk in self.chunks():
            out += chunk[: max(0, limit - len(out))]
            if len(out) >= limit:
                break
        return bytes(out)

    async def events(self) -> AsyncIterator[SSEEvent]:
        parser = SSEParser()
        async for chunk in self.chunks():
            for event in parser.feed(chunk):
                yield event
        for event in parser.close():
            yield event

    async def aclose(self) -> None:
        for fut in (self._task, self._abort_wait):
            if fut is not None and not fut.done():
                fut.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await fut


def describe_transport_error(exc: BaseException) -> str:
    """A short, key-free text for a failed connection, worded so the retry regex recognises it."""
    import httpx

    detail = str(exc).strip() or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return f"request timed out ({type(exc).__name__})"
    if isinstance(exc, httpx.ConnectError):
        return f"connection error: {detail}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection closed mid-response (other side closed): {detail}"
    if isinstance(exc, httpx.DecodingError):
        return f"undecodable response body: {detail}"
    return f"connection error: {type(exc).__name__}: {detail}"
