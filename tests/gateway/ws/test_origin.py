"""Origin check for browser WebSocket clients (§1.4 h): the rule, then over real sockets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from homarus.config.control_ui import ControlUiConfig
from homarus.security.origin import ORIGIN_NOT_ALLOWED, check_origin
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import open_client


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        (None, "127.0.0.1:18789"),  # not a browser: CLI, scripts, native apps
        ("http://127.0.0.1:18789", "127.0.0.1:18789"),
        ("http://LOCALHOST:18789", "localhost:18789"),
        ("http://gw.example", "gw.example"),  # default port on both sides
        ("http://gw.example:80", "gw.example"),
        ("https://gw.example", "gw.example:443"),
        ("http://[::1]:18789", "[::1]:18789"),
    ],
)
def test_same_host_and_port_is_allowed(origin: str | None, host: str) -> None:
    assert check_origin(origin, host, ()) is None


@pytest.mark.parametrize(
    ("origin", "host", "reason"),
    [
        ("http://127.0.0.1:3000", "127.0.0.1:18789", "origin-mismatch"),  # another local server
        ("http://localhost:18789", "127.0.0.1:18789", "origin-mismatch"),
        ("http://evil.example", "127.0.0.1:18789", "origin-mismatch"),
        ("https://gw.example", "gw.example:80", "origin-mismatch"),  # 443 vs 80
        ("http://gw.example", None, "origin-mismatch"),  # no Host to compare with
        ("http://gw.example", "gw.example/x", "origin-mismatch"),
        ("http://gw.example", "user@gw.example", "origin-mismatch"),
        ("null", "127.0.0.1:18789", "origin-invalid"),  # sandboxed frame, file: page
        ("file://", "127.0.0.1:18789", "origin-invalid"),
        ("chrome-extension://abc", "127.0.0.1:18789", "origin-invalid"),
        ("http://127.0.0.1:18789/path", "127.0.0.1:18789", "origin-invalid"),
        ("http://127.0.0.1:99999", "127.0.0.1:99999", "origin-invalid"),
        ("", "127.0.0.1:18789", "origin-invalid"),
    ],
)
def test_other_origins_are_refused(origin: str, host: str | None, reason: str) -> None:
    refusal = check_origin(origin, host, ())
    assert refusal is not None
    assert refusal.reason == reason


def test_allowed_origins_widen_the_rule() -> None:
    allowed = ControlUiConfig.model_validate({"allowedOrigins": ["https://Console.Example"]}).allowed_origins
    assert allowed == ("https://console.example:443",)
    assert check_origin("https://console.example", "127.0.0.1:18789", allowed) is None
    assert check_origin("https://console.example:8443", "127.0.0.1:18789", allowed) is not None
    assert check_origin("http://anything.example", "h", ("*",)) is None


def test_refusal_keeps_only_a_bounded_copy_of_the_origin() -> None:
    refusal = check_origin("http://" + "a" * 5000 + ".example", "h", ())
    assert refusal is not None
    assert len(refusal.origin) == 200


# -- over real sockets -------------------------------------------------------------------------------


async def _connect(url: str, origin: str | None, **extra: Any) -> tuple[dict[str, Any], Any]:
    client = await open_client(url, **({"origin": origin} if origin else {}), **extra)
    res = await client.handshake(TEST_TOKEN)
    return res, client


async def test_page_from_the_gateway_itself_connects(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        res, _ = await _connect(gw.url, f"http://127.0.0.1:{gw.port}")
        assert res["ok"], res


async def test_cross_origin_page_is_refused_even_with_the_token(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        res, client = await _connect(gw.url, "http://evil.example")
        assert not res["ok"]
        assert res["error"]["code"] == "INVALID_REQUEST"
        assert res["error"]["message"] == ORIGIN_NOT_ALLOWED
        assert res["error"]["details"] == {"code": "CONTROL_UI_ORIGIN_NOT_ALLOWED", "reason": "origin-mismatch"}
        code, _ = await client.close_info()
        assert code == 1008
        # the refusal is not an auth failure: the right token from the right place still works
        res, _ = await _connect(gw.url, f"http://127.0.0.1:{gw.port}")
        assert res["ok"]


async def test_refused_before_auth_so_a_wrong_token_learns_nothing(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        client = await open_client(gw.url, origin="http://127.0.0.1:1")
        res = await client.handshake("wrong-token")
        assert res["error"]["details"]["code"] == "CONTROL_UI_ORIGIN_NOT_ALLOWED"


async def test_localhost_page_on_another_port_is_refused(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        res, _ = await _connect(gw.url, f"http://127.0.0.1:{gw.port + 1 if gw.port < 65535 else 1}")
        assert res["error"]["details"]["reason"] == "origin-mismatch"


async def test_null_origin_is_refused(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        client = await open_client(gw.url, additional_headers={"Origin": "null"})
        res = await client.handshake(TEST_TOKEN)
        assert res["error"]["details"]["reason"] == "origin-invalid"


async def test_allowed_origins_from_config(tmp_path: Path) -> None:
    config = {"gateway": {"controlUi": {"allowedOrigins": ["https://console.example"]}}}
    with run_gateway(tmp_path, config=config) as gw:
        res, _ = await _connect(gw.url, "https://console.example")
        assert res["ok"], res
        res, _ = await _connect(gw.url, "https://other.example")
        assert not res["ok"]


async def test_clients_without_origin_are_unaffected(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        res, _ = await _connect(gw.url, None)
        assert res["ok"]


@pytest.mark.parametrize(
    ("origin", "host", "refused"),
    [
        ("http://127.0.0.1:18789", "127.0.0.1:18789", False),
        ("http://localhost:18789", "localhost:18789", False),
        ("http://[::1]:18789", "[::1]:18789", False),
        ("http://127.0.0.2:18789", "127.0.0.2:18789", False),
        ("http://rebind.example:18789", "rebind.example:18789", True),  # DNS rebinding to 127.0.0.1
        ("http://192.168.1.5:18789", "192.168.1.5:18789", True),
    ],
)
def test_loopback_gateway_takes_same_host_only_for_loopback_hosts(origin: str, host: str, refused: bool) -> None:
    refusal = check_origin(origin, host, (), loopback_only=True)
    assert (refusal is not None) == refused
    if refusal is not None:
        assert refusal.reason == "host-not-local"
    assert check_origin(origin, host, (), loopback_only=False) is None  # a LAN-bound gateway: any same host
    allowed = ControlUiConfig.model_validate({"allowedOrigins": [origin]}).allowed_origins
    assert check_origin(origin, host, allowed, loopback_only=True) is None  # named on purpose


async def test_dns_rebinding_page_is_refused_by_a_loopback_gateway(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        host = f"rebind.example:{gw.port}"
        client = await open_client(gw.url, origin=f"http://{host}", additional_headers={"Host": host})
        res = await client.handshake(TEST_TOKEN)
        assert res["error"]["details"] == {"code": "CONTROL_UI_ORIGIN_NOT_ALLOWED", "reason": "host-not-local"}
