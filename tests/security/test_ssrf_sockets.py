"""GuardedClient on real loopback sockets: redirects, credentials, body cap, gzip, timeout, proxies, TLS.

The guard blocks loopback, so these use the test-only exemption ``LOOPBACK_OK`` (127.0.0.1 only);
redirects to any other private address are still refused before a connection is made.
"""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ipaddress
import os
import shutil
import ssl
import tempfile
import time
from typing import Any

import httpx
import pytest

from homarus.security.pinned_transport import PIN_EXTENSION, Pin, PinnedTransport
from homarus.security.ssrf import FetchError, FetchTimeout, GuardedClient, SsrfBlocked, SsrfPolicy
from tests.fakes.http_server import Answer, Seen, serve
from tests.security.ssrf_helpers import PUBLIC_IP, fixed_resolver, loopback_client

# ---- real sockets ------------------------------------------------------------------------------


async def test_real_redirect_chain_and_limit() -> None:
    def route(req: Seen) -> Answer:
        n = int(req.target.strip("/") or 0)
        return Answer(302, {"location": f"/{n + 1}"}) if n < 3 else Answer(200, {"content-type": "text/plain"}, b"done")

    async with serve(route) as srv, loopback_client() as client:
        result = await client.fetch(srv.url("/0"), max_bytes=100, timeout_s=5)
        assert (result.status, result.body, len(result.redirects)) == (200, b"done", 3)
        assert result.final_url == srv.url("/3")
        with pytest.raises(SsrfBlocked, match=r"Too many redirects \(limit: 2\)"):
            await client.fetch(srv.url("/0"), max_bytes=100, timeout_s=5, max_redirects=2)


@pytest.mark.parametrize(
    "target", ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://127.0.0.2/"]
)
async def test_real_redirect_to_private_is_blocked_before_connecting(target: str) -> None:
    pins: list[Pin] = []

    class Recording(PinnedTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            pins.append(request.extensions[PIN_EXTENSION])
            return await super().handle_async_request(request)

    async with serve(lambda req: Answer(302, {"location": target})) as srv:
        async with loopback_client(transport=Recording(httpx.create_ssl_context())) as client:
            with pytest.raises(SsrfBlocked) as info:
                await client.fetch(srv.url("/"), max_bytes=100, timeout_s=5)
        assert info.value.rule == "address"
        assert len(srv.requests) == 1 and [p.address for p in pins] == ["127.0.0.1"]


async def test_real_cross_origin_redirect_drops_authorization_and_cookie() -> None:
    async with (
        serve(lambda req: Answer(200, body=b"second")) as second,
        serve(lambda req: Answer(302, {"location": second.url("/landing")})) as first,
        loopback_client() as client,
    ):
        result = await client.fetch(
            first.url("/").replace("http://", "http://alice:pw@"),
            headers={"cookie": "sid=1", "x-api-key": "k", "accept": "text/plain"},
            max_bytes=100,
            timeout_s=5,
        )
    assert result.body == b"second"
    (seen_first,) = first.requests
    (seen_second,) = second.requests
    assert seen_first.headers["authorization"].startswith("Basic ") and seen_first.headers["cookie"] == "sid=1"
    assert not {"authorization", "cookie", "x-api-key"} & set(seen_second.headers)
    assert seen_second.headers["accept"] == "text/plain"


async def test_real_body_cap_stops_reading() -> None:
    big = 8 * 1024 * 1024
    async with serve(lambda req: Answer(200, {"content-type": "text/plain"}, stream_bytes=big)) as srv:
        async with loopback_client() as client:
            result = await client.fetch(srv.url("/"), max_bytes=100_000, timeout_s=5)
            assert (len(result.body), result.truncated) == (100_000, True)
            await asyncio.sleep(0.05)
        assert srv.streamed < big


async def test_real_gzip_is_decoded_within_the_cap() -> None:
    bomb = gzip.compress(b"\0" * 20_000_000)
    small = gzip.compress(b"hello gzip")
    routes = {"/bomb": bomb, "/small": small}
    async with (
        serve(lambda req: Answer(200, {"content-encoding": "gzip"}, routes[req.target])) as srv,
        loopback_client() as client,
    ):
        ok = await client.fetch(srv.url("/small"), max_bytes=1000, timeout_s=5)
        capped = await client.fetch(srv.url("/bomb"), max_bytes=1000, timeout_s=5)
    assert (ok.body, ok.truncated) == (b"hello gzip", False)
    assert (len(capped.body), capped.truncated) == (1000, True)


async def test_real_timeout_and_refused_connection() -> None:
    async with serve(lambda req: Answer(200, delay_s=30)) as srv, loopback_client() as client:
        started = time.monotonic()
        with pytest.raises(FetchTimeout, match="timeout"):
            await client.fetch(srv.url("/"), max_bytes=100, timeout_s=0.3)
        assert time.monotonic() - started < 3
        port = srv.port
    async with loopback_client() as client:
        with pytest.raises(FetchError, match="Network error"):
            await client.fetch(f"http://127.0.0.1:{port}/", max_bytes=100, timeout_s=5)


async def test_environment_proxies_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://10.255.255.1:9")
    async with serve(lambda req: Answer(200, body=b"direct")) as srv, loopback_client() as client:
        result = await client.fetch(srv.url("/"), max_bytes=100, timeout_s=5)
    assert result.body == b"direct"


async def test_explicit_proxy_tunnels_to_the_pinned_ip() -> None:
    lines: list[str] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines.append(head.split(b"\r\n", 1)[0].decode())
        writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client = GuardedClient(
            resolver=fixed_resolver({}), proxy_url=f"http://127.0.0.1:{port}", allow_private_proxy=True
        )
        async with client:
            with pytest.raises(FetchError, match="proxy refused CONNECT"):
                await client.fetch("https://public.example/x", max_bytes=100, timeout_s=5)
    finally:
        server.close()
        await server.wait_closed()
    assert lines == [f"CONNECT {PUBLIC_IP}:443 HTTP/1.1"]


def _tls_pair(hostname: str) -> tuple[ssl.SSLContext, ssl.SSLContext, list[str | None]]:
    """A throwaway CA and a server certificate for ``hostname``: (server context, client context, SNIs seen)."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def cert(subject: str, key: Any, issuer: str, issuer_key: Any, ca: bool) -> Any:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if ca:
            builder = builder.add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
        else:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = cert("Homarus Test CA", ca_key, "Homarus Test CA", ca_key, True)
    leaf = cert(hostname, leaf_key, "Homarus Test CA", ca_key, False)
    pem = serialization.Encoding.PEM
    tmp = tempfile.mkdtemp()
    cert_path, key_path = os.path.join(tmp, "leaf.pem"), os.path.join(tmp, "leaf.key")
    with open(cert_path, "wb") as f:
        f.write(leaf.public_bytes(pem))
    with open(key_path, "wb") as f:
        f.write(leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_path, key_path)
    shutil.rmtree(tmp)
    snis: list[str | None] = []

    def record_sni(sock: Any, name: str | None, ctx: ssl.SSLContext) -> None:
        snis.append(name)

    server.sni_callback = record_sni
    client = ssl.create_default_context(cadata=ca_cert.public_bytes(pem).decode())
    return server, client, snis


async def test_tls_goes_to_the_pinned_ip_with_the_hostname_as_sni_and_verified_name() -> None:
    server_ctx, client_ctx, snis = _tls_pair("pinned.test")
    resolver = fixed_resolver({"pinned.test": ["127.0.0.2"], "other.test": ["127.0.0.2"]})
    policy = SsrfPolicy(allow_addresses=frozenset({ipaddress.ip_address("127.0.0.2")}))
    async with (
        serve(lambda req: Answer(200, body=b"tls ok"), host="127.0.0.2", ssl_context=server_ctx) as srv,
        GuardedClient(policy=policy, resolver=resolver, verify=client_ctx) as client,
    ):
        result = await client.fetch(f"https://pinned.test:{srv.port}/", max_bytes=100, timeout_s=5)
        assert (result.body, result.address) == (b"tls ok", "127.0.0.2")
        assert srv.requests[0].headers["host"] == f"pinned.test:{srv.port}"
        with pytest.raises(FetchError):  # same IP, but the certificate is not for this name
            await client.fetch(f"https://other.test:{srv.port}/", max_bytes=100, timeout_s=5)
    assert snis[:2] == ["pinned.test", "other.test"]


async def test_idna_name_is_pinned_and_sent_in_ascii() -> None:
    resolver = fixed_resolver({"xn--bcher-kva.example": ["127.0.0.1"]})
    async with serve(lambda req: Answer(200, body=b"idna")) as srv, loopback_client(resolver=resolver) as client:
        result = await client.fetch(f"http://bücher.example:{srv.port}/", max_bytes=100, timeout_s=5)
    assert result.body == b"idna" and srv.requests[0].headers["host"] == f"xn--bcher-kva.example:{srv.port}"
