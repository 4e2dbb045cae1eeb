"""The status page lists the MCP servers: state, transport, tool count, last error (never env)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.webui.harness import Served, served
from tests.webui.test_browser import _close_contexts, _connected, _open  # noqa: F401 - the fixture too

if TYPE_CHECKING:
    from playwright.sync_api import Browser

DEMO = str(Path(__file__).resolve().parents[1] / "mcp_client" / "demo_server.py")


@pytest.fixture
def mcp_gateway(tmp_path: Path) -> Iterator[Served]:
    servers = {
        "demo": {"command": sys.executable, "args": [DEMO, "stdio"], "startup": "eager", "env": {"K": "env-secret"}},
        "gone": {"command": "/nonexistent/mcp-server", "startup": "eager", "timeoutMs": 2000},
    }
    with served(tmp_path, {"mcp": {"servers": servers}}) as gw:
        yield gw


def test_status_page_shows_mcp_servers(browser: Browser, mcp_gateway: Served) -> None:
    page, watch = _open(browser, mcp_gateway)
    _connected(page)
    page.click("a[data-tab=status]")
    for _ in range(100):  # eager servers start beside the gateway: refresh until both settled
        text = page.inner_text("#status-grid") if page.query_selector("#status-grid") else ""
        if "ready" in text and "failed" in text:
            break
        page.click("#status-refresh")
        page.wait_for_timeout(200)
    card = page.inner_text("[data-card='mcp servers']")
    assert "demo" in card and "ready" in card and "stdio" in card
    assert "gone" in card and "failed" in card
    assert "env-secret" not in page.content()
    assert watch.errors == []


def test_status_page_shows_what_the_model_calls_cost(browser: Browser, tmp_path: Path) -> None:
    """The last 30 days from usage.cost: the cost, tokens, each model's share, the latest days."""
    import time

    from homarus.messages import Cost, Usage
    from homarus.usage.ledger import ModelTally, RunUsage, UsageLedger, ledger_path

    ledger = UsageLedger(ledger_path(tmp_path / "state"))
    tally = ModelTally(3, Usage(12_000, 800, 4_000, 0, 16_800, Cost(total=1.25)))
    ledger.record(RunUsage(int(time.time() * 1000), "main", "agent:main:main", "", {("openai", "gpt-x"): tally}))
    ledger.close()
    with served(tmp_path, {}) as gw:
        page, watch = _open(browser, gw)
        _connected(page)
        page.click("a[data-tab=status]")
        page.wait_for_selector("[data-card='usage (30 days)']")
        card = page.inner_text("[data-card='usage (30 days)']")
        assert "$1.25" in card and "openai/gpt-x" in card and "12,000 in" in card
        assert watch.errors == []
