"""An httpx transport that can only connect to the address the SSRF guard pinned for the request.

The request keeps its real URL, so httpx sets ``Host`` and httpcore sends TLS SNI and verifies
the certificate for the hostname. What changes is *where the socket goes*: every request carries
a :class:`Pin` (request extension ``homarus.pin``), and gets a fresh ``httpcore.AsyncHTTPConnection``
whose network backend owns exactly that pin. The backend never resolves a name: asked for any
host/port other than the pinned one it refuses, so DNS rebinding between the check and the
connect has nothing to act on. There is no connection pool, hence no keep-alive reuse of a socket
opened for another pin.

With an explicit proxy the backend connects to the proxy's pinned address and opens a
``CONNECT <pinned-ip>:<port>`` tunnel; TLS to the target then runs inside it with the hostname
as SNI. Only https targets go through a proxy (the caller enforces it), so the proxy never gets
to resolve a name itself.
"""

from __future__ import annotations

import ipaddress
import ssl
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

__all__ = ["PIN_EXTENSION", "GuardedBackendBase", "Pin", "PinnedTransport", "read_capped"]

PIN_EXTENSION = "homarus.pin"
_MAX_PROXY_REPLY = 16_384


@dataclass(frozen=True, slots=True)
class Pin:
    """The one place a request may connect to."""

    #: normalised target host as it appears in the URL (IDNA ASCII or compressed IP text)
    host: str
    port: int
    #: the validated IP the socket goes to
    address: str
    #: ``(pinned proxy IP, proxy port)`` when going through an explicit proxy
    proxy: tuple[str, int] | None = None


def same_host(a: str, b: str) -> bool:
    a, b = a.strip("[]").lower(), b.strip("[]").lower()
    if a == b:
        return True
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return False


class GuardedBackendBase:
    """What every guarded network backend does besides its own ``connect_tcp`` (this one for
    httpx's httpcore, the MCP client's for the SDK's httpcore fork): no unix sockets, and the
    inner backend's sleep. Subclasses set ``_inner`` and ``refusal`` (their library's ConnectError)."""

    _inner: Any
    refusal: type[Exception]

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> Any:
        raise self.refusal("unix sockets are not reachable through the SSRF guard")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _PinnedBackend(GuardedBackendBase, httpcore.AsyncNetworkBackend):
    _inner: httpcore.AnyIOBackend

    def __init__(self, pin: Pin) -> None:
        self._pin = pin
        self._inner = httpcore.AnyIOBackend()
        self.refusal = httpcore.ConnectError

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        pin = self._pin
        if not same_host(host, pin.host) or port != pin.port:
            raise httpcore.ConnectError(f"refusing to connect to unpinned {host}:{port}")
        if pin.proxy is None:
            return await self._inner.connect_tcp(pin.address, port, timeout, local_address, socket_options)
        stream = await self._inner.connect_tcp(pin.proxy[0], pin.proxy[1], timeout, local_address, socket_options)
        try:
            await _open_tunnel(stream, pin, timeout)
        except BaseException:
            await stream.aclose()
            raise
        return stream


async def _open_tunnel(stream: httpcore.AsyncNetworkStream, pin: Pin, timeout: float | None) -> None:
    """``CONNECT <ip>:<port>`` through the proxy: the tunnel goes to the pinned address, never a name."""
    addr = f"[{pin.address}]" if ":" in pin.address else pin.address
    request = f"CONNECT {addr}:{pin.port} HTTP/1.1\r\nHost: {addr}:{pin.port}\r\n\r\n"
    await stream.write(request.encode("ascii"), timeout)
    reply = b""
    while b"\r\n\r\n" not in reply:
        if len(reply) > _MAX_PROXY_REPLY:
            raise httpcore.ProxyError("proxy reply headers too large")
        chunk = await stream.read(4096, timeout)
        if not chunk:
            raise httpcore.ProxyError("proxy closed the connection during CONNECT")
        reply += chunk
    status_line = reply.split(b"\r\n", 1)[0].decode("latin-1")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[1].isdigit() or not 200 <= int(fields[1]) < 300:
        raise httpcore.ProxyError(f"proxy refused CONNECT: {status_line[:120]}")


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """httpcore exceptions → the httpx exception of the same name (what every httpx caller expects)."""
    try:
        yield
    except httpcore.TimeoutException as exc:
        cls = getattr(httpx, type(exc).__name__, httpx.TimeoutException)
        raise cls(str(exc)) from exc
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError, httpcore.UnsupportedProtocol) as exc:
        cls = getattr(httpx, type(exc).__name__, httpx.TransportError)
        raise cls(str(exc)) from exc


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: Any, connection: httpcore.AsyncHTTPConnection) -> None:
        self._stream = stream
        self._connection = connection

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        try:
            if hasattr(self._stream, "aclose"):
                await self._stream.aclose()
        finally:
            await self._connection.aclose()


class PinnedTransport(httpx.AsyncBaseTransport):
    """One fresh HTTP/1.1 connection per request, to the request's :class:`Pin` and nowhere else."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._ssl_context = ssl_context

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        pin = request.extensions.get(PIN_EXTENSION)
        if not isinstance(pin, Pin):
            raise httpx.ConnectError("request has no pinned address; the guarded transport never resolves names")
        url = request.url
        host = url.raw_host.decode("ascii")  # IDNA names as sent on the wire (url.host is the Unicode form)
        port = url.port or (443 if url.scheme == "https" else 80)
        if not same_host(host, pin.host) or port != pin.port:
            raise httpx.ConnectError(f"pin for {pin.host}:{pin.port} does not match {host}:{port}")
        assert isinstance(request.stream, httpx.AsyncByteStream)
        connection = httpcore.AsyncHTTPConnection(
            origin=httpcore.Origin(url.raw_scheme, url.raw_host, port),
            ssl_context=self._ssl_context,
            network_backend=_PinnedBackend(pin),
        )
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions={k: v for k, v in request.extensions.items() if k != PIN_EXTENSION},
        )
        try:
            with _mapped_errors():
                response = await connection.handle_async_request(core_request)
        except BaseException:
            await connection.aclose()
            raise
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream, connection),
            extensions=response.extensions,
        )


async def _raw_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    if response.is_stream_consumed:  # a transport that answered with bytes in memory (mocks)
        yield response.content
        return
    async for chunk in response.aiter_raw():
        yield chunk


async def read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """Stream at most ``max_bytes`` of body (raw and decoded): ``(body, truncated)``; stops reading at the cap.

    The request asks for ``identity``; a server that gzips anyway is decoded here with a bounded
    output, so a compression bomb costs at most ``max_bytes``.
    """
    encoding = response.headers.get("content-encoding", "").strip().lower()
    decoder: zlib._Decompress | None = None
    if encoding in ("gzip", "x-gzip", "deflate") and not response.is_stream_consumed:
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, auto-detected
    out = bytearray()
    raw = 0
    truncated = False
    async for chunk in _raw_chunks(response):
        raw += len(chunk)
        data = chunk
        if decoder is not None:
            try:
                data = decoder.decompress(chunk, max_bytes + 1 - len(out))
            except zlib.error as exc:
                raise httpx.DecodingError(f"Could not decode the {encoding} response body: {exc}") from None
            truncated = bool(decoder.unconsumed_tail)
        room = max_bytes - len(out)
        if len(data) > room:
            data, truncated = data[:room], True
        out += data
        if truncated or raw > max_bytes:
            return bytes(out), True
    return bytes(out), False
