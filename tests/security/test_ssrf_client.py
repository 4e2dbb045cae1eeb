"""GuardedClient on a mock transport: what each request carries, redirects, headers, caps, timeouts.

``httpx.MockTransport`` receives every request with its :class:`Pin` (``request.extensions``), so
these tests see exactly where each connection would go, without sockets.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from homarus.security.pinned_transport import PIN_EXTENSION, Pin, PinnedTransport
from homarus.security.ssrf import BLOCKED_RESOLVED, FetchError, FetchTimeout, GuardedClient, SsrfBlocked
from tests.security.ssrf_helpers import OTHER_PUBLIC_IP, PUBLIC_IP, fixed_resolver


class Recorder:
    """A mock transport answering from a route and keeping every request it was handed."""

    def __init__(self, route: Callable[[httpx.Request], httpx.Response]) -> None:
        self.route = route
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        return self.route(request)

    def pins(self) -> list[Pin]:
        return [r.extensions[PIN_EXTENSION] for r in self.requests]


def mock_client(route: Callable[[httpx.Request], httpx.Response], **kwargs: Any) -> tuple[GuardedClient, Recorder]:
    recorder = Recorder(route)
    kwargs.setdefault("resolver", fixed_resolver({"other.example": [OTHER_PUBLIC_IP]}))
    return GuardedClient(transport=httpx.MockTransport(recorder), **kwargs), recorder


def redirect_map(table: dict[str, tuple[int, str]]) -> Callable[[httpx.Request], httpx.Response]:
    def route(request: httpx.Request) -> httpx.Response:
        hop = table.get(str(request.url))
        if hop is None:
            return httpx.Response(200, content=b"final")
        return httpx.Response(hop[0], headers={"location": hop[1]} if hop[1] else {})

    return route


# ---- mock transport: what each request carries -----------------------------------------------


async def test_request_keeps_hostname_and_carries_the_pin() -> None:
    client, rec = mock_client(lambda r: httpx.Response(200, content=b"hi"))
    async with client:
        result = await client.fetch("https://public.example:8443/p?q=1#frag", max_bytes=100, timeout_s=5)
    (request,) = rec.requests
    assert str(request.url) == "https://public.example:8443/p?q=1"
    assert request.headers["host"] == "public.example:8443"
    assert request.headers["accept-encoding"] == "identity"
    assert request.extensions[PIN_EXTENSION] == Pin("public.example", 8443, PUBLIC_IP)
    assert (result.status, result.body, result.address, result.redirects) == (200, b"hi", PUBLIC_IP, ())


SENSITIVE = {
    "authorization": "Bearer secret",
    "proxy-authorization": "Basic eA==",
    "cookie": "sid=1",
    "cookie2": "x=1",
    "x-api-key": "k",
    "private-token": "t",
    "x-trace": "trace",
}
KEPT = {"accept": "text/html", "content-type": "text/plain", "user-agent": "ua/1"}


async def test_cross_origin_redirect_strips_credentials_and_keeps_safe_headers() -> None:
    route = redirect_map({"https://public.example/a": (302, "https://other.example/b")})
    client, rec = mock_client(route)
    async with client:
        result = await client.fetch(
            "https://public.example/a", headers={**SENSITIVE, **KEPT}, max_bytes=100, timeout_s=5
        )
    first, second = rec.requests
    assert all(first.headers.get(k) == v for k, v in {**SENSITIVE, **KEPT}.items())
    assert not any(k in second.headers for k in SENSITIVE)
    assert all(second.headers.get(k) == v for k, v in KEPT.items())
    assert second.extensions[PIN_EXTENSION].address == OTHER_PUBLIC_IP
    assert result.final_url == "https://other.example/b" and result.redirects == ("https://other.example/b",)


async def test_same_origin_redirect_keeps_credentials_and_scheme_change_does_not() -> None:
    route = redirect_map(
        {"https://public.example/a": (301, "/b"), "https://public.example/b": (302, "http://public.example/c")}
    )
    client, rec = mock_client(route)
    async with client:
        await client.fetch(
            "https://public.example/a", headers={"authorization": "Bearer s"}, max_bytes=100, timeout_s=5
        )
    assert [r.headers.get("authorization") for r in rec.requests] == ["Bearer s", "Bearer s", None]


async def test_url_credentials_become_basic_auth_and_are_dropped_cross_origin() -> None:
    route = redirect_map({"https://public.example/a": (302, "https://other.example/b")})
    client, rec = mock_client(route)
    async with client:
        await client.fetch("https://user:p%40ss@public.example/a", max_bytes=100, timeout_s=5)
    assert rec.requests[0].headers["authorization"] == "Basic dXNlcjpwQHNz"
    assert "authorization" not in rec.requests[1].headers
    assert "user" not in str(rec.requests[0].url)


@pytest.mark.parametrize(
    ("status", "method", "target", "want_method", "want_body"),
    [
        (301, "POST", "/next", "GET", b""),
        (302, "POST", "/next", "GET", b""),
        (303, "PUT", "/next", "GET", b""),
        (303, "HEAD", "/next", "HEAD", b""),
        (307, "POST", "/next", "POST", b"payload"),
        (308, "PUT", "/next", "PUT", b"payload"),
        (307, "POST", "https://other.example/next", "POST", b""),
    ],
)
async def test_redirect_method_and_body_rules(
    status: int, method: str, target: str, want_method: str, want_body: bytes
) -> None:
    client, rec = mock_client(redirect_map({"https://public.example/start": (status, target)}))
    async with client:
        await client.fetch(
            "https://public.example/start",
            method=method,
            content=b"payload",
            headers={"content-type": "text/plain"},
            max_bytes=100,
            timeout_s=5,
        )
    second = rec.requests[1]
    assert (second.method, second.content) == (want_method, want_body)
    assert ("content-type" in second.headers) == bool(want_body)


async def test_redirect_limits_loops_and_missing_location() -> None:
    chain = {f"https://public.example/{i}": (302, f"/{i + 1}") for i in range(5)}
    client, rec = mock_client(redirect_map(chain))
    async with client:
        result = await client.fetch("https://public.example/0", max_bytes=100, timeout_s=5, max_redirects=5)
        assert result.final_url == "https://public.example/5" and len(result.redirects) == 5
    client, rec = mock_client(redirect_map(chain))
    async with client:
        with pytest.raises(SsrfBlocked, match=r"^Too many redirects \(limit: 1\)$"):
            await client.fetch("https://public.example/0", max_bytes=100, timeout_s=5, max_redirects=1)
    assert len(rec.requests) == 2
    loop = {"https://public.example/a": (302, "/b"), "https://public.example/b": (307, "https://PUBLIC.example/a#x")}
    client, rec = mock_client(redirect_map(loop))
    async with client:
        with pytest.raises(SsrfBlocked, match=r"^Redirect loop detected$"):
            await client.fetch("https://public.example/a", max_bytes=100, timeout_s=5)
    client, rec = mock_client(redirect_map({"https://public.example/a": (302, "")}))
    async with client:
        with pytest.raises(FetchError, match=r"^Redirect missing location header \(302\)$"):
            await client.fetch("https://public.example/a", max_bytes=100, timeout_s=5)


@pytest.mark.parametrize(
    "location",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://localhost:6379/",
        "http://0x7f000001/",
        "gopher://public.example/",
        "http://evil.example\\@127.0.0.1/",
    ],
)
async def test_redirect_to_forbidden_target_is_refused_before_any_request(location: str) -> None:
    calls: list[str] = []
    client, rec = mock_client(
        redirect_map({"https://public.example/": (302, location)}), resolver=fixed_resolver({}, calls)
    )
    async with client:
        with pytest.raises(SsrfBlocked):
            await client.fetch("https://public.example/", max_bytes=100, timeout_s=5)
    assert len(rec.requests) == 1 and calls == ["public.example"]


async def test_redirect_to_a_name_resolving_privately_is_refused() -> None:
    client, rec = mock_client(
        redirect_map({"https://public.example/": (302, "https://intranet.example/")}),
        resolver=fixed_resolver({"intranet.example": ["10.1.2.3"]}),
    )
    async with client:
        with pytest.raises(SsrfBlocked, match=f"^{BLOCKED_RESOLVED}"):
            await client.fetch("https://public.example/", max_bytes=100, timeout_s=5)
    assert len(rec.requests) == 1


async def test_caller_cannot_set_host_or_framing_headers() -> None:
    client, rec = mock_client(lambda r: httpx.Response(200))
    async with client:
        await client.fetch(
            "https://public.example/",
            headers={"Host": "localhost", "Transfer-Encoding": "chunked", "X-Ok": "1"},
            max_bytes=100,
            timeout_s=5,
        )
    headers = rec.requests[0].headers
    assert headers["host"] == "public.example" and "transfer-encoding" not in headers and headers["x-ok"] == "1"


async def test_cookies_never_carry_over_between_fetches() -> None:
    client, rec = mock_client(lambda r: httpx.Response(200, headers={"set-cookie": "sid=abc; Path=/"}))
    async with client:
        await client.fetch("https://public.example/", max_bytes=100, timeout_s=5)
        await client.fetch("https://public.example/", max_bytes=100, timeout_s=5)
    assert "cookie" not in rec.requests[1].headers


async def test_body_cap_and_timeout_on_mock() -> None:
    client, _ = mock_client(lambda r: httpx.Response(200, content=b"y" * 5000))
    async with client:
        result = await client.fetch("https://public.example/", max_bytes=1000, timeout_s=5)
    assert (len(result.body), result.truncated) == (1000, True)

    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200)

    client = GuardedClient(transport=httpx.MockTransport(slow), resolver=fixed_resolver({}))
    started = time.monotonic()
    async with client:
        with pytest.raises(FetchTimeout, match="timeout"):
            await client.fetch("https://public.example/", max_bytes=100, timeout_s=0.2)
    assert time.monotonic() - started < 2


async def test_slow_dns_counts_against_the_deadline() -> None:
    async def hang(host: str, port: int) -> list[str]:
        await asyncio.sleep(5)
        return [PUBLIC_IP]

    client = GuardedClient(resolver=hang, transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    async with client:
        with pytest.raises(FetchTimeout):
            await client.fetch("https://public.example/", max_bytes=100, timeout_s=0.2)


async def test_blocked_fetch_logs_the_origin_only(caplog: pytest.LogCaptureFixture) -> None:
    client, _ = mock_client(lambda r: httpx.Response(200))
    with caplog.at_level(logging.WARNING, logger="homarus.security.ssrf"):
        async with client:
            with pytest.raises(SsrfBlocked):
                await client.fetch("http://user:pw@127.0.0.1/secret/path?token=abc", max_bytes=100, timeout_s=5)
    text = caplog.text
    assert "targetOrigin=http://127.0.0.1" in text
    assert "secret" not in text and "token" not in text and "pw" not in text


async def test_explicit_proxy_requires_https_targets_and_a_public_proxy() -> None:
    client, rec = mock_client(lambda r: httpx.Response(200), proxy_url="http://proxy.example:3128")
    async with client:
        with pytest.raises(SsrfBlocked, match=r"^Explicit proxy SSRF pinning requires HTTPS targets"):
            await client.fetch("http://public.example/", max_bytes=100, timeout_s=5)
        await client.fetch("https://public.example/", max_bytes=100, timeout_s=5)
    assert rec.pins() == [Pin("public.example", 443, PUBLIC_IP, proxy=(PUBLIC_IP, 3128))]
    client, rec = mock_client(lambda r: httpx.Response(200), proxy_url="http://127.0.0.1:3128")
    async with client:
        with pytest.raises(SsrfBlocked):
            await client.fetch("https://public.example/", max_bytes=100, timeout_s=5)
    with pytest.raises(SsrfBlocked):
        GuardedClient(proxy_url="socks5://127.0.0.1:1080")


# ---- the pinned transport itself ---------------------------------------------------------------


async def test_pinned_transport_refuses_requests_without_a_matching_pin() -> None:
    transport = PinnedTransport(httpx.create_ssl_context())
    with pytest.raises(httpx.ConnectError, match="no pinned address"):
        await transport.handle_async_request(httpx.Request("GET", "http://127.0.0.1:9/"))
    request = httpx.Request("GET", "http://a.example/", extensions={PIN_EXTENSION: Pin("b.example", 80, "127.0.0.1")})
    with pytest.raises(httpx.ConnectError, match="does not match"):
        await transport.handle_async_request(request)
