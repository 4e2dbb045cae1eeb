"""The asyncio + h11 transport under httpx, against real loopback servers (plain and TLS): reuse
of kept-alive connections, the keep-alive race retried once, bodies streamed and cut, request
bodies streamed, every failure as httpx's exception, connections bounded, proxies left to httpx."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from homarus import http_pool
from homarus.http_pool import Pool, open_stream
from homarus.http_transport import AsyncioTransport, transport_for
from homarus.tls import context_for
from tests.conftest import python_output

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Server"], Awaitable[None]]


class Server:
    """A loopback server whose ``handler`` writes raw bytes; counts connections and requests."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.connections = 0
        self.requests: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer, self)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        body = b""
        lowered = head.lower()
        if b"content-length:" in lowered:
            n = int(lowered.split(b"content-length:")[1].split(b"\r\n")[0])
            body = await reader.readexactly(n)
        elif b"transfer-encoding: chunked" in lowered:
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                body += chunk[:-2]
        self.requests.append(head + body)
        return body


def ok(body: bytes, *extra: bytes) -> bytes:
    headers = b"".join(h + b"\r\n" for h in extra)
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), headers, body)


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
    while (body := await server.read_request(reader)) is not None:
        writer.write(ok(b"echo:" + body))
        await writer.drain()


def client(**kwargs: float) -> httpx.AsyncClient:
    transport = AsyncioTransport(Pool(verify=context_for("http://"), **kwargs))  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, timeout=5)


async def test_kept_alive_connections_are_reused_and_bodies_arrive() -> None:
    async with Server(keep_alive) as server, client() as http:
        for i in range(3):
            r = await http.post(server.url + "/v1/x?q=1", content=b"n%d" % i)
            assert r.status_code == 200 and r.content == b"echo:n%d" % i
        assert server.connections == 1
        assert server.requests[0].startswith(b"POST /v1/x?q=1 HTTP/1.1\r\n")


async def test_a_request_with_a_bytes_body_is_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[bytes] = []
    real = asyncio.StreamWriter.write

    def counting(self: asyncio.StreamWriter, data: bytes | bytearray | memoryview) -> None:
        writes.append(bytes(data))
        real(self, data)

    async with Server(keep_alive) as server, client() as http:
        monkeypatch.setattr(asyncio.StreamWriter, "write", counting)
        r = await http.post(server.url + "/one", content=b"payload")
        monkeypatch.undo()
        assert r.content == b"echo:payload"
    sent = [w for w in writes if w.startswith(b"POST /one")]  # the server's own writes are answers
    assert len(sent) == 1 and sent[0].endswith(b"\r\n\r\npayload")


async def test_a_request_body_streamed_in_chunks() -> None:
    async def parts() -> AsyncIterator[bytes]:
        for p in (b"a" * 10, b"", b"b" * 70_000):
            yield p

    async with Server(keep_alive) as server, client() as http:
        r = await http.post(server.url, content=parts())
        assert r.content == b"echo:" + b"a" * 10 + b"b" * 70_000


async def test_the_keep_alive_race_is_retried_once_on_a_fresh_connection() -> None:
    async def drops_the_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        await server.read_request(reader)
        writer.write(ok(b"done"))  # keeps the connection open, then closes it on the next request
        await writer.drain()
        await server.read_request(reader)

    async def answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        server.handler = drops_the_second
        await keep_alive(reader, writer, server)

    async with Server(drops_the_second) as server, client() as http:
        assert (await http.get(server.url)).content == b"done"
        server.handler = answers
        assert (await http.get(server.url)).content == b"echo:"  # sent again, on a fresh connection
        assert server.connections == 2
        assert (await http.get(server.url)).content == b"echo:"  # and that one is kept
        assert server.connections == 2


async def test_a_streamed_body_is_never_sent_twice() -> None:
    async def drops_the_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        await server.read_request(reader)
        writer.write(ok(b"done"))
        await writer.drain()
        await server.read_request(reader)

    async def answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        await keep_alive(reader, writer, server)

    async with Server(drops_the_second) as server, client() as http:
        assert (await http.get(server.url)).content == b"done"
        server.handler = answers
        calls: list[int] = []

        async def streamed() -> AsyncIterator[bytes]:
            calls.append(1)
            yield b"side effect"

        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await http.post(server.url, content=streamed())  # never twice: fails instead
        assert calls == [1] and server.connections == 1


async def test_a_fresh_connection_closed_before_the_response_is_not_retried() -> None:
    async def hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        await server.read_request(reader)

    async with Server(hangs_up) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await http.post(server.url, content=b"once")
        assert server.connections == 1 and len(server.requests) == 1


async def test_connection_close_is_honoured() -> None:
    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        while await server.read_request(reader) is not None:
            writer.write(ok(b"x", b"connection: close"))
            await writer.drain()

    async with Server(closing) as server, client() as http:
        for _ in range(2):
            assert (await http.get(server.url)).content == b"x"
        assert server.connections == 2


async def test_a_stream_left_early_closes_its_connection_and_the_next_request_opens_one() -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        while await server.read_request(reader) is not None:
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n")
            for i in range(3):
                writer.write(b"%x\r\ndata: %d\n\n\r\n" % (len(b"data: 0\n\n"), i))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    async with Server(chunked) as server, client() as http:
        async with http.stream("GET", server.url) as r:
            got = [chunk async for chunk in r.aiter_bytes()]
        assert b"".join(got) == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
        async with http.stream("GET", server.url) as r:  # the same connection: read to its end above
            async for _ in r.aiter_bytes():
                break  # left with the body unread
        assert (await http.get(server.url)).status_code == 200
        assert server.connections == 2


async def test_failures_are_httpx_errors() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        await server.read_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()

    quiet = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        await server.read_request(reader)
        await quiet.wait()

    async def cut_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly this")
        await writer.drain()

    async with client() as http:
        async with Server(garbage) as server:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get(server.url)
        async with Server(silent) as server:
            with pytest.raises(httpx.ReadTimeout):
                await http.get(server.url, timeout=httpx.Timeout(5, read=0.2))
            quiet.set()
        async with Server(cut_body) as server:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get(server.url)
        async with Server(keep_alive) as server:
            port = server.port
        with pytest.raises(httpx.ConnectError):
            await http.get(f"http://127.0.0.1:{port}/")
        with pytest.raises(httpx.UnsupportedProtocol):
            await http.get("ftp://127.0.0.1/")


async def test_connections_in_flight_are_bounded() -> None:
    release = asyncio.Event()

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        await server.read_request(reader)
        await release.wait()
        writer.write(ok(b"late"))
        await writer.drain()

    async with Server(slow) as server, client(max_connections=1) as http:
        first = asyncio.create_task(http.get(server.url))
        await asyncio.sleep(0.1)
        with pytest.raises(httpx.PoolTimeout):
            await http.get(server.url, timeout=httpx.Timeout(5, pool=0.2))
        release.set()
        assert (await first).content == b"late"
        assert (await http.get(server.url)).content == b"late"  # the slot came back


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"]
    args += ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        ["openssl", *args],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_tls_is_verified_with_the_given_context(tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    async with Server(keep_alive, tls=server_ctx) as server:
        async with httpx.AsyncClient(transport=AsyncioTransport(Pool(verify=trusting))) as http:
            assert (await http.post(server.url, content=b"s")).content == b"echo:s"
            assert (await http.post(server.url, content=b"t")).content == b"echo:t"
        assert server.connections == 1
        async with httpx.AsyncClient(transport=AsyncioTransport(Pool(verify=context_for("http://")))) as http:
            with pytest.raises(httpx.ConnectError):  # trusts no CA: fails closed
                await http.get(server.url)


def test_a_proxy_in_the_environment_leaves_the_requests_to_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = context_for("http://")
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        for spelled in (name, name.upper()):
            monkeypatch.delenv(spelled, raising=False)
    assert isinstance(transport_for(ctx), AsyncioTransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert transport_for(ctx) is None


async def test_open_stream_sends_the_default_headers_and_reuses_the_connection() -> None:
    async def streamed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        while await server.read_request(reader) is not None:
            writer.write(ok(b"data: {}\n\n" * 3, b"content-type: text/event-stream", b"x-two: a", b"X-Two: b"))
            await writer.drain()

    pool = Pool(verify=context_for("http://"))
    async with Server(streamed) as server:
        headers = {"Content-Type": "application/json", "authorization": "Bearer k"}
        for _ in range(2):
            async with open_stream(
                pool, "POST", server.url + "/v1?x=1", content=b"{}", headers=headers, timeout=5
            ) as r:
                assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
                assert r.headers["x-two"] == "a, b"
                assert b"".join([c async for c in r.aiter_raw()]) == b"data: {}\n\n" * 3
        head = server.requests[0].split(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"post /v1?x=1 http/1.1\r\n")
        for line in (b"accept-encoding: identity", b"user-agent: homarus", b"authorization: bearer k"):
            assert line in head
        assert b"host: 127.0.0.1:%d" % server.port in head and b"content-length: 2" in head
        assert server.connections == 1  # each stream closed its response: the connection was kept
    await pool.aclose()


async def test_the_pool_raises_its_own_errors() -> None:
    pool = Pool(verify=context_for("http://"))
    async with Server(keep_alive) as server:
        port = server.port
    with pytest.raises(http_pool.ConnectError):  # the server is gone: nothing listens there
        async with open_stream(pool, "POST", f"http://127.0.0.1:{port}/", content=b"", headers={}, timeout=2):
            pass
    with pytest.raises(http_pool.UnsupportedProtocol):
        async with open_stream(pool, "POST", "ftp://127.0.0.1/", content=b"", headers={}, timeout=2):
            pass
    assert issubclass(http_pool.ReadTimeout, http_pool.TimeoutException)
    await pool.aclose()


def test_the_pool_and_a_provider_need_no_httpx() -> None:
    script = (
        "import sys\n"
        "import homarus.http_pool, homarus.providers.openai_completions, homarus.providers.anthropic_messages\n"
        "print('httpx' in sys.modules, 'h11' in sys.modules)\n"
    )
    assert python_output(script).split() == ["False", "True"]
