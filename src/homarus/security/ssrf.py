"""SSRF guard: validate every outbound URL, resolve once, pin, and fetch only the pinned address.

Pipeline of :meth:`GuardedClient.fetch`, for the first URL and again for every redirect hop:

1. :func:`check_url` (no DNS): scheme, URL shape, hostname normalisation, allowlist, name
   denylist, strict IP literals and their ranges (``ssrf_rules``, ``ssrf_ip``).
2. :func:`resolve_and_pin`: one lookup through the injectable resolver; *any* blocked answer
   blocks the host; the first answer (IPv4 first) is pinned.
3. The request goes through :class:`~homarus.security.pinned_transport.PinnedTransport`, which
   connects to the pinned IP only, with ``Host`` and TLS SNI still the hostname. A second lookup
   never happens, so DNS rebinding has no window.
4. Redirects (301/302/303/307/308) are followed by hand: at most ``max_redirects``, loops
   detected, credentials and cookies dropped on a cross-origin hop. The body is streamed and cut
   at ``max_bytes``; the whole fetch runs under one deadline.
"""

from __future__ import annotations

import asyncio
import base64
import http.cookiejar
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urljoin, urlsplit

import httpx

from homarus.security.pinned_transport import PIN_EXTENSION, Pin, PinnedTransport, read_capped
from homarus.security.ssrf_ip import IPAddress, MalformedLiteral, parse_ip_literal
from homarus.security.ssrf_rules import (
    BLOCKED_HOST,
    BLOCKED_RESOLVED,
    DEFAULT_POLICY,
    FetchError,
    FetchTimeout,
    ParsedTarget,
    SsrfBlocked,
    SsrfPolicy,
    check_address,
    check_resolved,
    check_url,
    parse_target,
)

__all__ = [
    "BLOCKED_HOST",
    "BLOCKED_RESOLVED",
    "DEFAULT_POLICY",
    "FetchError",
    "FetchResult",
    "FetchTimeout",
    "GuardedClient",
    "ParsedTarget",
    "Resolver",
    "SsrfBlocked",
    "SsrfPolicy",
    "check_url",
    "checked_address",
    "resolve_and_pin",
    "system_resolver",
]

log = logging.getLogger("homarus.security.ssrf")

#: ``await resolver(host, port)`` → the IP strings the name resolves to
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: the only request headers kept on a cross-origin redirect
SAFE_CROSS_ORIGIN_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "cache-control", "content-language", "content-type"}
    | {"if-match", "if-modified-since", "if-none-match", "if-unmodified-since", "pragma", "range", "user-agent"}
)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: the connection's own headers: a caller's ``Host`` would point a pinned socket at another virtual host
_CALLER_MAY_NOT_SET = frozenset({"host", "connection", "content-length", "transfer-encoding", "upgrade", "te"})
PROXY_NEEDS_HTTPS = "Explicit proxy SSRF pinning requires HTTPS targets; plain HTTP targets are not supported"
DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; Homarus/0.1; +web_fetch)"


async def system_resolver(host: str, port: int) -> list[str]:
    """The default resolver: ``loop.getaddrinfo`` (TCP), answers in resolver order."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return []
    return [str(info[4][0]) for info in infos]


async def resolve_and_pin(
    host: str,
    port: int,
    resolver: Resolver | None = None,
    *,
    policy: SsrfPolicy = DEFAULT_POLICY,
    trusted: bool = False,
) -> str:
    """Resolve ``host`` once, refuse it if ANY answer is blocked, and return the address to pin.

    An IP literal is checked and returned without a lookup. ``trusted`` is an exact-origin trust
    of ``policy`` (private answers allowed, link-local and metadata still refused).
    """
    try:
        literal = parse_ip_literal(host)
    except MalformedLiteral as exc:
        raise SsrfBlocked(f"{BLOCKED_HOST} ({exc})", rule="address", host=host) from None
    if literal is not None:
        why = check_address(literal, policy, trusted=trusted)
        if why is not None:
            raise SsrfBlocked(f"{BLOCKED_HOST} ({literal}: {why})", rule="address", host=host)
        return str(literal)
    answers = await (resolver or system_resolver)(host, port)
    checked: list[IPAddress] = check_resolved(host, list(answers), policy, trusted=trusted)
    return str(checked[0])


async def checked_address(url: str, policy: SsrfPolicy = DEFAULT_POLICY, resolver: Resolver | None = None) -> str:
    """The address a connection for ``url`` may go to: the URL's own rules first (scheme, names
    such as ``*.internal``), then one lookup with every answer checked (an exact-origin trust of
    ``policy`` allows private answers). Raises :class:`SsrfBlocked` otherwise. Every guarded
    connection that is not a whole fetch (the browser's proxy, an MCP client's sockets) asks this."""
    target = check_url(url, policy)
    return await resolve_and_pin(target.host, target.port, resolver, policy=policy, trusted=policy.trusts(target))


@dataclass(frozen=True, slots=True)
class FetchResult:
    status: int
    #: lowercase names; repeated headers joined with ", "
    headers: dict[str, str]
    body: bytes
    final_url: str
    #: the URLs redirected to, in order (empty when the first response was final)
    redirects: tuple[str, ...] = ()
    #: the body was cut at ``max_bytes``
    truncated: bool = False
    #: the pinned IP the final response came from
    address: str = ""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for param in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    """The shared client must never carry cookies from one fetch (or one origin) to another."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: object) -> bool:
        return False

    def return_ok(self, cookie: http.cookiejar.Cookie, request: object) -> bool:
        return False


class GuardedClient:
    """Outbound HTTP for URLs a user or a model chose. One shared ``httpx.AsyncClient``, created lazily.

    ``transport`` replaces the pinned transport (tests: ``httpx.MockTransport`` sees each request
    with its :class:`Pin` in ``request.extensions["homarus.pin"]``). ``proxy_url`` sends every
    request through an explicit ``http://`` proxy, tunnelled to the pinned IP.
    """

    def __init__(
        self,
        *,
        policy: SsrfPolicy = DEFAULT_POLICY,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: ssl.SSLContext | bool = True,
        proxy_url: str | None = None,
        allow_private_proxy: bool = False,
        user_agent: str = DEFAULT_USER_AGENT,
    ) -> None:
        if policy.allow_private_network:
            log.warning("security: SSRF guard allows private network targets (allowPrivateNetwork is dangerous)")
        self.policy = policy
        self._resolver: Resolver = resolver or system_resolver
        self._transport = transport
        self._verify = verify
        self._user_agent = user_agent
        self._client: httpx.AsyncClient | None = None
        self._proxy: ParsedTarget | None = None
        self._proxy_policy = policy
        if proxy_url is not None:
            self._proxy = parse_target(proxy_url)
            if self._proxy.scheme != "http":
                raise SsrfBlocked("Explicit proxy must be an http:// URL", rule="proxy")
            if allow_private_proxy:
                self._proxy_policy = SsrfPolicy(allow_private_network=True)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            transport = self._transport
            if transport is None:
                context = self._verify if isinstance(self._verify, ssl.SSLContext) else None
                if context is None and self._verify is True:
                    from homarus.tls import client_context

                    context = client_context()
                transport = PinnedTransport(context or httpx.create_ssl_context(verify=self._verify))
            self._client = httpx.AsyncClient(
                transport=transport,
                follow_redirects=False,
                trust_env=False,  # env proxies would bypass the pinned transport
                cookies=http.cookiejar.CookieJar(policy=_NoCookies()),
                headers={"user-agent": self._user_agent},
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def __aenter__(self) -> GuardedClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        max_bytes: int,
        timeout_s: float,
        max_redirects: int = 3,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
        policy: SsrfPolicy | None = None,
    ) -> FetchResult:
        """Fetch ``url`` under the guard. SsrfBlocked (policy), FetchTimeout, FetchError (network)."""
        try:
            async with asyncio.timeout(timeout_s):
                return await self._fetch(url, method, max_bytes, timeout_s, max_redirects, headers, content, policy)
        except TimeoutError:
            raise FetchTimeout(f"Fetch timeout: no complete response within {timeout_s:g}s ({_origin(url)})") from None

    async def _fetch(
        self,
        url: str,
        method: str,
        max_bytes: int,
        timeout_s: float,
        max_redirects: int,
        headers: dict[str, str] | None,
        content: bytes | None,
        policy: SsrfPolicy | None,
    ) -> FetchResult:
        policy = policy or self.policy
        method = method.upper()
        max_redirects = max(0, max_redirects)
        hdrs = httpx.Headers({k: v for k, v in (headers or {}).items() if k.lower() not in _CALLER_MAY_NOT_SET})
        target = self._check(url, policy)
        visited = {f"{method} {target.url}"}
        chain: list[str] = []
        for _hop in range(max_redirects + 1):
            if target.username is not None:
                pair = f"{target.username}:{target.password or ''}".encode()
                hdrs["authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
            response, pin = await self._send(target, method, hdrs, content, timeout_s, policy)
            if response.status_code not in REDIRECT_STATUSES:
                try:
                    body, truncated = await read_capped(response, max_bytes)
                except httpx.TimeoutException as exc:
                    raise FetchTimeout(f"Fetch timeout reading from {target.origin}: {_describe(exc)}") from None
                except httpx.HTTPError as exc:
                    raise FetchError(f"Network error reading from {target.origin}: {_describe(exc)}") from None
                finally:
                    await response.aclose()
                return FetchResult(
                    status=response.status_code,
                    headers={k.lower(): v for k, v in response.headers.items()},
                    body=body,
                    final_url=target.url,
                    redirects=tuple(chain),
                    truncated=truncated,
                    address=pin.address,
                )
            await response.aclose()
            if len(chain) + 1 > max_redirects:
                self._blocked(target, f"Too many redirects (limit: {max_redirects})")
            location = response.headers.get("location", "").strip()
            if not location:
                raise FetchError(f"Redirect missing location header ({response.status_code})")
            nxt = self._check(urljoin(target.url, location), policy)
            method, content, hdrs = _redirected_request(response.status_code, method, content, hdrs, target, nxt)
            key = f"{method} {nxt.url}"
            if key in visited:
                self._blocked(nxt, "Redirect loop detected")
            visited.add(key)
            chain.append(nxt.url)
            target = nxt
        raise AssertionError("unreachable: the redirect limit ends the loop")  # pragma: no cover

    def _check(self, url: str, policy: SsrfPolicy) -> ParsedTarget:
        try:
            target = check_url(url, policy)
            if self._proxy is not None and target.scheme != "https":
                raise SsrfBlocked(PROXY_NEEDS_HTTPS, rule="proxy", host=target.host)
        except SsrfBlocked as exc:
            log.warning("security: blocked URL fetch (guarded) targetOrigin=%s reason=%s", _origin(url), exc.message)
            raise
        return target

    def _blocked(self, target: ParsedTarget, message: str) -> None:
        log.warning("security: blocked URL fetch (guarded) targetOrigin=%s reason=%s", target.origin, message)
        raise SsrfBlocked(message, rule="redirect", host=target.host)

    async def _send(
        self,
        target: ParsedTarget,
        method: str,
        headers: httpx.Headers,
        content: bytes | None,
        timeout_s: float,
        policy: SsrfPolicy,
    ) -> tuple[httpx.Response, Pin]:
        try:
            address = await resolve_and_pin(
                target.host, target.port, self._resolver, policy=policy, trusted=policy.trusts(target)
            )
            proxy: tuple[str, int] | None = None
            if self._proxy is not None:
                proxy_ip = await resolve_and_pin(
                    self._proxy.host, self._proxy.port, self._resolver, policy=self._proxy_policy
                )
                proxy = (proxy_ip, self._proxy.port)
        except SsrfBlocked as exc:
            log.warning("security: blocked URL fetch (guarded) targetOrigin=%s reason=%s", target.origin, exc.message)
            raise
        pin = Pin(host=target.host, port=target.port, address=address, proxy=proxy)
        client = self._http()
        headers = httpx.Headers(headers)
        headers["accept-encoding"] = "identity"
        request = client.build_request(
            method,
            target.url,
            headers=headers,
            content=content,
            timeout=httpx.Timeout(timeout_s),
            extensions={PIN_EXTENSION: pin},
        )
        try:
            return await client.send(request, stream=True), pin
        except httpx.TimeoutException as exc:
            raise FetchTimeout(f"Fetch timeout talking to {target.origin}: {_describe(exc)}") from None
        except httpx.HTTPError as exc:
            raise FetchError(f"Network error fetching {target.origin}: {_describe(exc)}") from None


def _redirected_request(
    status: int, method: str, content: bytes | None, headers: httpx.Headers, current: ParsedTarget, nxt: ParsedTarget
) -> tuple[str, bytes | None, httpx.Headers]:
    """The next hop's method, body and headers: 303 (and POST on 301/302) → GET; cross-origin keeps safe headers."""
    body = content
    if status == 303:
        method, body = ("HEAD" if method == "HEAD" else "GET"), None
    elif status in (301, 302) and method == "POST":
        method, body = "GET", None
    if nxt.origin != current.origin:
        headers = httpx.Headers({k: v for k, v in headers.items() if k.lower() in SAFE_CROSS_ORIGIN_HEADERS})
        if method not in _SAFE_METHODS:
            body = None
    if content is not None and body is None:  # the body is gone: so are the headers describing it
        headers = httpx.Headers(
            {
                k: v
                for k, v in headers.items()
                if not k.lower().startswith("content-") and k.lower() != "transfer-encoding"
            }
        )
    return method, body, headers


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _origin(url: str) -> str:
    """Scheme and host of ``url`` for logs: never the path, query, fragment or userinfo."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or "?"
    except ValueError:
        return "(unparseable)"
    return f"{parts.scheme or '?'}://{host}"
