"""Serving the Control UI: assets, headers, caching, base path, the catch-all and its exclusions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from starlette.testclient import TestClient

from homarus.config.control_ui import ControlUiConfig
from homarus.config.store import ConfigStore
from homarus.gateway.app import Gateway, GatewayOptions
from homarus.gateway.http.control_ui import CSP, control_ui_routes
from homarus.gateway.server import build_asgi
from tests.conftest import TEST_TOKEN, make_paths, run_gateway


def _get(base: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(base + path, timeout=5, follow_redirects=False, **kwargs)


def test_index_is_served_with_strict_headers(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        r = _get(gw.http, "/")
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/html; charset=utf-8"
        csp = r.headers["content-security-policy"]
        assert csp == CSP
        for directive in (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
            "object-src 'none'",
            "base-uri 'none'",
        ):
            assert directive in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["cache-control"] == "no-cache"
        assert r.headers["etag"].startswith('"')
        body = r.text
        assert '<script type="module" src="/assets/app.js"></script>' in body
        assert "{{base}}" not in body
        # nothing about the gateway is rendered into the page, least of all the token
        assert TEST_TOKEN not in body and str(gw.paths.state_dir) not in body
        # no inline code for the CSP to have to allow: every script has a src, no on* attributes
        assert not re.search(r"<script(?![^>]*\bsrc=)", body)
        assert not re.search(r"\son[a-z]+\s*=", body)
        assert "style=" not in body


def test_etag_revalidation_and_head(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        first = _get(gw.http, "/assets/app.js")
        assert first.status_code == 200
        again = _get(gw.http, "/assets/app.js", headers={"If-None-Match": first.headers["etag"]})
        assert again.status_code == 304
        assert again.content == b""
        assert again.headers["etag"] == first.headers["etag"]
        stale = _get(gw.http, "/assets/app.js", headers={"If-None-Match": '"other"'})
        assert stale.status_code == 200
        head = httpx.head(gw.http + "/", timeout=5)
        assert head.status_code == 200
        assert head.content == b""
        assert int(head.headers["content-length"]) > 100


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("app.js", "text/javascript; charset=utf-8"),
        ("markdown.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
        ("favicon.svg", "image/svg+xml"),
    ],
)
def test_assets_have_their_content_types(tmp_path: Path, name: str, content_type: str) -> None:
    with run_gateway(tmp_path) as gw:
        r = _get(gw.http, f"/assets/{name}")
        assert r.status_code == 200
        assert r.headers["content-type"] == content_type
        assert r.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    "path",
    ["/assets/missing.js", "/assets/index.html", "/assets/..%2F__init__.py", "/assets/.hidden.js", "/assets/"],
)
def test_unknown_or_sneaky_asset_paths_are_404(tmp_path: Path, path: str) -> None:
    with run_gateway(tmp_path) as gw:
        r = _get(gw.http, path)
        assert r.status_code == 404
        assert "text/html" not in r.headers.get("content-type", "")


def test_unmatched_get_paths_get_the_page_other_methods_404(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        deep = _get(gw.http, "/chat/some/deep/link")
        assert deep.status_code == 200
        assert deep.headers["content-type"].startswith("text/html")
        assert httpx.post(gw.http + "/chat/x", timeout=5).status_code == 404
        assert httpx.delete(gw.http + "/", timeout=5).status_code == 404


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/health", 200),
        ("/readyz", 200),
        ("/tools/invoke", 405),  # POST-only route: GET must not be answered with the page
        ("/hooks/agent", None),
        ("/v1/models", None),
        ("/v1/chat/completions", None),  # POST-only: a GET is 404/405, never the page
        ("/v1/unknown", None),
        ("/sessions/agent:main:main/history", None),
        ("/plugins/x", 404),
        ("/api/x", 404),
        ("/ui/x", 404),
    ],
)
def test_paths_owned_by_others_are_never_the_page(tmp_path: Path, path: str, status: int | None) -> None:
    with run_gateway(tmp_path) as gw:
        r = _get(gw.http, path)
        assert "text/html" not in r.headers.get("content-type", "")
        if status is not None:
            assert r.status_code == status


def test_bootstrap_config_is_public_and_bare(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        r = _get(gw.http, "/__homarus/control-ui-config.json")
        assert r.status_code == 200
        assert r.json() == {"basePath": "/", "assistantName": "Homarus"}


def test_base_path(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config={"gateway": {"controlUi": {"basePath": "/console/"}}}) as gw:
        r = _get(gw.http, "/console")
        assert r.status_code == 302
        assert r.headers["location"] == "/console/"
        page = _get(gw.http, "/console/")
        assert page.status_code == 200
        assert 'src="/console/assets/app.js"' in page.text
        assert _get(gw.http, "/console/assets/app.css").status_code == 200
        assert _get(gw.http, "/console/anything").status_code == 200
        assert _get(gw.http, "/").status_code == 404
        assert _get(gw.http, "/assets/app.js").status_code == 404
        assert _get(gw.http, "/console/__homarus/control-ui-config.json").json()["basePath"] == "/console"


def test_disabled_ui_serves_nothing(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config={"gateway": {"controlUi": {"enabled": False}}}) as gw:
        assert _get(gw.http, "/").status_code == 404
        assert _get(gw.http, "/assets/app.js").status_code == 404
        assert _get(gw.http, "/health").status_code == 200


def test_missing_assets_answer_503(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    gateway = Gateway(paths, ConfigStore.open(paths, env={}), GatewayOptions(token=TEST_TOKEN))
    app = build_asgi(gateway, extra_routes=control_ui_routes(gateway, root=tmp_path / "no-such-dir"))
    client = TestClient(app)
    r = client.get("/")
    assert r.status_code == 503
    assert "missing" in r.text
    assert client.get("/assets/app.js").status_code == 503


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("/", "/"), ("", "/"), ("/ui-x/", "/ui-x"), ("/a/b", "/a/b"), ("/v1.2_~x", "/v1.2_~x")],
)
def test_base_path_config_is_normalized(raw: str, expected: str) -> None:
    assert ControlUiConfig.model_validate({"basePath": raw}).base_path == expected


@pytest.mark.parametrize("raw", ["console", "/a/../b", "/a//b", "/<script>", "/a b", "/a?x=1", "/%2e%2e"])
def test_bad_base_paths_are_refused(raw: str) -> None:
    with pytest.raises(ValidationError):
        ControlUiConfig.model_validate({"basePath": raw})


@pytest.mark.parametrize("raw", ["console.example", "ftp://x.example", "https://x.example/path", "null", "https://"])
def test_bad_allowed_origins_are_refused(raw: str) -> None:
    with pytest.raises(ValidationError):
        ControlUiConfig.model_validate({"allowedOrigins": [raw]})


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValidationError):
        ControlUiConfig.model_validate({"enable": True})
