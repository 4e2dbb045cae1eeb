"""SSRF pre-DNS rules: the §1.2 fixtures verbatim, hostnames, schemes, URL shape, policies."""

from __future__ import annotations

import ipaddress

import pytest

from homarus.errors import InvalidRequest, Unavailable
from homarus.security.ssrf import BLOCKED_HOST, FetchError, SsrfBlocked, SsrfPolicy, check_url
from homarus.security.ssrf_ip import blocked_range, embedded_ipv4

# ---- §1.2 fixtures, verbatim ----------------------------------------------------------------


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",")]


BLOCKED = _items(
    "198.18.0.1, 198.19.255.254, 198.51.100.42, 203.0.113.10, 192.0.0.8, 192.0.2.1, 192.88.99.1, "
    "224.0.0.1, 239.255.255.255, 240.0.0.1, 255.255.255.255, ::ffff:127.0.0.1, ::ffff:198.18.0.1, "
    "64:ff9b::198.51.100.42, 0:0:0:0:0:ffff:7f00:1, 0000:0000:0000:0000:0000:ffff:7f00:0001, "
    "::127.0.0.1, 0:0:0:0:0:0:7f00:1, [0:0:0:0:0:ffff:7f00:1], ::ffff:169.254.169.254, "
    "0:0:0:0:0:ffff:a9fe:a9fe, 64:ff9b::127.0.0.1, 64:ff9b::169.254.169.254, 64:ff9b:1::192.168.1.1, "
    "64:ff9b:1::10.0.0.1, 2002:7f00:0001::, 2002:a9fe:a9fe::, 2001:0000:0:0:0:0:80ff:fefe, "
    "2001:0000:0:0:0:0:3f57:fefe, 2002:c612:0001::, ::, ::1, fe80::1%lo0, fd00::1, fec0::1, 100::1, "
    "ff02::1, ff05::1:3, [ff02::1], 2001:2::1, 2001:20::1, 2001:db8::1, 2001:db8:1234::5efe:127.0.0.1, "
    "2001:db8:1234:1:200:5efe:7f00:1, 10.0.0.1, 172.16.0.1, 172.31.255.255, 192.168.1.1, 100.64.0.1, "
    "100.127.255.255, 127.0.0.1, 127.255.255.254, 169.254.169.254, 0.0.0.0, 0.1.2.3, fd00:ec2::254, "
    "3fff::1, 2001:10::1, fe80::1"
)
PUBLIC = _items(
    "93.184.216.34, 198.17.255.255, 198.20.0.1, 198.51.99.1, 198.51.101.1, 203.0.112.1, 203.0.114.1, "
    "223.255.255.255, 2606:4700:4700::1111, 64:ff9b::8.8.8.8, 64:ff9b:1::8.8.8.8, 2002:0808:0808::, "
    "2001:0000:0:0:0:0:f7f7:f7f7, 2001:4860:1234::5efe:8.8.8.8, 2001:4860:1234:1:1111:5efe:7f00:1, "
    "8.8.8.8, 1.1.1.1, 100.63.255.255, 100.128.0.0, 172.15.255.255, 172.32.0.0, 169.253.255.255, "
    "::ffff:8.8.8.8"
)
LEGACY = _items(
    "0177.0.0.1, 0x7f.0.0.1, 127.1, 2130706433, 0x7f000001, 017700000001, 08.0.0.1, 8.8.2056, 0x7f.1, 0, 1.2.3.4.5"
)
MALFORMED = _items("127..0.1, 999.1.1.1, 0x7g.0.0.1, 256.0.0.1, .1.2.3")


def _url(host: str) -> str:
    bare = host.strip("[]")
    return f"http://[{bare.replace('%', '%25')}]/" if ":" in bare else f"http://{bare}/"


@pytest.mark.parametrize("host", BLOCKED)
def test_blocked_addresses(host: str) -> None:
    with pytest.raises(SsrfBlocked) as info:
        check_url(_url(host))
    assert info.value.message.startswith(BLOCKED_HOST)
    assert info.value.rule == "address"
    assert blocked_range(ipaddress.ip_address(host.strip("[]").split("%")[0])) is not None


@pytest.mark.parametrize("host", PUBLIC)
def test_public_addresses(host: str) -> None:
    target = check_url(_url(host))
    assert target.ip == ipaddress.ip_address(host)


@pytest.mark.parametrize(
    "host", ["example.com", "abc.123.example", "1password.com", "0x.example.com", "xn--e1afmkfd.xn--p1ai"]
)
def test_names_that_are_not_ips_go_to_dns(host: str) -> None:
    target = check_url(f"https://{host}/a?b=1#frag")
    assert (target.host, target.ip, target.url) == (host, None, f"https://{host}/a?b=1")


@pytest.mark.parametrize("host", [*LEGACY, *MALFORMED])
def test_legacy_and_malformed_literals_rejected_outright(host: str) -> None:
    with pytest.raises(SsrfBlocked) as info:
        check_url(f"http://{host}/")
    assert info.value.message.startswith(BLOCKED_HOST) and info.value.rule == "address"


@pytest.mark.parametrize(
    ("addr", "form", "inner"),
    [
        ("::ffff:7f00:1", "IPv4-mapped", "127.0.0.1"),
        ("::ffff:0:7f00:1", "IPv4-translated (RFC 6145)", "127.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "NAT64", "169.254.169.254"),
        ("64:ff9b:1::a00:1", "NAT64 local-use", "10.0.0.1"),
        ("::a00:1", "IPv4-compatible", "10.0.0.1"),
        ("2002:a9fe:a9fe::1", "6to4", "169.254.169.254"),
        ("2001:0:4136:e378:8000:63bf:80ff:fefe", "Teredo", "127.0.1.1"),
        ("fe80::200:5efe:c0a8:101", "ISATAP", "192.168.1.1"),
    ],
)
def test_embedded_ipv4_forms(addr: str, form: str, inner: str) -> None:
    assert embedded_ipv4(ipaddress.IPv6Address(addr)) == (form, ipaddress.IPv4Address(inner))


def test_isatap_with_private_ipv4_under_a_public_prefix_is_blocked() -> None:
    with pytest.raises(SsrfBlocked, match="ISATAP"):
        check_url("http://[2001:4860:1234::5efe:10.0.0.1]/")


# ---- hostnames ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost/",
        "http://LOCALHOST./admin",
        "http://localhost.localdomain/",
        "http://api.localhost/",
        "http://printer.local/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA.GOOGLE.INTERNAL./",
        "http://ip-10-0-0-1.ec2.internal/",
        "http://metadata/",
        "http://localhost:8080/",
        "http://user:pw@localhost/",
        "http://\u24dbocalhost/",  # circled l: IDNA folds it to "localhost"
        "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",  # fullwidth 127.0.0.1
        "http://127\u30020\u30020\u30021/",  # ideographic full stops
        "http://127.0.0.1../",
    ],
)
def test_blocked_names_and_folded_forms(url: str) -> None:
    with pytest.raises(SsrfBlocked) as info:
        check_url(url)
    assert info.value.message.startswith(BLOCKED_HOST)


def test_trailing_dots_and_case_are_normalised() -> None:
    target = check_url("HTTPS://Example.COM.:8443/x")
    assert (target.scheme, target.host, target.port, target.origin) == (
        "https",
        "example.com",
        8443,
        "https://example.com:8443",
    )


def test_idna_names_become_ascii() -> None:
    assert check_url("http://bücher.example/").host == "xn--bcher-kva.example"


def test_spaces_outside_the_host_are_encoded() -> None:
    assert check_url("https://example.com/a b?q=c d#e f").url == "https://example.com/a%20b?q=c%20d"
    with pytest.raises(SsrfBlocked, match="whitespace in the host"):
        check_url("http://example.com :80/")


# ---- schemes and URL shape ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        *("file:///etc/passwd", "ftp://example.com/", "gopher://127.0.0.1:70/", "dict://127.0.0.1:11211/stat"),
        *("javascript:alert(1)", "data:text/html,<b> x", "ws://example.com/", "//example.com/", "example.com", ""),
    ],
)
def test_only_http_and_https(url: str) -> None:
    with pytest.raises(SsrfBlocked, match=r"^Invalid URL: must be http or https$"):
        check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.example\\@127.0.0.1/",
        "http:\\\\127.0.0.1\\",
        "http://example.com/\\..\\",
        "http://exa\tmple.com/",
        "http://example.com/\nx",
        "http://example.com\x00.evil/",
        "http://example.com:99999/",
        "http://example.com:abc/",
        "http://example.com:0/",
        "http:///path",
    ],
)
def test_malformed_urls_are_invalid(url: str) -> None:
    with pytest.raises(SsrfBlocked) as info:
        check_url(url)
    assert info.value.message.startswith(("Invalid URL", "Invalid hostname"))


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://%31%32%37.0.0.1/", BLOCKED_HOST),  # percent-decoded first, like WHATWG
        ("http://%E2%93%9Bocalhost/", BLOCKED_HOST),
        ("http://localhost%00.evil.example/", "Invalid URL"),
        ("http://exa%2Fmple.com/", "Invalid URL"),
        ("http://ex%FF.com/", "Invalid URL"),
        ("http://ex ample.com/", "Invalid URL"),
        ("http://exa*mple.com/", "Invalid URL"),
        ("http://./", "Invalid hostname"),
        ("http://[v1.fe]/", BLOCKED_HOST),
    ],
)
def test_odd_hosts_are_refused(url: str, message: str) -> None:
    with pytest.raises(SsrfBlocked) as info:
        check_url(url)
    assert info.value.message.startswith(message)
    assert check_url("http://ex%41mple.com/").host == "example.com"


def test_malformed_ipv6_literal_fails_closed() -> None:
    with pytest.raises(SsrfBlocked) as info:
        check_url("http://[::::]/")
    assert info.value.message.startswith(BLOCKED_HOST)


def test_fragment_and_userinfo_confusion_use_the_real_host() -> None:
    with pytest.raises(SsrfBlocked):
        check_url("http://127.0.0.1#@evil.example/")
    with pytest.raises(SsrfBlocked):
        check_url("http://evil.example@127.0.0.1/")
    target = check_url("http://127.0.0.1:80@evil.example/")  # userinfo "127.0.0.1:80", host evil.example
    assert (target.host, target.username, target.password) == ("evil.example", "127.0.0.1", "80")


def test_credentials_are_parsed_and_never_part_of_the_fetched_url() -> None:
    target = check_url("https://us%40er:p%3Ass@example.com/x#y")
    assert (target.username, target.password, target.url) == ("us@er", "p:ss", "https://example.com/x")


def test_ssrf_blocked_is_a_homarus_invalid_request_naming_its_rule() -> None:
    with pytest.raises(SsrfBlocked) as info:
        check_url("http://10.1.2.3/")
    exc = info.value
    assert isinstance(exc, InvalidRequest) and exc.http_status == 400
    assert exc.rule == "address" and exc.details == {"rule": "address", "host": "10.1.2.3"}
    assert "10.1.2.3: private 10.0.0.0/8" in exc.message
    assert issubclass(FetchError, Unavailable)


# ---- policies ----------------------------------------------------------------------------------

LOCAL = ipaddress.ip_address


def test_allow_private_network_keeps_internal_names_and_metadata_blocked() -> None:
    policy = SsrfPolicy(allow_private_network=True)
    for ok in ("http://localhost/", "http://api.localhost/", "http://nas.local/", "http://10.0.0.1/", "http://[::1]/"):
        check_url(ok, policy)
    for bad in (
        "http://metadata.google.internal/",
        "http://db.internal/",
        "http://169.254.169.254/",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::169.254.169.254]/",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/",
        "http://0x7f.1/",
    ):
        with pytest.raises(SsrfBlocked):
            check_url(bad, policy)


def test_hostname_allowlist_exact_and_wildcard_never_apex() -> None:
    policy = SsrfPolicy(hostname_allowlist=("docs.example.org", "*.example.com", "*", "*."))
    check_url("https://docs.example.org/", policy)
    check_url("https://a.b.example.com/", policy)
    for url in ("https://example.com/", "https://evil.org/", "https://notexample.com/"):
        with pytest.raises(SsrfBlocked, match=r"^Blocked hostname \(not in allowlist\)"):
            check_url(url, policy)


def test_trusted_origin_is_exact_and_still_refuses_link_local_and_metadata() -> None:
    policy = SsrfPolicy(trusted_origins=frozenset({"http://127.0.0.1:8888", "http://localhost:8888"}))
    check_url("http://127.0.0.1:8888/search", policy)
    check_url("http://localhost:8888/search", policy)
    for url in ("http://127.0.0.1:6379/", "https://127.0.0.1:8888/", "http://localhost:8889/"):
        with pytest.raises(SsrfBlocked):
            check_url(url, policy)
    trusted = SsrfPolicy(trusted_hostnames=frozenset({"169.254.169.254", "169.254.1.1"}))
    for url in ("http://169.254.169.254/", "http://169.254.1.1/"):
        with pytest.raises(SsrfBlocked):
            check_url(url, trusted)


def test_range_opt_outs() -> None:
    check_url("http://198.18.0.1/", SsrfPolicy(allow_rfc2544_benchmark_range=True))
    check_url("http://[fd00::1]/", SsrfPolicy(allow_ipv6_unique_local_range=True))
    with pytest.raises(SsrfBlocked):
        check_url("http://[fd00:ec2::254]/", SsrfPolicy(allow_ipv6_unique_local_range=True))
    with pytest.raises(SsrfBlocked):
        check_url("http://127.0.0.1/", SsrfPolicy(allow_rfc2544_benchmark_range=True))


def test_allow_addresses_is_exact_and_never_metadata() -> None:
    policy = SsrfPolicy(allow_addresses=frozenset({LOCAL("127.0.0.1"), LOCAL("169.254.169.254")}))
    check_url("http://127.0.0.1:9/", policy)
    for url in ("http://127.0.0.2/", "http://169.254.169.254/", "http://localhost/"):
        with pytest.raises(SsrfBlocked):
            check_url(url, policy)
