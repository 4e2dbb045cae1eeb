"""Which IP addresses an outbound fetch may reach: explicit CIDR tables, embedded IPv4, strict literals.

Pure functions, no I/O. ``ipaddress.is_private``/``is_global`` are deliberately not used: their
meaning changes between Python versions and they do not look inside NAT64, 6to4, Teredo or
ISATAP addresses. Every table below is the one of ``security.md`` §1.2.

Host strings are classified in three ways by :func:`parse_ip_literal`:

- a canonical IP literal (strict dotted-quad IPv4, any valid IPv6) → the address;
- something IP-like but not canonical (``0177.0.0.1``, ``0x7f.1``, ``2130706433``, ``127.1``,
  ``999.1.1.1``, ``::::``) → :class:`MalformedLiteral`, which callers block: the C resolver would
  happily turn these into 127.0.0.1;
- a name (``example.com``, ``1password.com``, ``0x.example.com``) → ``None``, to be resolved.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CLOUD_METADATA_ADDRESSES",
    "IPAddress",
    "MalformedLiteral",
    "blocked_range",
    "embedded_ipv4",
    "is_cloud_metadata",
    "is_link_local",
    "parse_ip_literal",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class MalformedLiteral(ValueError):
    """A host that looks like an IP address but is not in canonical form (always blocked)."""


@dataclass(frozen=True, slots=True)
class _Range:
    name: str
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    #: an opt-out flag of the policy that exempts this range (``None``: never exempt)
    opt_out: str | None = None


def _ranges(rows: Iterable[tuple[str, str] | tuple[str, str, str]]) -> tuple[_Range, ...]:
    out: list[_Range] = []
    for row in rows:
        name, cidr = row[0], row[1]
        out.append(_Range(name, ipaddress.ip_network(cidr), row[2] if len(row) == 3 else None))
    return tuple(out)


IPV4_BLOCKED = _ranges(
    [
        ("unspecified", "0.0.0.0/8"),
        ("private", "10.0.0.0/8"),
        ("carrier-grade NAT", "100.64.0.0/10"),
        ("loopback", "127.0.0.0/8"),
        ("link-local", "169.254.0.0/16"),
        ("private", "172.16.0.0/12"),
        ("IETF protocol assignments", "192.0.0.0/24"),
        ("documentation", "192.0.2.0/24"),
        ("6to4 relay anycast", "192.88.99.0/24"),
        ("private", "192.168.0.0/16"),
        ("benchmarking", "198.18.0.0/15", "allow_rfc2544_benchmark_range"),
        ("documentation", "198.51.100.0/24"),
        ("documentation", "203.0.113.0/24"),
        ("multicast", "224.0.0.0/4"),
        ("broadcast", "255.255.255.255/32"),
        ("reserved", "240.0.0.0/4"),
    ]
)

_TEREDO = ipaddress.IPv6Network("2001::/32")

IPV6_BLOCKED = _ranges(
    [
        ("unspecified", "::/128"),
        ("loopback", "::1/128"),
        ("link-local", "fe80::/10"),
        ("site-local (deprecated)", "fec0::/10"),
        ("unique-local", "fc00::/7", "allow_ipv6_unique_local_range"),
        ("multicast", "ff00::/8"),
        ("discard-only", "100::/64"),
        ("benchmarking", "2001:2::/48"),
        ("ORCHIDv2", "2001:20::/28"),
        ("documentation", "2001:db8::/32"),
        ("documentation", "3fff::/20"),
        # the rest of the IETF protocol block; Teredo (2001::/32) is decoded instead, see below
        ("IETF reserved", "2001::/23"),
    ]
)

#: instance-metadata endpoints: blocked under every policy, even ``allowPrivateNetwork``
CLOUD_METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task metadata
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
        "fd00:ec2::254",  # AWS IMDS over IPv6
    )
)

_LINK_LOCAL = (ipaddress.IPv4Network("169.254.0.0/16"), ipaddress.IPv6Network("fe80::/10"))

_CANONICAL_V4 = re.compile(r"^(0|[1-9]\d{0,2})(\.(0|[1-9]\d{0,2})){3}$")
_NUMERIC_PART = re.compile(r"^(\d+|0x[0-9a-z]*)$")


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address ``host`` names literally, ``None`` for a DNS name; MalformedLiteral when IP-like but not canonical.

    ``host`` is already lowercased, without brackets and without trailing dots.
    """
    if ":" in host:
        text = host.split("%", 1)[0]  # an IPv6 zone id (fe80::1%eth0) does not change the range
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            raise MalformedLiteral(f"malformed IPv6 literal {host!r}") from None
    if _CANONICAL_V4.match(host):
        try:
            return ipaddress.IPv4Address(host)
        except ValueError:  # an octet above 255
            raise MalformedLiteral(f"malformed IPv4 literal {host!r}") from None
    parts = host.split(".")
    if any(not p for p in parts):
        raise MalformedLiteral(f"empty label in {host!r}")
    if all(_NUMERIC_PART.match(p) for p in parts):
        # decimal/octal/hex/short forms the C resolver accepts (2130706433, 0x7f.1, 0177.0.0.1, 127.1)
        raise MalformedLiteral(f"non-canonical IPv4 literal {host!r}")
    return None


def _hextets(addr: ipaddress.IPv6Address) -> list[int]:
    n = int(addr)
    return [(n >> (112 - 16 * i)) & 0xFFFF for i in range(8)]


def embedded_ipv4(addr: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 address carries, with the form's name; the first matching form wins."""
    h = _hextets(addr)
    low32 = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    if h[:5] == [0] * 5 and h[5] == 0xFFFF:
        return "IPv4-mapped", low32
    if h[:4] == [0] * 4 and h[4] == 0xFFFF and h[5] == 0:
        return "IPv4-translated (RFC 6145)", low32
    if h[0] == 0x64 and h[1] == 0xFF9B and h[2:6] == [0] * 4:
        return "NAT64", low32
    if h[0] == 0x64 and h[1] == 0xFF9B and h[2] == 1 and h[3:6] == [0] * 3:
        return "NAT64 local-use", low32
    if h[:6] == [0] * 6:
        return "IPv4-compatible", low32
    if h[0] == 0x2002:
        return "6to4", ipaddress.IPv4Address((h[1] << 16) | h[2])
    if h[0] == 0x2001 and h[1] == 0:
        return "Teredo", ipaddress.IPv4Address(((h[6] << 16) | h[7]) ^ 0xFFFFFFFF)
    if (h[4] & 0xFCFF) == 0 and h[5] == 0x5EFE:
        return "ISATAP", low32
    return None


def _unwrapped(addr: IPAddress) -> list[IPAddress]:
    """``addr`` and, for IPv6, the IPv4 address embedded in it."""
    if isinstance(addr, ipaddress.IPv6Address):
        inner = embedded_ipv4(addr)
        if inner is not None:
            return [addr, inner[1]]
    return [addr]


def is_cloud_metadata(addr: IPAddress) -> bool:
    return any(a in CLOUD_METADATA_ADDRESSES for a in _unwrapped(addr))


def is_link_local(addr: IPAddress) -> bool:
    return any(a in net for a in _unwrapped(addr) for net in _LINK_LOCAL if a.version == net.version)


def _table_hit(addr: IPAddress, opt_outs: frozenset[str]) -> str | None:
    table = IPV4_BLOCKED if isinstance(addr, ipaddress.IPv4Address) else IPV6_BLOCKED
    for rng in table:
        if rng.opt_out is not None and rng.opt_out in opt_outs:
            continue
        if rng.name == "IETF reserved" and addr in _TEREDO:
            continue
        if addr in rng.network:
            return f"{rng.name} {rng.network}"
    return None


def blocked_range(addr: IPAddress, opt_outs: frozenset[str] = frozenset()) -> str | None:
    """Why ``addr`` is not a public destination (e.g. ``"loopback 127.0.0.0/8"``), or ``None``.

    ``opt_outs`` may hold ``allow_rfc2544_benchmark_range`` and ``allow_ipv6_unique_local_range``.
    Cloud-metadata addresses are reported whatever the opt-outs.
    """
    if is_cloud_metadata(addr):
        return "cloud metadata address"
    hit = _table_hit(addr, opt_outs)
    if hit is not None or isinstance(addr, ipaddress.IPv4Address):
        return hit
    inner = embedded_ipv4(addr)
    if inner is None:
        return None
    form, v4 = inner
    inner_hit = _table_hit(v4, opt_outs)
    return f"{form} {v4}: {inner_hit}" if inner_hit is not None else None
