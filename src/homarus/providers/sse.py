"""Streaming plumbing shared by the HTTP adapters: SSE parsing, a guarded streamed request, the driver.

:class:`SSEParser` follows the WHATWG event-stream rules closely enough for LLM APIs: chunks may split
anywhere (mid-line, mid-CRLF, mid-UTF-8 sequence); ``data:`` lines accumulate joined by ``\\n``;
comments (``:``) and ``id``/``retry`` are ignored; an event is dispatched on a blank line.

:class:`HttpStream` runs one request (through the adapter's ``http_pool.Pool``, or an httpx client
when one was given or a proxy is configured) in a helper task that feeds a bounded queue. The
caller only ever waits on that queue, so each wait can be raced against ``abort`` and the overall
deadline without cancelling the request from a foreign task; cancelling the helper task closes the
response.

:class:`HttpAdapter` drives a wire-specific :class:`WireDecoder` over that stream and turns every
failure (HTTP status, transport, timeout, abort, garbage) into the one final ``StreamError``.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

import orjson

from homarus.config.models import ProviderConfig
from homarus.messages import AssistantMessage, ModelInfo, StreamError, StreamEvent, StreamOptions, Usage
from homarus.providers.classify import http_error_text, parse_retry_after, scrub

if TYPE_CHECKING:
    import httpx

    from homarus.http_pool import Pool

__all__ = [
    "Aborted",
    "DeadlineExceeded",
    "HttpAdapter",
    "HttpHead",
    "HttpStream",
    "RemoteError",
    "SSEError",
    "SSEEvent",
    "SSEParser",
    "WireDecoder",
    "apply_cost",
    "clip",
    "describe_transport_error",
    "fail",
    "is_transport_error",
]

log = logging.getLogger("homarus.providers")

T = TypeVar("T")

#: a single SSE line longer than this is not an LLM stream; stop before buffering unbounded garbage
MAX_LINE_CHARS = 8 * 1024 * 1024
#: error bodies are read only this far; a non-streamed reply up to MAX_BODY
ERROR_BODY_LIMIT = 64 * 1024
MAX_BODY = 32 * 1024 * 1024


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
    ``timeout_s``; transport failures surface as the pool's (or the httpx client's) own exceptions.
    """

    def __init__(
        self,
        client: httpx.AsyncClient | Pool,
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
        self,
        client: httpx.AsyncClient | Pool,
        url: str,
        content: bytes,
        headers: Mapping[str, str],
        t: float,
    ) -> None:
        from homarus.http_pool import Pool, RawResponse, open_stream

        try:
            opened = (
                open_stream(client, "POST", url, content=content, headers=headers, timeout=t)
                if isinstance(client, Pool)
                else client.stream("POST", url, content=content, headers=headers, timeout=t)
            )
            async with opened as response:
                await self._queue.put(HttpHead(response.status_code, response.headers))
                # the pool asks for the body as sent (identity): its raw bytes are the body
                chunks = response.aiter_raw() if isinstance(response, RawResponse) else response.aiter_bytes()
                async for chunk in chunks:
                    await self._queue.put(chunk)
            await self._queue.put(_END)
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
        if self._queue.empty():
            item = await self._guard(self._queue.get())
        else:  # already there: no waiter to race (a task and a wait per chunk otherwise)
            if self._abort is not None and self._abort.is_set():
                raise Aborted
            if asyncio.get_running_loop().time() >= self._deadline:
                raise DeadlineExceeded
            item = self._queue.get_nowait()
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
        pending = {f for f in (self._task, self._abort_wait) if f is not None and not f.done()}
        for fut in pending:
            fut.cancel()
        if pending:  # wait() neither raises the helpers' CancelledError nor swallows our own
            await asyncio.wait(pending)


def _errors(name: str) -> tuple[type[BaseException], ...]:
    """The error class ``name`` of ``http_pool``, and httpx's of that name once httpx is loaded
    (its errors exist only when a client of its own was used; the pool's carry httpx's names)."""
    from homarus import http_pool

    httpx = sys.modules.get("httpx")
    own: tuple[type[BaseException], ...] = (getattr(http_pool, name),) if hasattr(http_pool, name) else ()
    return own + ((getattr(httpx, name),) if httpx is not None and hasattr(httpx, name) else ())


def describe_transport_error(exc: BaseException) -> str:
    """A short, key-free text for a failed connection, worded so the retry regex recognises it."""
    detail = str(exc).strip() or type(exc).__name__
    if isinstance(exc, _errors("TimeoutException")):
        return f"request timed out ({type(exc).__name__})"
    if isinstance(exc, _errors("ConnectError")):
        return f"connection error: {detail}"
    if isinstance(exc, _errors("RemoteProtocolError")):
        return f"connection closed mid-response (other side closed): {detail}"
    if isinstance(exc, _errors("DecodingError")):
        return f"undecodable response body: {detail}"
    return f"connection error: {type(exc).__name__}: {detail}"


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a failed exchange (the pool's, or httpx's when a client of its was used)."""
    return isinstance(exc, (*_errors("HttpError"), *_errors("HTTPError")))


# -- building the final message ----------------------------------------------------------------------
class RemoteError(Exception):
    """The server reported a failure inside an otherwise successful response (or sent garbage)."""

    def __init__(self, text: str, status: int | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.status = status


def clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fail(
    msg: AssistantMessage,
    text: str,
    secret: str | None,
    status: int | None = None,
    retry_after_s: float | None = None,
    *,
    aborted: bool = False,
) -> StreamError:
    msg.stop_reason = "aborted" if aborted else "error"
    msg.error_message = scrub(text, secret)
    return StreamError(msg, status, retry_after_s)


def apply_cost(usage: Usage, model: ModelInfo) -> Usage:
    """Fill ``usage.cost`` from the model's $/million-token rates."""
    rate_in, rate_out, rate_read, rate_write = model.cost
    c = usage.cost
    c.input = rate_in * usage.input / 1e6
    c.output = rate_out * usage.output / 1e6
    c.cache_read = rate_read * usage.cache_read / 1e6
    c.cache_write = rate_write * usage.cache_write / 1e6
    c.total = c.input + c.output + c.cache_read + c.cache_write
    return usage


# -- the driver ----------------------------------------------------------------------------------------
class WireDecoder(Protocol):
    """Wire-specific response parsing; raises :class:`RemoteError` for in-band errors and garbage."""

    msg: AssistantMessage

    @property
    def complete(self) -> bool:
        """The terminal marker arrived; stop reading."""
        ...

    def on_sse(self, event: SSEEvent) -> list[StreamEvent]: ...

    def on_body(self, raw: bytes, content_type: str) -> list[StreamEvent]: ...

    def finish(self, secret: str | None) -> list[StreamEvent]: ...


class HttpAdapter:
    """Base of the HTTP providers: client ownership, headers, and :meth:`run`, the shared stream loop."""

    api = ""

    def __init__(self, provider_id: str, config: ProviderConfig, *, client: httpx.AsyncClient | None = None) -> None:
        self.provider_id = provider_id
        self.config = config
        self._client = client
        self._owns_client = client is None
        self._pool: Pool | None = None

    def _http(self) -> httpx.AsyncClient | Pool:
        """What requests go through: the client given, else this adapter's own connection pool (a
        client with httpx's transport when a proxy is configured: ``http_pool.pool_for``)."""
        if self._client is None and self._pool is None:
            from homarus.http_pool import pool_for
            from homarus.tls import context_for

            verify = context_for(self.config.base_url or "https://")
            self._pool = pool_for(verify)
            if self._pool is None:
                import httpx

                timeout = httpx.Timeout(float(self.config.timeout_seconds))
                self._client = httpx.AsyncClient(timeout=timeout, verify=verify)
        if self._client is not None:
            return self._client
        assert self._pool is not None
        return self._pool

    async def aclose(self) -> None:
        """Close the client this adapter opened itself (a shared one belongs to its creator)."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None

    def _headers(self, model: ModelInfo, base: dict[str, str]) -> dict[str, str]:
        headers = {"content-type": "application/json", **base}
        # explicit config headers win (e.g. a proxy that wants its own auth header)
        headers.update({k.lower(): v for k, v in self.config.headers.items()})
        headers.update({k.lower(): v for k, v in model.headers})
        return headers

    async def run(
        self,
        url: str,
        make_body: Callable[[], dict[str, Any]],
        headers: dict[str, str],
        options: StreamOptions,
        decoder: WireDecoder,
    ) -> AsyncGenerator[StreamEvent, None]:
        msg, key = decoder.msg, options.api_key
        try:
            # compact UTF-8: a request is sent on every turn, and spaces and \u escapes are paid per turn
            content = orjson.dumps(make_body(), default=str)
        except (TypeError, ValueError) as exc:
            yield fail(msg, f"cannot encode the request: {exc}", key)
            return
        timeout = max(0.001, min(options.timeout_s, float(self.config.timeout_seconds)))
        http = HttpStream(self._http(), url, content=content, headers=headers, abort=options.abort, timeout_s=timeout)
        try:
            head = await http.open()
            if head.status >= 400:
                body = await http.read(ERROR_BODY_LIMIT)
                yield fail(msg, http_error_text(head.status, body), key, head.status, parse_retry_after(head.headers))
                return
            if "event-stream" in head.content_type:
                async for event in http.events():
                    for out in decoder.on_sse(event):
                        if options.abort is not None and options.abort.is_set():
                            raise Aborted  # the consumer aborted while handling the previous event
                        yield out
                    if decoder.complete:
                        break
            else:
                for out in decoder.on_body(await http.read(MAX_BODY), head.content_type):
                    yield out
            for out in decoder.finish(key):
                yield out
        except Aborted:
            yield fail(msg, "aborted", key, aborted=True)
        except DeadlineExceeded:
            yield fail(msg, f"request timed out after {timeout:g}s", key)
        except RemoteError as exc:
            yield fail(msg, exc.text, key, exc.status)
        except Exception as exc:  # a bug or an unforeseen body shape must still end the stream cleanly
            if is_transport_error(exc):
                yield fail(msg, describe_transport_error(exc), key)
                return
            log.warning("%s %s: unexpected %s", self.api, msg.model, type(exc).__name__, exc_info=True)
            yield fail(msg, f"unexpected error reading the response: {type(exc).__name__}: {exc}", key)
        finally:
            await http.aclose()
