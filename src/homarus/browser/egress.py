"""Every request a page makes goes through the SSRF policy before it leaves the machine.

Playwright's routing sees only the first request of a redirect chain (the browser follows the rest
on its own), so the handler fetches each request itself with redirects off and checks every
``Location``: a subresource's chain is followed here hop by hop; a page's redirect becomes a
stand-in page that navigates to the checked target, a fresh request the router sees again. Only http(s),
``data:``, ``blob:`` and ``about:`` URLs load; WebSockets are checked the same way when the
Playwright version can route them.

The check resolves a name; the fetch that follows would resolve it again. So that a name cannot
answer one address to the check and another to the fetch (DNS rebinding), the browser reaches the
network only through :class:`homarus.browser.pin_proxy.PinningProxy`, which connects to the very
address :meth:`Egress.pin` checked.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urljoin, urlsplit

from homarus.security.ssrf import Resolver, checked_address
from homarus.security.ssrf_rules import SsrfPolicy

if TYPE_CHECKING:
    from playwright.async_api import Route

__all__ = ["REDIRECT_HEADER", "Egress"]

_LOCAL_SCHEMES = ("data", "blob", "about")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_BLOCKED = 50
MAX_REDIRECTS = 10
#: marks the stand-in page of a checked redirect (its target is the value)
REDIRECT_HEADER = "x-homarus-redirect"


class Refusal(NamedTuple):
    seq: int
    url: str
    why: str
    #: the page whose request it was (None: the browser's own background traffic, a WebSocket)
    page: Any


@dataclass
class Egress:
    allow_hosts: tuple[str, ...] = ()
    #: how names are resolved (None: the system's; tests stand in a rebinding DNS)
    resolver: Resolver | None = None
    #: the latest refusals, newest last (bounded): the tool reports those of the page it drives
    _refusals: deque[Refusal] = field(default_factory=lambda: deque(maxlen=MAX_BLOCKED))
    _seq: int = 0

    @property
    def blocked(self) -> list[tuple[str, str]]:
        """The latest refusals (URL, why), whoever's request it was."""
        return [(r.url, r.why) for r in self._refusals]

    def mark(self) -> int:
        """A point to ask :meth:`since` from."""
        return self._seq

    def since(self, mark: int, page: Any) -> list[tuple[str, str]]:
        """The refusals of ``page``'s requests after ``mark``. Chromium's own background requests
        (which have no page) and other tabs' are not this page's."""
        return [(r.url, r.why) for r in self._refusals if r.seq > mark and r.page is page]

    def _allowed_host(self, host: str) -> bool:
        return any(host == p or (p.startswith("*.") and host.endswith(p[1:])) for p in self.allow_hosts)

    async def check(self, url: str) -> str | None:
        """Why ``url`` may not be fetched, or None. A host of ``browser.ssrf.allow`` may be private,
        never a cloud-metadata or link-local address."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme in _LOCAL_SCHEMES:
            return None
        if scheme not in ("http", "https", "ws", "wss"):
            return f"scheme {scheme!r} is not allowed"
        try:
            await self.pin(url.replace("ws", "http", 1) if scheme.startswith("ws") else url)
        except Exception as exc:  # SsrfBlocked, FetchError, resolution failures: all refusals
            return str(exc) or type(exc).__name__
        return None

    async def pin(self, url: str) -> str:
        """The address an http(s) ``url`` may be fetched from (resolved once, every answer checked);
        raises with the reason otherwise. The proxy connects to exactly this address."""
        host = (urlsplit(url).hostname or "").lower()
        policy = SsrfPolicy(trusted_hostnames=frozenset({host}) if self._allowed_host(host) else frozenset())
        return await checked_address(url, policy, self.resolver)

    def refuse(self, url: str, why: str, page: Any = None) -> None:
        self._seq += 1
        self._refusals.append(Refusal(self._seq, url, why, page))

    async def route(self, route: Route) -> None:
        request = route.request
        url = request.url
        page = _page_of(request)
        why = await self.check(url)
        if why is not None:
            self.refuse(url, why, page)
            await route.abort("blockedbyclient")
            return
        if urlsplit(url).scheme.lower() in _LOCAL_SCHEMES:
            await route.continue_()
            return
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = await route.fetch(url=current, max_redirects=0)
            except Exception as exc:  # unreachable, reset: the page sees a failed request
                self.refuse(current, f"fetch failed: {exc}", page)
                await route.abort("failed")
                return
            location = response.headers.get("location")
            if response.status not in _REDIRECTS or not location:
                await route.fulfill(response=response)
                return
            target = urljoin(current, location)
            why = await self.check(target)
            if why is not None:
                self.refuse(target, why, page)
                await route.abort("blockedbyclient")
                return
            if request.is_navigation_request():
                # the browser would follow a redirect without asking the router: a navigation to the
                # checked target instead is a fresh request, routed (and checked) like any other
                await route.fulfill(
                    status=200,
                    headers={"content-type": "text/html; charset=utf-8", REDIRECT_HEADER: target},
                    body=f"<!doctype html><script>location.replace({json.dumps(target)})</script>",
                )
                return
            current = target  # a subresource: follow here, every hop checked
        self.refuse(url, f"more than {MAX_REDIRECTS} redirects", page)
        await route.abort("failed")

    async def route_websocket(self, ws: Any) -> None:
        why = await self.check(ws.url)
        if why is not None:
            self.refuse(ws.url, why)
            await ws.close(code=1008, reason="blocked")
            return
        ws.connect_to_server()


def _page_of(request: Any) -> Any:
    """The page a request belongs to (None: a service worker's or the browser's own request)."""
    try:
        return request.frame.page
    except Exception:  # Playwright raises for a request that has no frame
        return None
