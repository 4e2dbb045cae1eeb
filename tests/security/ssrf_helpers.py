"""Shared pieces of the SSRF tests: fixed resolvers and the loopback exemption."""

from __future__ import annotations

import ipaddress
from typing import Any

from homarus.security.ssrf import GuardedClient, SsrfPolicy

PUBLIC_IP = "93.184.216.34"
OTHER_PUBLIC_IP = "93.184.216.35"
#: the test-only exemption that lets the guard reach a loopback server on 127.0.0.1 (and nothing else)
LOOPBACK_OK = SsrfPolicy(allow_addresses=frozenset({ipaddress.ip_address("127.0.0.1")}))


def fixed_resolver(
    answers: dict[str, list[str]], calls: list[str] | None = None, default: list[str] | None = None
) -> Any:
    """A resolver answering from ``answers`` (``default``, else a public address, for other names)."""

    async def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        return list(answers.get(host, [PUBLIC_IP] if default is None else default))

    return resolve


def loopback_client(**kwargs: Any) -> GuardedClient:
    kwargs.setdefault("policy", LOOPBACK_OK)
    return GuardedClient(**kwargs)
