"""HTTP to a chat platform: the client every adapter sends with (:func:`platform_client`), and a
request whose sending is recorded just before its last byte is written (:func:`marked`).

The platform acts on a request only once its whole body arrived (``Content-Length``), so the
record that a piece was sent (the outbox's ``transmitted``) is committed while the request is
still incomplete: a crash before that record leaves a request the platform discards (sent again
after a restart), a crash after it counts the piece as sent. Only the few microseconds between
the commit and the last byte's write are ambiguous (the piece could be lost there), against the
round trip of a commit if the record followed the write (a duplicate). Every adapter that sends
over HTTP marks its sends with :func:`marked`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import httpx

from homarus.http_transport import transport_for
from homarus.tls import context_for

__all__ = ["marked", "platform_client"]

_CONNECTIONS: Final = 20
_KEEPALIVE: Final = 10


def platform_client(
    api_root: str,
    *,
    timeout_s: float,
    base_url: str = "",
    headers: dict[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """A pooled client for a platform's API at ``api_root`` (its TLS context: none for plain
    HTTP, a local stand-in), connecting within 10 s and answering within ``timeout_s``."""
    verify = context_for(api_root)
    return httpx.AsyncClient(
        base_url=base_url,
        headers=headers,
        timeout=httpx.Timeout(timeout_s, connect=10.0),
        transport=transport or transport_for(verify, max_connections=_CONNECTIONS, max_keepalive=_KEEPALIVE),
        limits=httpx.Limits(max_connections=_CONNECTIONS, max_keepalive_connections=_KEEPALIVE),
        verify=verify,
    )


def marked(
    client: httpx.AsyncClient, request: httpx.Request, on_transmitted: Callable[[], Awaitable[None]]
) -> httpx.Request:
    """``request`` with ``on_transmitted`` awaited just before its last body byte is written."""
    body = request.read()

    async def chunks() -> AsyncIterator[bytes]:
        if len(body) > 1:
            yield body[:-1]
        await on_transmitted()
        yield body[-1:]

    headers = {k: v for k, v in request.headers.items() if k.lower() != "transfer-encoding"}
    headers["content-length"] = str(len(body))
    return client.build_request(
        request.method, request.url, headers=headers, content=chunks(), extensions=request.extensions
    )
