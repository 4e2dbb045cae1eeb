"""HTTP/1.1 client connections on asyncio streams and h11: a keep-alive pool per origin, TLS through
the process's shared contexts (``tls.py``), four timeouts (connect, write, read, pool).

The model providers send every request through this (``providers/sse.py``), and ``http_transport``
puts httpx's API on it for the callers that want httpx (the Telegram Bot API). Apart from httpx
because a gateway's providers need none of httpx's module tree (the client, its cookie jar, URL and
IDNA handling: 2 MiB of the warm-up's 8.5, measured on the host of ``bench/RESULTS.md``), and no
library offers this without anyio (httpcore runs every socket operation through it: 0.75 ms of CPU
a model request there). The HTTP/1.1 protocol itself is h11's, the parser httpcore uses; the glue
is here. Its errors mirror httpx's names, so ``http_transport`` maps them one to one.

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
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import h11

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "HttpError",
    "LocalProtocolError",
    "Pool",
    "PoolTimeout",
    "RawRequest",
    "RawResponse",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "TimeoutException",
    "UnsupportedProtocol",
    "WriteError",
    "WriteTimeout",
    "open_stream",
    "pool_for",
]

_READ_SIZE = 64 * 1024
_NO_RESPONSE = "Server disconnected without sending a response."
_PROXY_VARS = frozenset({"http_proxy", "https_proxy", "all_proxy"})


# -- errors (httpx's names: http_transport maps each to httpx's class of the same name) --------------
class HttpError(Exception):
    """A request failed on its way: no connection, a timeout, a broken or closed exchange."""


class TimeoutException(HttpError):
    pass


class ConnectTimeout(TimeoutException):
    pass


class ReadTimeout(TimeoutException):
    pass


class WriteTimeout(TimeoutException):
    pass


class PoolTimeout(TimeoutException):
    pass


class ConnectError(HttpError):
    pass


class ReadError(HttpError):
    pass


class WriteError(HttpError):
    pass


class RemoteProtocolError(HttpError):
    pass


class LocalProtocolError(HttpError):
    pass


class UnsupportedProtocol(HttpError):
    pass


def _proxy_configured() -> bool:
    """Whether the environment names a proxy (this pool does not speak to proxies: httpx does)."""
    return any(k.lower() in _PROXY_VARS and v for k, v in os.environ.items())


def pool_for(verify: ssl.SSLContext, *, max_connections: int = 100, max_keepalive: int = 10) -> Pool | None:
    """A pool verifying with ``verify``; None when a proxy is configured in the environment."""
    if _proxy_configured():
        return None
    return Pool(verify=verify, max_connections=max_connections, max_keepalive=max_keepalive)


@dataclass(slots=True)
class RawRequest:
    method: bytes
    scheme: str
    host: str
    port: int
    target: bytes
    headers: list[tuple[bytes, bytes]]
    #: bytes may be sent again after the keep-alive race; a stream never is
    body: bytes | AsyncIterable[bytes]
    timeouts: Mapping[str, float | None]


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


class Pool:
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

    async def request(self, request: RawRequest) -> RawResponse:
        """Send ``request``; the response with its head read and its body to come (close it)."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        if request.scheme not in ("http", "https"):
            raise UnsupportedProtocol(f"unsupported URL scheme {request.scheme!r}")
        try:
            async with asyncio.timeout(request.timeouts.get("pool")):
                await self._slots.acquire()
        except TimeoutError:
            raise PoolTimeout("no connection became free in time") from None
        try:
            return await self._request((request.scheme, request.host, request.port), request)
        except BaseException:
            self._slots.release()
            raise

    async def _request(self, origin: tuple[str, str, int], request: RawRequest) -> RawResponse:
        conn = self._take(origin)
        if conn is not None:
            try:
                return await self._exchange(conn, origin, request)
            except _Retry:
                if not isinstance(request.body, bytes):  # a streamed body is not sent twice
                    raise RemoteProtocolError(_NO_RESPONSE) from None
        conn = await self._connect(origin, request.timeouts.get("connect"))
        try:
            return await self._exchange(conn, origin, request)
        except _Retry:  # a fresh connection closed before answering: the server's doing
            raise RemoteProtocolError(_NO_RESPONSE) from None

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

    async def _connect(self, origin: tuple[str, str, int], timeout: float | None) -> _Conn:
        scheme, host, port = origin
        tls = self._ssl if scheme == "https" else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls is not None else None, limit=_READ_SIZE
                )
        except TimeoutError:
            raise ConnectTimeout(f"connecting to {host}:{port} timed out") from None
        except (OSError, ssl.SSLError) as exc:
            raise ConnectError(str(exc) or type(exc).__name__) from None
        return _Conn(reader, writer)

    # -- one request and its response head ------------------------------------------------------------
    async def _exchange(self, conn: _Conn, origin: tuple[str, str, int], request: RawRequest) -> RawResponse:
        try:
            await _send(conn, request)
            head = await _head(conn, request.timeouts.get("read"))
        except BaseException:
            conn.close()
            raise
        headers = [(bytes(k), bytes(v)) for k, v in head.headers]
        return RawResponse(head.status_code, headers, bytes(head.reason), self, conn, origin, request.timeouts)


class _Sent(Exception):
    def __init__(self, error: HttpError, after_bytes: bool) -> None:
        self.error = error
        self.after_bytes = after_bytes


async def _send(conn: _Conn, request: RawRequest) -> None:
    timeout = request.timeouts.get("write")
    try:
        data = conn.h11.send(h11.Request(method=request.method, target=request.target, headers=request.headers))
        if isinstance(request.body, bytes):
            # head, body and end in one write: one send(2) a request instead of three
            framed = conn.h11.send(h11.Data(data=request.body)) if request.body else b""
            end = conn.h11.send(h11.EndOfMessage())
            await _write(conn, (data or b"") + (framed or b"") + (end or b""), timeout)
            return
        await _write(conn, data, timeout)
        async for chunk in request.body:
            if chunk:
                await _write(conn, conn.h11.send(h11.Data(data=chunk)), timeout)
        await _write(conn, conn.h11.send(h11.EndOfMessage()), timeout)
    except h11.LocalProtocolError as exc:
        raise LocalProtocolError(str(exc)) from None
    except _Sent as exc:
        if conn.reused and not exc.after_bytes:
            raise _Retry from None
        raise exc.error from None


async def _head(conn: _Conn, timeout: float | None) -> h11.Response:
    received = False
    while True:
        try:
            event = conn.h11.next_event()
        except h11.RemoteProtocolError as exc:
            if conn.reused and not received:
                raise _Retry from None
            raise RemoteProtocolError(str(exc)) from None
        if event is h11.NEED_DATA:
            try:
                data = await _read(conn, timeout)
            except ReadError:
                if conn.reused and not received:
                    raise _Retry from None
                raise
            if data:
                received = True
            elif not received:  # closed before a byte of the response
                if conn.reused:
                    raise _Retry
                raise RemoteProtocolError(_NO_RESPONSE)
            conn.h11.receive_data(data)
            continue
        if isinstance(event, h11.Response):
            return event
        if isinstance(event, h11.InformationalResponse):
            continue
        raise RemoteProtocolError(f"unexpected {type(event).__name__} before the response")


async def _write(conn: _Conn, data: bytes | None, timeout: float | None) -> None:
    if not data:
        return
    try:
        conn.writer.write(data)
        async with asyncio.timeout(timeout):
            await conn.writer.drain()
    except TimeoutError:
        raise _Sent(WriteTimeout("writing the request timed out"), True) from None
    except OSError as exc:
        raise _Sent(WriteError(str(exc) or type(exc).__name__), False) from None


async def _read(conn: _Conn, timeout: float | None) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await conn.reader.read(_READ_SIZE)
    except TimeoutError:
        raise ReadTimeout("reading the response timed out") from None
    except OSError as exc:
        raise ReadError(str(exc) or type(exc).__name__) from None


class RawResponse:
    """A response whose head was read; its body arrives through :meth:`aiter_raw` (as sent: not
    decoded). The connection goes back to the pool once the body was read to its end and both sides
    may go on, and is closed in every other case; :meth:`aclose` must be called either way."""

    def __init__(
        self,
        status_code: int,
        headers: list[tuple[bytes, bytes]],
        reason: bytes,
        pool: Pool,
        conn: _Conn,
        origin: tuple[str, str, int],
        timeouts: Mapping[str, float | None],
    ) -> None:
        self.status_code = status_code
        self.raw_headers = headers
        self.reason = reason
        self._pool = pool
        self._conn: _Conn | None = conn
        self._origin = origin
        self._timeout = timeouts.get("read")
        self._released = False

    @property
    def headers(self) -> dict[str, str]:
        """Lower-cased names; a repeated header's values joined with ``, `` (as HTTP allows)."""
        out: dict[str, str] = {}
        for key, value in self.raw_headers:
            name, text = key.decode("latin-1").lower(), value.decode("latin-1")
            out[name] = f"{out[name]}, {text}" if name in out else text
        return out

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        try:
            while True:
                try:
                    event = conn.h11.next_event()
                except h11.RemoteProtocolError as exc:
                    raise RemoteProtocolError(str(exc)) from None
                if event is h11.NEED_DATA:
                    conn.h11.receive_data(await _read(conn, self._timeout))
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
            self._pool._give_back(self._origin, conn)
        if not self._released:
            self._released = True
            self._pool._slots.release()


#: what every request carries unless the caller says otherwise; the body is asked for as sent
#: (``identity``): nothing to decode, and the model providers' event streams are not compressed
_DEFAULT_HEADERS = (("accept", "*/*"), ("accept-encoding", "identity"), ("user-agent", "homarus"))


@contextlib.asynccontextmanager
async def open_stream(
    pool: Pool, method: str, url: str, *, content: bytes, headers: Mapping[str, str], timeout: float
) -> AsyncIterator[RawResponse]:
    """One request through ``pool``: the response, its body to be read with ``aiter_raw``, closed
    on leaving the block."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsupportedProtocol(f"cannot send a request to {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname
    authority = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        authority += f":{parts.port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    merged = {"host": authority, **dict(_DEFAULT_HEADERS)}
    merged.update((k.lower(), v) for k, v in headers.items())
    merged["content-length"] = str(len(content))
    limits = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in merged.items()]
    request = RawRequest(method.encode(), parts.scheme, host, port, target.encode("ascii"), raw, content, limits)
    response = await pool.request(request)
    try:
        yield response
    finally:
        await response.aclose()
