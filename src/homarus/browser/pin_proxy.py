"""A loopback forward proxy that connects the browser only to the address it checked.

The request router (``egress.py``) checks each URL by resolving its host, but the request itself
is then made by Chromium or Playwright's fetcher, which resolve the name again: a name that
answers a public address to the check and a private one to the fetch (DNS rebinding) would reach
the private one. Every browser connection goes through this proxy instead (Chromium's proxy,
loopback included, which Playwright's fetcher follows too): for a ``CONNECT host:port`` tunnel or
an absolute-form ``http://`` request it resolves the host once, refuses it if any answer is
blocked, and opens the connection to exactly that address. TLS stays end to end (the tunnel
carries it; SNI and certificate checks still name the host).

Hand-written because no maintained asyncio library offers a forward proxy with a per-connection
resolve-check-connect hook; it is small: one request head read (bounded), then bytes copied.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import urlsplit

__all__ = ["PinningProxy"]

log = logging.getLogger("homarus.browser")

MAX_HEAD: Final = 32 * 1024
HEAD_TIMEOUT_S: Final = 15.0
CONNECT_TIMEOUT_S: Final = 15.0
#: hop-by-hop headers of the client's request to the proxy, never forwarded
_HOP: Final = frozenset({b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"})

#: (url) -> the address to connect to, or raises with the reason for refusing it
Pin = Callable[[str], Awaitable[str]]


class PinningProxy:
    def __init__(self, pin: Pin, on_refused: Callable[[str, str], None] | None = None) -> None:
        self.pin = pin
        self.on_refused = on_refused
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=MAX_HEAD)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(HEAD_TIMEOUT_S):
            head = await reader.readuntil(b"\r\n\r\n")
        request_line, _, rest = head.partition(b"\r\n")
        parts = request_line.split(b" ")
        if len(parts) != 3:
            return await _answer(writer, 400, "bad request line")
        method, target, version = parts
        tunnel = method.upper() == b"CONNECT"
        url = f"https://{target.decode('latin-1')}/" if tunnel else target.decode("latin-1")
        split = urlsplit(url)
        if split.scheme not in ("http", "https") or not split.hostname:
            return await _answer(writer, 400, "absolute http(s) URL or CONNECT host:port required")
        port = split.port or (443 if split.scheme == "https" else 80)
        try:
            address = await self.pin(url)
        except Exception as exc:  # refused by the policy, or the name does not resolve
            log.info("browser: refused %s (%s)", split.hostname, exc)
            if self.on_refused is not None:
                self.on_refused(url, str(exc) or type(exc).__name__)
            return await _answer(writer, 403, f"blocked: {exc}")
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                up_reader, up_writer = await asyncio.open_connection(address, port)
        except (OSError, TimeoutError) as exc:
            return await _answer(writer, 502, f"cannot connect: {type(exc).__name__}")
        try:
            if tunnel:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
            else:
                path = (split.path or "/") + (f"?{split.query}" if split.query else "")
                up_writer.write(b" ".join([method, path.encode("latin-1"), version]) + b"\r\n" + _forwarded(rest))
                await up_writer.drain()
            await _splice(reader, writer, up_reader, up_writer)
        finally:
            with contextlib.suppress(Exception):
                up_writer.close()


def _forwarded(rest: bytes) -> bytes:
    """The request's headers for the origin: hop-by-hop ones dropped, one request per connection
    (a kept-alive proxy connection could carry the next request to another host)."""
    lines = [line for line in rest.split(b"\r\n") if line]
    kept = [line for line in lines if line.split(b":", 1)[0].strip().lower() not in _HOP]
    return b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n"


async def _splice(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while chunk := await src.read(65536):
                dst.write(chunk)
                await dst.drain()
        finally:
            with contextlib.suppress(Exception):
                dst.write_eof()

    tasks = [asyncio.ensure_future(pump(reader, up_writer)), asyncio.ensure_future(pump(up_reader, writer))]
    try:
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for task in tasks:
            task.cancel()


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = text.encode("utf-8", "replace")[:1000]
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n".encode("latin-1")
        + body
    )
    with contextlib.suppress(Exception):
        await writer.drain()
