"""The pre-DNS half of the SSRF guard: errors, policy, URL and hostname checks, answer checks.

:func:`check_url` runs before any DNS lookup and before any connection. It parses with the same
rules the guarded client uses to build its request (the URL it returns is the one fetched), so a
parser difference between the check and the client cannot be exploited. Rule order follows
``security.md`` §1.1: scheme, URL shape, hostname normalisation, allowlist, name denylist, IP
literals. :func:`check_resolved` is the post-DNS half: every answer is re-checked.

Error messages start with the upstream strings (``Invalid URL: must be http or https``,
``Blocked hostname or private/internal/special-use IP address``, ...) and then name the rule.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote, urlsplit

from homarus.errors import InvalidRequest, Unavailable
from homarus.security.ssrf_ip import (
    IPAddress,
    MalformedLiteral,
    blocked_range,
    is_cloud_metadata,
    is_link_local,
    parse_ip_literal,
)

__all__ = [
    "BLOCKED_HOST",
    "BLOCKED_RESOLVED",
    "DEFAULT_POLICY",
    "FetchError",
    "FetchTimeout",
    "ParsedTarget",
    "SsrfBlocked",
    "SsrfPolicy",
    "check_address",
    "check_resolved",
    "check_target",
    "check_url",
    "normalize_hostname",
    "parse_target",
]

BLOCKED_HOST = "Blocked hostname or private/internal/special-use IP address"
BLOCKED_RESOLVED = "Blocked: resolves to private/internal/special-use IP address"
INVALID_SCHEME = "Invalid URL: must be http or https"

Rule = Literal["scheme", "url", "hostname", "allowlist", "address", "resolved", "redirect", "proxy"]


def normalize_hostname(host: str) -> str:
    """Trim, lowercase, drop trailing dots and IPv6 brackets."""
    h = host.strip().lower().rstrip(".")
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    return h


class SsrfBlocked(InvalidRequest):
    """An outbound URL was refused by policy. ``rule`` says which check refused it."""

    def __init__(self, message: str, *, rule: Rule, host: str | None = None) -> None:
        super().__init__(message, details={"rule": rule, **({"host": host} if host is not None else {})})
        self.rule: Rule = rule
        self.host = host


class FetchError(Unavailable):
    """The network did not deliver: DNS failure, refused connection, TLS error, bad redirect."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class FetchTimeout(FetchError):
    """The whole fetch (DNS, every hop, the body) did not finish in time."""


@dataclass(frozen=True, slots=True)
class SsrfPolicy:
    """What an outbound fetch may reach. The default is the strict policy for user-influenced URLs."""

    #: dangerous: skip the private-range checks (localhost, RFC 1918, ...). ``*.internal`` names and
    #: cloud-metadata addresses stay blocked.
    allow_private_network: bool = False
    #: exact origins (``"http://searx.lan:8888"``) trusted to be private for that hop only; they still
    #: may not resolve to link-local or cloud-metadata addresses
    trusted_origins: frozenset[str] = frozenset()
    #: exact hostnames trusted the same way, on any scheme and port (upstream ``allowedHostnames``)
    trusted_hostnames: frozenset[str] = frozenset()
    #: non-empty: only these hosts (``"host"`` exactly, or ``"*.suffix"`` for proper subdomains)
    hostname_allowlist: tuple[str, ...] = ()
    #: exact addresses exempt from the range checks (tests, an operator's known service); never metadata
    allow_addresses: frozenset[IPAddress] = frozenset()
    #: 198.18.0.0/15 for fake-IP proxies (Clash, Surge, sing-box)
    allow_rfc2544_benchmark_range: bool = False
    allow_ipv6_unique_local_range: bool = False
    opt_outs: frozenset[str] = field(init=False, default=frozenset())

    def __post_init__(self) -> None:
        flags = ("allow_rfc2544_benchmark_range", "allow_ipv6_unique_local_range")
        object.__setattr__(self, "opt_outs", frozenset(f for f in flags if getattr(self, f)))
        object.__setattr__(self, "trusted_hostnames", frozenset(map(normalize_hostname, self.trusted_hostnames)))

    def trusts(self, target: ParsedTarget) -> bool:
        """Whether ``target``'s hop is an exact-host trust (private answers allowed, metadata still not)."""
        return target.origin in self.trusted_origins or target.host in self.trusted_hostnames

    def allowlisted(self, host: str) -> bool:
        if not self.hostname_allowlist:
            return True
        for pattern in self.hostname_allowlist:
            p = normalize_hostname(pattern)
            if p in ("*", "*.", ""):
                continue
            if p.startswith("*."):
                if host.endswith(p[1:]) and host != p[2:]:
                    return True
            elif host == p:
                return True
        return False


DEFAULT_POLICY = SsrfPolicy()

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
_HOST_CHARS = re.compile(r"^[a-z0-9._-]+$")
#: names blocked under every policy (cloud metadata services, ``*.internal``)
_ALWAYS_BLOCKED_NAMES = frozenset({"metadata.google.internal", "metadata", "metadata.goog", "instance-data"})
_ALWAYS_BLOCKED_SUFFIXES = (".internal",)
#: names blocked unless private networks are allowed
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})
_LOCAL_SUFFIXES = (".localhost", ".local")


@dataclass(frozen=True, slots=True)
class ParsedTarget:
    """One validated hop: where to connect and what to ask for. Never carries a fragment."""

    scheme: Literal["http", "https"]
    #: lowercase ASCII (IDNA) hostname, or the compressed IP text; no brackets, no trailing dot
    host: str
    port: int
    #: path and query, as given (the request target)
    target: str
    #: set when ``host`` is an IP literal
    ip: IPAddress | None = None
    username: str | None = None
    password: str | None = None

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if _DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.netloc}"

    @property
    def url(self) -> str:
        """The URL that is fetched: no userinfo, no fragment."""
        return f"{self.origin}{self.target}"


def _ascii_host(raw: str) -> str:
    if raw.isascii():
        return raw
    try:  # IDNA 2003 with nameprep: fullwidth digits and dots fold the way WHATWG folds them
        return raw.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise SsrfBlocked(f"Invalid URL: {raw!r} is not a valid internationalised hostname", rule="hostname") from None


def _name_rule(host: str, policy: SsrfPolicy, *, trusted: bool) -> None:
    if host in _ALWAYS_BLOCKED_NAMES or host.endswith(_ALWAYS_BLOCKED_SUFFIXES):
        raise SsrfBlocked(f"{BLOCKED_HOST} ({host}: internal or cloud-metadata name)", rule="hostname", host=host)
    if policy.allow_private_network or trusted:
        return
    if host in _LOCAL_NAMES or host.endswith(_LOCAL_SUFFIXES):
        raise SsrfBlocked(f"{BLOCKED_HOST} ({host}: local name)", rule="hostname", host=host)


def check_address(addr: IPAddress, policy: SsrfPolicy, *, trusted: bool = False) -> str | None:
    """Why ``addr`` may not be reached under ``policy`` (None: it may). ``trusted``: an exact-host trust."""
    if is_cloud_metadata(addr):
        return "cloud metadata address"
    if trusted:
        return "link-local address" if is_link_local(addr) else None
    if addr in policy.allow_addresses or policy.allow_private_network:
        return None
    return blocked_range(addr, policy.opt_outs)


def parse_target(url: str) -> ParsedTarget:
    """Parse and normalise one URL; SsrfBlocked for a bad scheme, shape, hostname or IP-like literal."""
    text = url.strip()
    scheme_match = _SCHEME.match(text)
    scheme = scheme_match.group(1).lower() if scheme_match else ""
    if scheme not in ("http", "https"):
        raise SsrfBlocked(INVALID_SCHEME, rule="scheme")
    if "\\" in text:
        raise SsrfBlocked("Invalid URL: backslashes are not allowed", rule="url")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise SsrfBlocked("Invalid URL: control characters", rule="url")
    authority = re.split(r"[/?#]", text.split("//", 1)[1], maxsplit=1)[0] if "//" in text else ""
    if " " in authority:
        raise SsrfBlocked("Invalid URL: whitespace in the host", rule="url")
    text = text.replace(" ", "%20")  # only in path, query or fragment now: encode as WHATWG does
    try:
        parts = urlsplit(text)
        raw_host = parts.hostname or ""
        port = parts.port
    except ValueError as exc:
        if "[" in authority:
            raise SsrfBlocked(f"{BLOCKED_HOST} (malformed IPv6 literal)", rule="address") from None
        raise SsrfBlocked(f"Invalid URL: {exc}", rule="url") from None
    bracketed = parts.netloc.rpartition("@")[2].startswith("[")
    if not raw_host:
        raise SsrfBlocked("Invalid hostname: the URL has no host", rule="hostname")
    if "%" in raw_host and not bracketed:  # WHATWG percent-decodes the host, then validates it
        try:
            raw_host = unquote(raw_host, errors="strict")
        except UnicodeDecodeError:
            raise SsrfBlocked("Invalid URL: the percent-decoded host is not UTF-8", rule="url") from None
        if any(ord(c) <= 0x20 or ord(c) == 0x7F or c in "%/\\?#@[]<>^|" for c in raw_host):
            raise SsrfBlocked("Invalid URL: forbidden character in the percent-decoded host", rule="url")
    host = normalize_hostname(_ascii_host(raw_host))
    if port == 0:
        raise SsrfBlocked("Invalid URL: port 0", rule="url")
    try:
        ip = parse_ip_literal(host) if host else None
    except MalformedLiteral as exc:
        raise SsrfBlocked(f"{BLOCKED_HOST} ({exc})", rule="address", host=host) from None
    if bracketed and not isinstance(ip, ipaddress.IPv6Address):
        raise SsrfBlocked(f"{BLOCKED_HOST} (bracketed host {host!r} is not IPv6)", rule="address", host=host)
    if ip is None and not _HOST_CHARS.match(host):
        message = f"Invalid URL: invalid characters in hostname {host!r}" if host else "Invalid hostname"
        raise SsrfBlocked(message, rule="hostname", host=host or None)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return ParsedTarget(
        scheme="https" if scheme == "https" else "http",
        host=str(ip) if ip is not None else host,
        port=port if port is not None else _DEFAULT_PORTS[scheme],
        target=target,
        ip=ip,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def check_target(target: ParsedTarget, policy: SsrfPolicy = DEFAULT_POLICY) -> None:
    """The policy checks of one parsed hop that need no DNS: allowlist, name denylist, IP literal ranges."""
    host = target.host
    if not policy.allowlisted(host):
        raise SsrfBlocked(f"Blocked hostname (not in allowlist): {host}", rule="allowlist", host=host)
    trusted = policy.trusts(target)
    if target.ip is None:
        _name_rule(host, policy, trusted=trusted)
        return
    why = check_address(target.ip, policy, trusted=trusted)
    if why is not None:
        raise SsrfBlocked(f"{BLOCKED_HOST} ({target.ip}: {why})", rule="address", host=host)


def check_url(url: str, policy: SsrfPolicy = DEFAULT_POLICY) -> ParsedTarget:
    """Validate one URL before any DNS. Raises :class:`SsrfBlocked` naming the rule that refused it."""
    target = parse_target(url)
    check_target(target, policy)
    return target


def check_resolved(
    host: str, answers: list[str], policy: SsrfPolicy = DEFAULT_POLICY, *, trusted: bool = False
) -> list[IPAddress]:
    """Re-check every DNS answer: one blocked answer blocks the host. Returns them deduplicated, IPv4 first."""
    if not answers:
        raise FetchError(f"Unable to resolve hostname: {host}")
    out: list[IPAddress] = []
    for answer in answers:
        try:
            addr = ipaddress.ip_address(answer.split("%", 1)[0])
        except ValueError:
            raise SsrfBlocked(f"{BLOCKED_RESOLVED} ({host}: unparseable answer {answer!r})", rule="resolved") from None
        why = check_address(addr, policy, trusted=trusted)
        if why is not None:
            raise SsrfBlocked(f"{BLOCKED_RESOLVED} ({host} -> {addr}: {why})", rule="resolved", host=host)
        if addr not in out:
            out.append(addr)
    return sorted(out, key=lambda a: a.version)
