"""Fixtures for the Control UI tests: one headless Chromium.

The browser is Debian's ``/usr/bin/chromium`` driven by Python Playwright (no downloaded browser).
Browser tests are skipped, with the reason, when that binary or the ``playwright`` package is
missing; the HTTP-level tests need neither.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@pytest.fixture(autouse=True)
def _close_ws_clients() -> None:
    """Overrides the suite's async autouse fixture: these tests open no raw WS clients, and an
    async fixture would run pytest-asyncio's loop while Playwright's sync API keeps its own
    loop current in this thread ("cannot be called from a running event loop")."""


def _browser_missing() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is not installed (apt-get install chromium; scripts/system-deps.sh does it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module; each test opens its own context (fresh storage)."""
    reason = _browser_missing()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
