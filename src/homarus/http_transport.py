"""An httpx transport on asyncio streams and h11: httpx's API without httpcore and anyio underneath.

httpx's default transport goes through httpcore, which runs every socket operation, lock and
timeout through anyio (a cancel scope per timeout, a sniffio lookup of the running event-loop
library per lock, event and checkpoint): about 0.75 ms of CPU per model request on the 2-core
host of ``bench/RESULTS.md``, an eighth of a warm turn's gateway time (py-spy over 600 turns).
The HTTP/1.1 protocol itself stays h11's, the parser httpcore uses; only the glue is written
here, because no library offers it without anyio: a keep-alive pool per origin, TLS through the
process's shared contexts (``tls.py``), httpx's four timeouts, and httpx's exception types, so
that callers and their error handling see httpx exactly as before.

Not here: HTTP/2 and proxies. A process with a ``*_proxy`` variable set keeps httpx's own transport
(:func:`transport_for` returns None), which honours them.

A request is sent again on a fresh connection only when a kept-alive connection turns out to have
been closed by the server before any byte of the response arrived (the keep-alive race every
HTTP/1.1 client handles), and only when its body is bytes: a streamed body may carry side effects
(the Telegram adapter commits its delivery record from inside one) and fails instead. A connection
that failed is never reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import h11
import httpx

__all__ = ["AsyncioTransport", "stream", "transport_for"]

_READ_SIZE = 64 * 1024
_NO_RESPONSE = "Server disconnected without sending a response."
_PROXY_VARS = frozenset({"http_proxy", "https_proxy", "all_proxy"})


def transport_for(
    verify: ssl.SSLContext, *, max_connections: int = 100, max_keepalive: int = 10
) -> AsyncioTransport | None:
    """The transport for a client verifying with ``verify``; None when a proxy is configured in the
    environment (httpx's own transport then honours it)."""
    if any(k.lower() in _PROXY_VARS and v for k, v in os.environ.items()):
        return None
    return AsyncioTransport(verify=verify, max_connections=max_connections, max_keepalive=max_keepalive)


#: what an ``httpx.AsyncClient`` would add to every request (its own default headers)
_CLIENT_HEADERS = (("accept", "*/*"), ("accept-encoding", "gzip, deflate"), ("user-agent", "homarus"))


@contextlib.asynccontextmanager
async def stream(
    transport: httpx.AsyncBaseTransport,
    method: str,
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str],
    timeout: float,
) -> AsyncIterator[httpx.Response]:
    """``AsyncClient.stream`` straight on ``transport``, for a caller that needs nothing of the client
    but the request: no cookie jar, redirects, auth or base URL (0.25 ms a request; the body is
    still decoded by ``Response.aiter_bytes``)."""
    merged = dict(_CLIENT_HEADERS)
    merged.update((k.lower(), v) for k, v in headers.items())
    limits = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
    request = httpx.Request(method, url, content=content, headers=merged, extensions={"timeout": limits})
    response = await transport.handle_async_request(request)
    response.request = request
    try:
        yield response
    finally:
        await response.aclose()


@dataclass(eq=False)
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    h11: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))
    idle_since: float = 0.0
    reused: bool = False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class _Retry(Exception):
    """A kept-alive connection was found closed before the response began: send again, fresh."""


class AsyncioTransport(httpx.AsyncBaseTransport):
    def __init__(
        self,
        *,
        verify: ssl.SSLContext,
        max_connections: int = 100,
        max_keepalive: int = 10,
        keepalive_expiry: float = 5.0,
    ) -> None:
        self._ssl = verify
        #: requests in flight (each holds one connection until its body is closed)
        self._slots = asyncio.Semaphore(max_connections)
        self._max_keepalive = max_keepalive
        self._expiry = keepalive_expiry
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("the transport is closed")
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}", request=request)
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        try:
            async with asyncio.timeout(timeouts.get("pool")):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("no connection became free in time", request=request) from None
        try:
            return await self._request(origin, request, timeouts)
        except BaseException:
            self._slots.release()
            raise

    async def _request(
        self, origin: tuple[str, str, int], request: httpx.Request, timeouts: dict[str, float | None]
    ) -> httpx.Response:
        conn = self._take(origin)
        if conn is not None:
            try:
                return await self._exchange(conn, origin, request, timeouts)
            except _Retry:
                if not isinstance(request.stream, httpx.ByteStream):  # a streamed body is not sent twice
                    raise httpx.RemoteProtocolError(_NO_RESPONSE, request=request) from None
        conn = await self._connect(origin, request, timeouts.get("connect"))
        try:
            return await self._exchange(conn, origin, request, timeouts)
        except _Retry:  # a fresh connection closed before answering: the server's doing
            raise httpx.RemoteProtocolError(_NO_RESPONSE, request=request) from None

    async def aclose(self) -> None:
        self._closed = True
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()

    # -- connections ----------------------------------------------------------------------------------
    def _take(self, origin: tuple[str, str, int]) -> _Conn | None:
        conns = self._idle.get(origin)
        now = time.monotonic()
        while conns:
            conn = conns.pop()
            if now - conn.idle_since < self._expiry and not conn.reader.at_eof() and not conn.writer.is_closing():
                conn.reused = True
                return conn
            conn.close()
        return None

    def _give_back(self, origin: tuple[str, str, int], conn: _Conn) -> None:
        state = conn.h11
        if self._closed or state.our_state is not h11.DONE or state.their_state is not h11.DONE:
            conn.close()
            return
        try:
            state.start_next_cycle()
        except h11.LocalProtocolError:
            conn.close()
            return
        conns = self._idle.setdefault(origin, [])
        if len(conns) >= self._max_keepalive:
            conn.close()
            return
        conn.idle_since = time.monotonic()
        conns.append(conn)

    async def _connect(self, origin: tuple[str, str, int], request: httpx.Request, timeout: float | None) -> _Conn:
        scheme, host, port = origin
        tls = self._ssl if scheme == "https" else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls is not None else None, limit=_READ_SIZE
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out", request=request) from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from None
        return _Conn(reader, writer)

    # -- one request and its response head ------------------------------------------------------------
    async def _exchange(
        self, conn: _Conn, origin: tuple[str, str, int], request: httpx.Request, timeouts: dict[str, float | None]
    ) -> httpx.Response:
        try:
            await self._send(conn, request, timeouts.get("write"))
            head = await self._head(conn, request, timeouts.get("read"))
        except BaseException:
            conn.close()
            raise
        body = _Body(self, conn, origin, request, timeouts.get("read"))
        return httpx.Response(
            head.status_code,
            headers=head.headers,
            stream=body,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": head.reason},
        )

    async def _send(self, conn: _Conn, request: httpx.Request, timeout: float | None) -> None:
        url = request.url
        target = url.raw_path
        headers = list(request.headers.raw)
        try:
            data = conn.h11.send(h11.Request(method=request.method.encode(), target=target, headers=headers))
            if isinstance(request.stream, httpx.ByteStream):
                # head, body and end in one write: one send(2) a request instead of three
                body = b"".join([chunk async for chunk in request.stream])
                framed = conn.h11.send(h11.Data(data=body)) if body else b""
                await _write(
                    conn, (data or b"") + (framed or b"") + (conn.h11.send(h11.EndOfMessage()) or b""), request, timeout
                )
                return
            await _write(conn, data, request, timeout)
            async for chunk in request.stream:  # type: ignore[union-attr] # an async client's stream
                if chunk:
                    await _write(conn, conn.h11.send(h11.Data(data=chunk)), request, timeout)
            await _write(conn, conn.h11.send(h11.EndOfMessage()), request, timeout)
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from None
        except _Sent as exc:
            if conn.reused and not exc.after_bytes:
                raise _Retry from None
            raise exc.error from None

    async def _head(self, conn: _Conn, request: httpx.Request, timeout: float | None) -> h11.Response:
        received = False
        while True:
            try:
                event = conn.h11.next_event()
            except h11.RemoteProtocolError as exc:
                if conn.reused and not received:
                    raise _Retry from None
                raise httpx.RemoteProtocolError(str(exc), request=request) from None
            if event is h11.NEED_DATA:
                try:
                    data = await _read(conn, request, timeout)
                except httpx.ReadError:
                    if conn.reused and not received:
                        raise _Retry from None
                    raise
                if data:
                    received = True
                elif not received:  # closed before a byte of the response
                    if conn.reused:
                        raise _Retry
                    raise httpx.RemoteProtocolError(_NO_RESPONSE, request=request)
                conn.h11.receive_data(data)
                continue
            if isinstance(event, h11.Response):
                return event
            if isinstance(event, h11.InformationalResponse):
                continue
            raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__} before the response", request=request)


class _Sent(Exception):
    def __init__(self, error: httpx.TransportError, after_bytes: bool) -> None:
        self.error = error
        self.after_bytes = after_bytes


async def _write(conn: _Conn, data: bytes | None, request: httpx.Request, timeout: float | None) -> None:
    if not data:
        return
    try:
        conn.writer.write(data)
        async with asyncio.timeout(timeout):
            await conn.writer.drain()
    except TimeoutError:
        raise _Sent(httpx.WriteTimeout("writing the request timed out", request=request), True) from None
    except OSError as exc:
        raise _Sent(httpx.WriteError(str(exc) or type(exc).__name__, request=request), False) from None


async def _read(conn: _Conn, request: httpx.Request, timeout: float | None) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await conn.reader.read(_READ_SIZE)
    except TimeoutError:
        raise httpx.ReadTimeout("reading the response timed out", request=request) from None
    except OSError as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from None


class _Body(httpx.AsyncByteStream):
    """The response body as it arrives; the connection goes back to the pool once it was read to its
    end and both sides may go on, and is closed in every other case."""

    def __init__(
        self,
        transport: AsyncioTransport,
        conn: _Conn,
        origin: tuple[str, str, int],
        request: httpx.Request,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._conn: _Conn | None = conn
        self._origin = origin
        self._request = request
        self._timeout = timeout
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        try:
            while True:
                try:
                    event = conn.h11.next_event()
                except h11.RemoteProtocolError as exc:
                    raise httpx.RemoteProtocolError(str(exc), request=self._request) from None
                if event is h11.NEED_DATA:
                    conn.h11.receive_data(await _read(conn, self._request, self._timeout))
                elif isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    break
        except BaseException:
            self._conn = None
            conn.close()
            raise

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._transport._give_back(self._origin, conn)
        if not self._released:
            self._released = True
            self._transport._slots.release()
