"""``browser.request``: the original's browser control routes answered for the agents' real
headless Chromium (status, doctor, profiles, tabs, start, stop); the rest says why not."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.browser.test_browser_tool import CHROMIUM, site
from tests.conftest import RunningGateway, run_gateway
from tests.gateway.methods.test_compat_methods import client

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"{CHROMIUM} is not installed")
__all__ = ["site"]


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[RunningGateway]:
    config = {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}}, "list": [{"id": "main"}, {"id": "work"}]},
        "browser": {"ssrf": {"allow": ["127.0.0.1"]}},
    }
    with run_gateway(tmp_path, config=config) as gw:
        yield gw


async def _browser(c: Any, method: str, path: str, **query: str) -> dict[str, Any]:
    answer: dict[str, Any] = await c.request(
        "browser.request", {"method": method, "path": path, "query": query or None}, timeout=60
    )
    return answer


async def test_status_profiles_tabs_start_and_stop_report_the_agents_browsers(
    gateway: RunningGateway, site: tuple[str, list[str]]
) -> None:
    base, _seen = site
    c = await client(gateway)
    status = (await _browser(c, "GET", "/"))["payload"]
    assert status["profile"] == "main" and status["enabled"] is True and status["running"] is False
    assert status["detectedExecutablePath"] == CHROMIUM and status["headless"] is True
    assert status["userDataDir"].endswith("browser/main/profile")
    assert not gateway.gateway.built("browser")  # asking for the status starts nothing
    profiles = (await _browser(c, "GET", "/profiles"))["payload"]["profiles"]
    assert [(p["name"], p["isDefault"], p["running"]) for p in profiles] == [
        ("main", True, False),
        ("work", False, False),
    ]
    assert (await _browser(c, "GET", "/tabs"))["payload"] == {"running": False, "tabs": []}

    # an agent's run opens a page: its tab is listed under the session that opened it
    provider = ScriptedProvider(
        [Reply("", tool_calls=[("browser", {"action": "open", "url": base + "/"})]), Reply("ok")]
    )
    gateway.gateway.models.overrides["test"] = provider
    sent = await c.request("agent", {"message": "look", "sessionKey": "main", "idempotencyKey": "b1"})
    assert sent["ok"], sent
    assert (await c.request("agent.wait", {"runId": "b1", "timeoutMs": 30_000}, timeout=40))["payload"][
        "status"
    ] == "ok"
    tabs = (await _browser(c, "GET", "/tabs"))["payload"]
    assert tabs["running"] is True
    assert [(t["targetId"], t["title"], t["url"]) for t in tabs["tabs"]] == [("agent:main:main", "Home", base + "/")]
    listed = (await _browser(c, "GET", "/profiles"))["payload"]["profiles"]
    assert (listed[0]["running"], listed[0]["tabCount"]) == (True, 1) and listed[1]["running"] is False
    doctor = (await _browser(c, "GET", "/doctor"))["payload"]
    assert doctor["ok"] is True and [k["status"] for k in doctor["checks"]] == ["pass", "pass"]

    assert (await _browser(c, "POST", "/stop"))["payload"] == {"ok": True, "stopped": True, "profile": "main"}
    assert (await _browser(c, "GET", "/"))["payload"]["running"] is False
    assert (await _browser(c, "POST", "/start", profile="work"))["payload"] == {"ok": True, "profile": "work"}
    assert (await _browser(c, "GET", "/", profile="work"))["payload"]["running"] is True
    assert (await _browser(c, "GET", "/", profile="main"))["payload"]["running"] is False
    assert (await _browser(c, "POST", "/stop", profile="work"))["payload"]["stopped"] is True


async def test_bad_and_unsupported_browser_requests_say_why(gateway: RunningGateway) -> None:
    c = await client(gateway)
    unknown = await _browser(c, "GET", "/", profile="nope")
    assert unknown["ok"] is False and unknown["error"]["message"] == (
        'Profile "nope" not found. Available profiles: main, work'
    )
    for method, path in (("POST", "/navigate"), ("GET", "/snapshot"), ("POST", "/tabs/open")):
        refused = await _browser(c, method, path)
        assert refused["ok"] is False and refused["error"]["details"]["code"] == "NOT_SUPPORTED", refused
        assert "agents' browser tool" in refused["error"]["message"]
    bad = await _browser(c, "PUT", "/")
    assert bad["ok"] is False and bad["error"]["message"] == "method must be GET, POST, or DELETE"
    node = await c.request("browser.request", {"method": "GET", "path": "/", "target": "node", "node": "n1"})
    assert node["error"]["details"]["code"] == "NOT_SUPPORTED"
    extra = await c.request("browser.request", {"method": "GET", "path": "/", "verb": "x"})
    assert "unexpected property 'verb'" in extra["error"]["message"]
    reader = await client(gateway, ["operator.read", "operator.write"])
    refused = await reader.request("browser.request", {"method": "GET", "path": "/"})
    assert refused["error"]["message"] == "missing scope: operator.admin"
    assert not gateway.gateway.built("browser")
