"""The HTTP client of a remote MCP server: every connection checked and pinned.

The MCP SDK speaks HTTP through ``httpx2`` (its own fork of httpx), so the gateway's guarded
transport (:mod:`homarus.security.pinned_transport`, built on httpx) cannot be handed to it.
What it can be handed is a client whose connection pool has a network backend of ours: each
new socket resolves the host once, checks every answer against the SSRF policy, and connects to
the checked address (:func:`homarus.security.ssrf.checked_address`, as ``web_fetch`` does), never
to a name resolved again later, so a DNS answer that changes between
the check and the connect (rebinding) has nothing to act on. TLS still verifies the hostname
(httpcore sends it as SNI from the URL, not from the address). Redirects are not followed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

from homarus.security.pinned_transport import GuardedBackendBase
from homarus.security.ssrf import checked_address
from homarus.security.ssrf_rules import SsrfPolicy

__all__ = ["GuardedBackend", "guarded_client"]


class GuardedBackend(GuardedBackendBase, httpcore2.AsyncNetworkBackend):
    _inner: httpcore2.AnyIOBackend

    def __init__(self, policy: SsrfPolicy) -> None:
        self._policy = policy
        self._inner = httpcore2.AnyIOBackend()
        self.refusal = httpcore2.ConnectError
        #: the addresses each connection went to, newest last (for the status and the tests)
        self.connected: list[tuple[str, str]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        address = await checked_address(f"http://{_bracket(host)}:{port}/", self._policy)
        stream = await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
        self.connected.append((host, address))
        del self.connected[:-20]
        return stream


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def guarded_client(
    *, allow_private: bool, headers: dict[str, str], timeout: float
) -> tuple[httpx2.AsyncClient, GuardedBackend]:
    """An ``httpx2`` client whose every connection goes through :class:`GuardedBackend`."""
    backend = GuardedBackend(SsrfPolicy(allow_private_network=allow_private))
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    # the transport takes no network backend of its own: its pool is rebuilt with ours
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=httpx2.create_ssl_context(),
        network_backend=backend,
        max_connections=20,
        keepalive_expiry=5.0,
    )
    client = httpx2.AsyncClient(
        transport=transport,
        headers=headers,
        # a server may hold a response stream open while it works: reads wait longer, as in the SDK
        timeout=httpx2.Timeout(timeout, read=max(300.0, timeout)),
        follow_redirects=False,
        trust_env=False,
    )
    return client, backend
