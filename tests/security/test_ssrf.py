"""SSRF guard: every public red-team row, resolve-and-pin, DNS rebinding.

The red-team rows run through the real :class:`GuardedClient` with a scripted world: a resolver
answering from the row's ``dns``/``dns_sequence`` (a public address otherwise) and an
``httpx.MockTransport`` that sees every request with its pin. Delays are scaled by 1/100.
Rebinding is then proven on real sockets: servers on 127.0.0.2 and 127.0.0.1, same port.
The pure rules are in ``test_ssrf_rules.py``, the client in ``test_ssrf_client.py`` (mocks)
and ``test_ssrf_sockets.py`` (loopback).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from homarus.errors import HomarusError
from homarus.security.pinned_transport import PIN_EXTENSION, Pin
from homarus.security.ssrf import (
    BLOCKED_RESOLVED,
    FetchError,
    GuardedClient,
    SsrfBlocked,
    SsrfPolicy,
    resolve_and_pin,
)
from homarus.security.ssrf_rules import check_address
from homarus.tools.base import ToolContext
from homarus.tools.web import WebSettings, make_web_tools
from tests.fakes.http_server import Answer, serve
from tests.security.ssrf_helpers import PUBLIC_IP, fixed_resolver

REDTEAM = Path(__file__).resolve().parents[3] / "shared/reference/redteam-public.jsonl"


def _load_rows() -> list[dict[str, Any]]:
    if not REDTEAM.is_file():
        return []
    rows = [json.loads(line) for line in REDTEAM.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("target") == "ssrf"]


ROWS = _load_rows()


class RowWorld:
    """DNS and HTTP as a red-team row describes them."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.dns: dict[str, list[str]] = spec.get("dns") or {}
        self.sequence: list[list[str]] | None = spec.get("dns_sequence")
        self.responses: list[dict[str, Any]] = list(spec.get("responses") or [])
        self.scale = 0.01 if spec.get("response_delay_s") else 1.0
        self.delay = float(spec.get("response_delay_s") or 0) * self.scale
        self.response_bytes: int | None = spec.get("response_bytes")
        self.lookups: list[str] = []
        self.pins: list[Pin] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if self.sequence:
            return list(self.sequence[min(len(self.lookups), len(self.sequence)) - 1])
        return list(self.dns.get(host, [PUBLIC_IP]))

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.pins.append(request.extensions[PIN_EXTENSION])
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.responses:
            step = self.responses.pop(0)
            headers = {"location": step["location"]} if "location" in step else {}
            headers.update(step.get("headers") or {})
            return httpx.Response(step.get("status", 200), headers=headers, content=str(step.get("body", "")).encode())
        if self.response_bytes is not None:
            return httpx.Response(200, headers={"content-type": "text/plain"}, content=b"x" * self.response_bytes)
        return httpx.Response(200, headers={"content-type": "text/plain"}, content=b"ok")


_POLICY_KEYS = {
    "allowPrivateNetwork": "allow_private_network",
    "dangerouslyAllowPrivateNetwork": "allow_private_network",
    "allowRfc2544BenchmarkRange": "allow_rfc2544_benchmark_range",
    "allowIpv6UniqueLocalRange": "allow_ipv6_unique_local_range",
}


def _policy(raw: dict[str, Any]) -> SsrfPolicy:
    kwargs: dict[str, Any] = {v: bool(raw[k]) for k, v in _POLICY_KEYS.items() if k in raw}
    if raw.get("hostnameAllowlist"):
        kwargs["hostname_allowlist"] = tuple(raw["hostnameAllowlist"])
    if raw.get("allowedHostnames"):
        kwargs["trusted_hostnames"] = frozenset(raw["allowedHostnames"])
    if raw.get("allowedOrigins"):
        kwargs["trusted_origins"] = frozenset(raw["allowedOrigins"])
    return SsrfPolicy(**kwargs)


def _client_for(spec: dict[str, Any], world: RowWorld) -> GuardedClient:
    dispatcher = spec.get("dispatcherPolicy") or {}
    proxy = dispatcher.get("proxyUrl") if dispatcher.get("mode") == "explicit-proxy" else None
    return GuardedClient(
        policy=_policy(spec.get("policy") or spec.get("ssrfPolicy") or {}),
        resolver=world.resolve,
        transport=httpx.MockTransport(world.handle),
        proxy_url=proxy,
        allow_private_proxy=bool(dispatcher.get("allowPrivateProxy")),
    )


def _ctx(tmp: Path) -> ToolContext:
    return ToolContext(session_key="agent:main:main", agent_id="main", run_id="r1", tool_call_id="c1", workspace=tmp)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
async def test_redteam_row(row: dict[str, Any], tmp_path: Path) -> None:
    spec = row["input"] if isinstance(row["input"], dict) else {"url": row["input"]}
    expect = row["expect"]
    world = RowWorld(spec)
    client = _client_for(spec, world)
    fetch = client.fetch(
        spec["url"],
        method=spec.get("method", "GET"),
        headers=spec.get("headers"),
        max_bytes=2_000_000,
        timeout_s=30 * world.scale,
    )
    async with client:
        if expect["result"] == "block":
            with pytest.raises(HomarusError) as info:
                await fetch
            assert expect.get("error", "") in info.value.message, info.value.message
        elif expect["result"] == "allow":
            result = await fetch
            assert result.status < 400
            if world.sequence:  # rebinding: one lookup, and every connection to its first answer
                assert len(world.lookups) == 1
                assert {p.address for p in world.pins} == {world.sequence[0][0]}
        else:
            assert expect["result"] == "sanitize"
            result = await fetch
            assert len(result.body) <= 2_000_000
            assert result.truncated == ((world.response_bytes or 0) > 2_000_000)
            if world.response_bytes is not None:
                fetch_tool = make_web_tools(WebSettings(max_bytes=2_000_000), client)[0]
                world.responses = []
                out = await fetch_tool.execute(_ctx(tmp_path), {"url": spec["url"]})
                assert out.details["truncated"] is True and out.details["bytes"] <= 2_000_000
                assert out.details["chars"] <= 50_000
    # whatever the outcome, no request ever left for an address the row's policy forbids
    policy = _policy(spec.get("policy") or spec.get("ssrfPolicy") or {})
    for pin in world.pins:
        assert check_address(ipaddress.ip_address(pin.address), policy) is None, pin


# ---- resolve_and_pin ---------------------------------------------------------------------------


def _resolver(answers: dict[str, list[str]], calls: list[str] | None = None) -> Any:
    return fixed_resolver(answers, calls, default=[])


@pytest.mark.parametrize(
    "answer", ["127.0.0.1", "10.0.0.8", "198.18.0.1", "198.51.100.1", "::1", "fe80::1%eth0", "::ffff:a00:1"]
)
async def test_any_blocked_answer_blocks(answer: str) -> None:
    with pytest.raises(SsrfBlocked) as info:
        await resolve_and_pin("mixed.example", 443, _resolver({"mixed.example": [PUBLIC_IP, answer]}))
    assert info.value.message.startswith(BLOCKED_RESOLVED) and info.value.rule == "resolved"


async def test_pins_ipv4_first_and_dedupes() -> None:
    resolve = _resolver({"h.example": ["2606:4700:4700::1111", "1.1.1.1", "1.1.1.1"]})
    assert await resolve_and_pin("h.example", 443, resolve) == "1.1.1.1"
    assert await resolve_and_pin("v6.example", 443, _resolver({"v6.example": ["2606:4700::1"]})) == "2606:4700::1"


async def test_no_answers_and_garbage_answers() -> None:
    with pytest.raises(FetchError, match=r"^Unable to resolve hostname: none\.example$"):
        await resolve_and_pin("none.example", 80, _resolver({}))
    with pytest.raises(SsrfBlocked, match="unparseable"):
        await resolve_and_pin("g.example", 80, _resolver({"g.example": ["not-an-ip"]}))


async def test_literals_are_checked_without_a_lookup() -> None:
    calls: list[str] = []
    assert await resolve_and_pin("8.8.8.8", 53, _resolver({}, calls)) == "8.8.8.8"
    for literal in ("127.0.0.1", "0x7f.1", "2130706433"):
        with pytest.raises(SsrfBlocked):
            await resolve_and_pin(literal, 80, _resolver({}, calls))
    assert calls == []


async def test_trusted_resolution_allows_private_but_not_metadata() -> None:
    resolve = _resolver({"searx.lan": ["192.168.1.5"], "meta.lan": ["169.254.169.254"]})
    assert await resolve_and_pin("searx.lan", 80, resolve, trusted=True) == "192.168.1.5"
    with pytest.raises(SsrfBlocked):
        await resolve_and_pin("meta.lan", 80, resolve, trusted=True)


async def test_policy_checks_run_before_any_dns() -> None:
    calls: list[str] = []
    transport_calls: list[httpx.Request] = []
    client = GuardedClient(
        policy=SsrfPolicy(hostname_allowlist=("*.example.com",)),
        resolver=_resolver({}, calls),
        transport=httpx.MockTransport(lambda r: transport_calls.append(r) or httpx.Response(200)),  # type: ignore[func-returns-value]
    )
    async with client:
        for url in (
            "https://example.com/",
            "https://evil.org/",
            "http://0177.0.0.1/",
            "http://[2001:db8:1234::5efe:127.0.0.1]/",
        ):
            with pytest.raises(SsrfBlocked):
                await client.fetch(url, max_bytes=100, timeout_s=5)
    assert calls == [] and transport_calls == []


# ---- DNS rebinding and private answers, on real loopback sockets ------------------------------


async def _pair_on_same_port(route_a: Any, route_b: Any) -> Any:
    """Servers on 127.0.0.2:P and 127.0.0.1:P (retrying a few ports if P is taken on 127.0.0.1)."""
    for _ in range(10):
        a = serve(route_a, host="127.0.0.2")
        srv_a = await a.__aenter__()
        b = serve(route_b, host="127.0.0.1", port=srv_a.port)
        try:
            srv_b = await b.__aenter__()
        except OSError:
            await a.__aexit__(None, None, None)
            continue
        return (a, srv_a), (b, srv_b)
    pytest.skip("no free port on both 127.0.0.1 and 127.0.0.2")


async def test_dns_rebinding_connects_to_the_first_answer_only() -> None:
    answers = [["127.0.0.2"], ["127.0.0.1"]]
    lookups: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return answers[min(len(lookups), len(answers)) - 1]

    (a, pinned), (b, rebound) = await _pair_on_same_port(
        lambda req: Answer(200, body=b"pinned") if req.target == "/" else Answer(302, {"location": "/again"}),
        lambda req: Answer(200, body=b"REBOUND"),
    )
    try:
        policy = SsrfPolicy(allow_addresses=frozenset({ipaddress.ip_address("127.0.0.2")}))
        async with GuardedClient(policy=policy, resolver=rebinding) as client:
            result = await client.fetch(f"http://rebind.test:{pinned.port}/", max_bytes=100, timeout_s=5)
            assert (result.body, result.address) == (b"pinned", "127.0.0.2")
            assert lookups == ["rebind.test"]
            assert pinned.requests[0].headers["host"] == f"rebind.test:{pinned.port}"
            assert pinned.requests[0].local_host == "127.0.0.2"
            # a same-host redirect is a new hop: it resolves again, and the rebound answer is refused
            lookups.clear()
            with pytest.raises(SsrfBlocked, match=f"^{BLOCKED_RESOLVED}"):
                await client.fetch(f"http://rebind.test:{pinned.port}/go", max_bytes=100, timeout_s=5)
            assert lookups == ["rebind.test", "rebind.test"]
            assert [r.target for r in pinned.requests] == ["/", "/go"]
        assert rebound.connections == 0 and rebound.requests == []
    finally:
        await b.__aexit__(None, None, None)
        await a.__aexit__(None, None, None)


async def test_name_resolving_to_a_private_address_never_connects() -> None:
    async with serve(lambda req: Answer(200)) as srv:
        resolver = fixed_resolver({"sneaky.example": ["127.0.0.1"], "lan.example": ["192.168.0.10"]})
        async with GuardedClient(resolver=resolver) as client:
            for host in ("sneaky.example", "lan.example"):
                with pytest.raises(SsrfBlocked, match=f"^{BLOCKED_RESOLVED}"):
                    await client.fetch(f"http://{host}:{srv.port}/", max_bytes=100, timeout_s=5)
        assert srv.connections == 0
