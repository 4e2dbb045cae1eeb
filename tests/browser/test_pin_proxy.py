"""The browser's pinning proxy with real sockets: it connects to the address the egress checked
(CONNECT tunnels and absolute-form requests), refuses what the policy refuses, and answers bad
input with a clear status instead of hanging."""

from __future__ import annotations

import asyncio

from homarus.browser.egress import Egress
from homarus.browser.pin_proxy import PinningProxy


async def _origin() -> tuple[asyncio.Server, int, list[bytes]]:
    seen: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


async def _ask(proxy: PinningProxy, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(raw)
    await writer.drain()
    try:
        async with asyncio.timeout(10):
            return await reader.read(65536) if raw.startswith(b"CONNECT") else await reader.read()
    finally:
        writer.close()


async def test_requests_go_to_the_checked_address_and_the_rest_is_refused() -> None:
    origin, port, seen = await _origin()

    async def resolver(host: str, _port: int) -> list[str]:
        return {"app.test": ["127.0.0.1"], "evil.test": ["10.0.0.7"]}.get(host, [])

    egress = Egress(allow_hosts=("app.test",), resolver=resolver)
    refused: list[tuple[str, str]] = []
    proxy = PinningProxy(egress.pin, lambda url, why: refused.append((url, why)))
    await proxy.start()
    try:
        answer = await _ask(proxy, f"GET http://app.test:{port}/x?y=1 HTTP/1.1\r\nHost: app.test\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hello")
        assert seen[-1].startswith(b"GET /x?y=1 HTTP/1.1\r\n") and b"Connection: close" in seen[-1]
        tunnel = await _ask(proxy, f"CONNECT app.test:{port} HTTP/1.1\r\nHost: app.test:{port}\r\n\r\n".encode())
        assert tunnel.startswith(b"HTTP/1.1 200 Connection Established")
        blocked = await _ask(proxy, f"GET http://evil.test:{port}/ HTTP/1.1\r\n\r\n".encode())
        assert blocked.startswith(b"HTTP/1.1 403") and b"10.0.0.7" in blocked
        assert refused and refused[-1][0].startswith("http://evil.test")
        for bad in (b"NONSENSE\r\n\r\n", b"GET /relative HTTP/1.1\r\n\r\n", b"GET ftp://app.test/ HTTP/1.1\r\n\r\n"):
            assert (await _ask(proxy, bad)).startswith(b"HTTP/1.1 400"), bad
        assert len(seen) == 1  # only the one allowed absolute-form request reached the origin
    finally:
        await proxy.close()
        origin.close()
