"""httpx's API on :mod:`homarus.http_pool`: an httpx transport on asyncio streams and h11, without
httpcore and anyio underneath.

httpx's default transport goes through httpcore, which runs every socket operation, lock and
timeout through anyio (a cancel scope per timeout, a sniffio lookup of the running event-loop
library per lock, event and checkpoint): about 0.75 ms of CPU per request on the 2-core host of
``bench/RESULTS.md``. The connections, TLS and timeouts are the pool's; this adapter turns an
``httpx.Request`` into the pool's request, the pool's errors into httpx's exceptions of the same
names, and the body into httpx's stream (which httpx decodes), so that callers and their error
handling see httpx exactly as before. The model providers use the pool without httpx.

Not here: HTTP/2 and proxies. A process with a ``*_proxy`` variable set keeps httpx's own transport
(:func:`transport_for` returns None), which honours them.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import httpx

from homarus import http_pool
from homarus.http_pool import Pool, RawRequest, RawResponse

__all__ = ["AsyncioTransport", "transport_for"]


def transport_for(
    verify: ssl.SSLContext, *, max_connections: int = 100, max_keepalive: int = 10
) -> AsyncioTransport | None:
    """The transport for a client verifying with ``verify``; None when a proxy is configured in the
    environment (httpx's own transport then honours it)."""
    pool = http_pool.pool_for(verify, max_connections=max_connections, max_keepalive=max_keepalive)
    return AsyncioTransport(pool) if pool is not None else None


def _as_httpx(exc: http_pool.HttpError, request: httpx.Request) -> httpx.TransportError:
    kind: type[httpx.TransportError] = getattr(httpx, type(exc).__name__, httpx.TransportError)
    return kind(str(exc), request=request)


class AsyncioTransport(httpx.AsyncBaseTransport):
    """httpx's transport interface on ``pool`` (which it closes with itself)."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        body = request.stream
        raw = RawRequest(
            method=request.method.encode(),
            scheme=url.scheme,
            host=url.host,
            port=url.port or (443 if url.scheme == "https" else 80),
            target=url.raw_path,
            headers=list(request.headers.raw),
            # bytes may be sent again after the keep-alive race; a streamed body never is
            body=b"".join([chunk async for chunk in body]) if isinstance(body, httpx.ByteStream) else _chunks(body),
            timeouts=request.extensions.get("timeout", {}),
        )
        try:
            response = await self._pool.request(raw)
        except http_pool.HttpError as exc:
            raise _as_httpx(exc, request) from None
        return httpx.Response(
            response.status_code,
            headers=response.raw_headers,
            stream=_Body(response, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason},
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


async def _chunks(stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> AsyncIterator[bytes]:
    async for chunk in stream:  # type: ignore[union-attr] # an async client's stream
        yield chunk


class _Body(httpx.AsyncByteStream):
    """The pool's response body as httpx's stream, its errors as httpx's."""

    def __init__(self, response: RawResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except http_pool.HttpError as exc:
            raise _as_httpx(exc, self._request) from None

    async def aclose(self) -> None:
        await self._response.aclose()
