"""One headless Chromium per agent, started on first use and closed when idle.

Each agent has a persistent profile under ``$STATE/browser/<agent>/profile`` (cookies survive a
restart of the browser), shared by its sessions; each session drives a tab of its own. Sandboxed
sessions (when ``sandbox.browser.enabled``) get a second browser of the agent's, whose profile
(``sandbox-profile``) is emptied at each start: they never see the agent's cookies or logins. Downloads
are refused, service workers blocked (they would bypass request routing), and every request goes
through :class:`homarus.browser.egress.Egress`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.browser.egress import REDIRECT_HEADER, Egress
from homarus.browser.pin_proxy import PinningProxy
from homarus.tasks import cancel_and_wait

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page, Playwright

    from homarus.config.browser import BrowserConfig

__all__ = ["AgentBrowser", "BrowserHub", "BrowserUnavailable", "profile_path"]

log = logging.getLogger("homarus.browser")

CONSOLE_KEEP = 100
_ARGS = ["--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-sync", "--disable-component-update"]


def profile_path(state_dir: Path, agent_id: str, *, sandboxed: bool = False) -> Path:
    """Where an agent's browser keeps its profile (the sandboxed sessions' one is emptied at each start)."""
    return state_dir / "browser" / agent_id / ("sandbox-profile" if sandboxed else "profile")


class BrowserUnavailable(Exception):
    """The browser cannot be started here (no Chromium, no Playwright): the message says why."""


class AgentBrowser:
    def __init__(
        self, agent_id: str, cfg: BrowserConfig, profile: Path, playwright: Playwright, *, throwaway: bool = False
    ) -> None:
        self.agent_id = agent_id
        self.cfg = cfg
        self.profile = profile
        #: the profile is emptied at each start (the sandboxed sessions' browser)
        self.throwaway = throwaway
        self.egress = Egress(tuple(h.lower() for h in cfg.ssrf.allow))
        #: every connection the browser makes goes to the address the egress checked
        self.proxy = PinningProxy(self.egress.pin, self.egress.refuse)
        self._pw = playwright
        self._context: BrowserContext | None = None
        self._tabs: dict[str, Page] = {}
        self.console: dict[str, collections.deque[str]] = {}
        #: the last element ref handed out in each session's tab (refs never repeat in a tab)
        self.ref_seq: dict[str, int] = {}
        #: each tab's latest document: (url, HTTP status, the checked redirect it stands in for)
        self.documents: dict[str, tuple[str, int, str | None]] = {}
        self.last_used = time.monotonic()
        #: actions running now: an idle browser is one with none, unused for ``idleMinutes``
        self.busy = 0
        self._lock = asyncio.Lock()

    @property
    def running(self) -> bool:
        return self._context is not None

    @contextlib.contextmanager
    def in_use(self) -> Iterator[None]:
        """One action: the browser is not idle while it runs (a slow page load is not closed under
        it), and its idle time counts from the action's end."""
        self.busy += 1
        try:
            yield
        finally:
            self.busy -= 1
            self.last_used = time.monotonic()

    async def start(self) -> None:
        async with self._lock:
            if self._context is not None:
                return
            if not os.access(self.cfg.executable_path, os.X_OK):
                raise BrowserUnavailable(f"no Chromium at {self.cfg.executable_path} (browser.executablePath)")
            if self.throwaway:
                shutil.rmtree(self.profile, ignore_errors=True)
            self.profile.mkdir(parents=True, exist_ok=True, mode=0o700)
            args = [*_ARGS, *(["--no-sandbox"] if os.geteuid() == 0 else [])]  # Chromium's sandbox refuses root
            await self.proxy.start()
            context = await self._pw.chromium.launch_persistent_context(
                str(self.profile),
                executable_path=self.cfg.executable_path,
                headless=self.cfg.headless,
                args=args,
                # loopback too (Playwright drops Chromium's implicit loopback bypass); no bypass list
                proxy={"server": self.proxy.url},
                accept_downloads=False,
                service_workers="block",
                viewport={"width": 1280, "height": 800},
            )
            context.set_default_timeout(self.cfg.timeout_ms)
            await context.route("**/*", self.egress.route)
            if hasattr(context, "route_web_socket"):
                await context.route_web_socket("**/*", self.egress.route_websocket)
            for stray in list(context.pages):  # the persistent context opens a blank tab of its own
                with contextlib.suppress(Exception):
                    await stray.close()
            self._context = context
            self.last_used = time.monotonic()

    async def stop(self) -> None:
        async with self._lock:
            context, self._context = self._context, None
            self._tabs.clear()
            if context is not None:
                with contextlib.suppress(Exception):
                    await context.close()
            await self.proxy.close()

    async def tab(self, session_key: str, *, create: bool = True) -> Page:
        """The session's tab (opened on first use)."""
        await self.start()
        self.last_used = time.monotonic()
        page = self._tabs.get(session_key)
        if page is not None and not page.is_closed():
            return page
        if not create:
            raise BrowserUnavailable("this session has no tab open: use the open action first")
        assert self._context is not None
        page = await self._context.new_page()
        log_lines: collections.deque[str] = collections.deque(maxlen=CONSOLE_KEEP)
        page.on("console", lambda m: log_lines.append(f"[{m.type}] {m.text}"[:500]))
        page.on("pageerror", lambda e: log_lines.append(f"[pageerror] {e}"[:500]))

        def document(response: Any) -> None:
            if response.request.is_navigation_request() and response.frame == page.main_frame:
                self.documents[session_key] = (response.url, response.status, response.headers.get(REDIRECT_HEADER))

        page.on("response", document)
        self.console[session_key] = log_lines
        self._tabs[session_key] = page
        return page

    async def close_tab(self, session_key: str) -> None:
        page = self._tabs.pop(session_key, None)
        if page is not None:
            with contextlib.suppress(Exception):
                await page.close()

    def tabs(self) -> list[dict[str, Any]]:
        return [{"session": key, "url": page.url} for key, page in self.pages()]

    def pages(self) -> list[tuple[str, Page]]:
        """(session key, its tab) for every open tab."""
        return [(key, page) for key, page in self._tabs.items() if not page.is_closed()]


class BrowserHub:
    """The agents' browsers, and the Playwright driver they share (started with the first one)."""

    def __init__(self, cfg: BrowserConfig, state_dir: Path) -> None:
        self.cfg = cfg
        self.state_dir = state_dir
        self._pw: Playwright | None = None
        self._pw_cm: Any = None
        self._browsers: dict[str, AgentBrowser] = {}
        self._idle: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def for_agent(self, agent_id: str, *, sandboxed: bool = False) -> AgentBrowser:
        async with self._lock:
            if self._pw is None:
                try:
                    from playwright.async_api import async_playwright
                except ImportError:
                    raise BrowserUnavailable("Playwright for Python is not installed") from None
                self._pw_cm = async_playwright()
                self._pw = await self._pw_cm.start()
                self._idle = asyncio.create_task(self._reap(), name="browser-idle")
            key = self._key(agent_id, sandboxed)
            browser = self._browsers.get(key)
            if browser is None:
                profile = self._profile(agent_id, sandboxed)
                browser = AgentBrowser(agent_id, self.cfg, profile, self._pw, throwaway=sandboxed)
                self._browsers[key] = browser
            return browser

    @staticmethod
    def _key(agent_id: str, sandboxed: bool) -> str:
        return f"{agent_id}\0sandbox" if sandboxed else agent_id

    def existing(self, agent_id: str) -> AgentBrowser | None:
        """The agent's browser if one was made (running or not); never starts anything."""
        return self._browsers.get(self._key(agent_id, False))

    def _profile(self, agent_id: str, sandboxed: bool) -> Path:
        return profile_path(self.state_dir, agent_id, sandboxed=sandboxed)

    def status(self, agent_id: str, *, sandboxed: bool = False) -> dict[str, Any]:
        browser = self._browsers.get(self._key(agent_id, sandboxed))
        running = browser is not None and browser.running
        return {
            "running": running,
            "tabs": browser.tabs() if browser is not None and running else [],
            "headless": self.cfg.headless,
            "profile": str(self._profile(agent_id, sandboxed)),
        }

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(min(30.0, self.cfg.idle_minutes * 60 / 4))
            now = time.monotonic()
            for browser in list(self._browsers.values()):
                idle = browser.busy == 0 and now - browser.last_used > self.cfg.idle_minutes * 60
                if browser.running and idle:
                    log.info("browser of agent %s idle for %.0f min: closed", browser.agent_id, self.cfg.idle_minutes)
                    await browser.stop()

    async def stop(self) -> None:
        await cancel_and_wait(self._idle)
        await asyncio.gather(*(b.stop() for b in self._browsers.values()), return_exceptions=True)
        self._browsers.clear()
        if self._pw_cm is not None:
            with contextlib.suppress(Exception):
                await self._pw_cm.__aexit__(None, None, None)
        self._pw = self._pw_cm = None
