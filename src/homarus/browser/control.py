"""The agents' browsers seen from the protocol (``browser.request``, ``openclaw browser …``).

The original runs a browser control server and the gateway relays HTTP-like requests to it
(``{method, path, query, body}``). Homarus's browser is a tool of its agents, so only the routes
that look after it are answered here: ``GET /`` (status), ``GET /doctor``, ``GET /profiles``,
``GET /tabs``, ``POST /start`` and ``POST /stop``. A profile is an agent (each agent has one
browser and one persistent profile; ``main`` is the default). Driving pages (open, navigate,
snapshot, act, …) is the agents' ``browser`` tool's job: those routes say so. Answers use the
original's field names so its CLI prints them; what Homarus does not have (a CDP port: Playwright
drives Chromium over a pipe) is null.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from homarus.errors import InvalidRequest, NotFound

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from pathlib import Path

    from homarus.browser.manager import AgentBrowser, BrowserHub
    from homarus.config.browser import BrowserConfig

__all__ = ["ROUTES", "BrowserControl", "UnsupportedRoute"]

#: the routes answered here: (method, path) → the name of its handler on BrowserControl, which takes
#: the profile's agent (``/profiles`` lists them all and takes none)
ROUTES: Final = {
    ("GET", "/"): "_status",
    ("GET", "/doctor"): "_doctor",
    ("GET", "/profiles"): "_profiles",
    ("GET", "/tabs"): "_tabs",
    ("POST", "/start"): "_start",
    ("POST", "/stop"): "_stop",
}
#: the profile colour the original's CLI prints (Homarus's browsers have no accent colour)
COLOR: Final = "#FF4500"
NO_CDP: Final = "none (Playwright drives Chromium over a pipe)"


class UnsupportedRoute(Exception):
    """A route of the original's browser server that Homarus leaves to the agents' tool."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(
            f"{method} {path}: pages are driven by the agents' browser tool; over the protocol Homarus answers "
            "status, doctor, profiles, tabs, start and stop"
        )


@dataclass(frozen=True, slots=True)
class BrowserControl:
    cfg: BrowserConfig
    agents: Sequence[str]
    default_agent: str
    #: the hub, built on first use (a status read of an unused browser builds nothing)
    hub: Callable[[], BrowserHub]
    hub_built: Callable[[], bool]
    state_dir: Path

    async def request(self, method: str, path: str, query: dict[str, Any]) -> dict[str, Any]:
        method = method.upper()
        path = "/" + path.strip().strip("/") if path.strip() not in ("", "/") else "/"
        if method not in ("GET", "POST", "DELETE"):
            raise InvalidRequest("method must be GET, POST, or DELETE")
        name = ROUTES.get((method, path))
        if name is None:
            raise UnsupportedRoute(method, path)
        if path == "/profiles":
            return self._profiles()
        handler: Callable[[str], Awaitable[dict[str, Any]]] = getattr(self, name)
        return await handler(self._agent(query.get("profile")))

    def _agent(self, profile: object) -> str:
        if profile is None or profile == "":
            return self.default_agent
        if not isinstance(profile, str) or profile not in self.agents:
            available = ", ".join(self.agents)
            raise NotFound(f'Profile "{profile}" not found. Available profiles: {available}')
        return profile

    def _running(self, agent: str) -> AgentBrowser | None:
        if not self.hub_built():
            return None
        browser = self.hub().existing(agent)
        return browser if browser is not None and browser.running else None

    def _profiles(self) -> dict[str, Any]:
        return {"profiles": [self._profile_row(agent) for agent in self.agents]}

    def _profile_row(self, agent: str) -> dict[str, Any]:
        browser = self._running(agent)
        return {
            "name": agent,
            "driver": "managed",
            "transport": "playwright",
            "running": browser is not None,
            "tabCount": len(browser.tabs()) if browser is not None else 0,
            "isDefault": agent == self.default_agent,
            "isRemote": False,
            "cdpPort": None,
            "cdpUrl": None,
            "color": COLOR,
        }

    async def _status(self, agent: str) -> dict[str, Any]:
        executable = self.cfg.executable_path
        found = os.access(executable, os.X_OK)
        browser = self._running(agent)
        running = browser is not None
        from homarus.browser.manager import profile_path

        profile = profile_path(self.state_dir, agent)
        return {
            "enabled": self.cfg.enabled,
            "profile": agent,
            "driver": "managed",
            "transport": "playwright",
            "running": running,
            "cdpReady": running,
            "cdpHttp": False,
            "pageReady": running,
            "pid": None,
            "cdpPort": None,
            "cdpUrl": NO_CDP,
            "chosenBrowser": "chromium" if running else None,
            "detectedBrowser": "chromium" if found else None,
            "detectedExecutablePath": executable if found else None,
            "detectError": None if found else f"no Chromium at {executable} (browser.executablePath)",
            "userDataDir": str(profile),
            "color": COLOR,
            "headless": self.cfg.headless,
            "headlessSource": "config",
            "noSandbox": os.geteuid() == 0,
            "executablePath": executable,
            "attachOnly": False,
        }

    async def _doctor(self, agent: str) -> dict[str, Any]:
        status = await self._status(agent)
        found = status["detectedExecutablePath"] is not None
        checks = [
            {
                "id": "managed-executable",
                "label": "Chromium executable",
                "status": "pass" if found else "fail",
                "summary": f"chromium at {status['executablePath']}" if found else status["detectError"],
            },
            {
                "id": "browser-running",
                "label": "Browser",
                "status": "pass" if status["running"] else "info",
                "summary": "running" if status["running"] else "not running: it starts when an agent needs it",
            },
        ]
        ok = found and self.cfg.enabled
        return {"ok": ok, "profile": agent, "transport": "playwright", "checks": checks, "status": status}

    async def _tabs(self, agent: str) -> dict[str, Any]:
        browser = self._running(agent)
        if browser is None:
            return {"running": False, "tabs": []}
        tabs = []
        for session, page in browser.pages():
            try:
                title = await page.title()
            except Exception:  # a page closing under us: listed without its title
                title = ""
            tabs.append({"targetId": session, "title": title, "url": page.url, "type": "page", "label": session})
        return {"running": True, "tabs": tabs}

    async def _start(self, agent: str) -> dict[str, Any]:
        if not self.cfg.enabled:
            raise InvalidRequest("the browser is disabled (browser.enabled: false)")
        from homarus.browser.manager import BrowserUnavailable

        try:
            browser = await self.hub().for_agent(agent)
            await browser.start()
        except BrowserUnavailable as exc:
            raise InvalidRequest(str(exc)) from None
        return {"ok": True, "profile": agent}

    async def _stop(self, agent: str) -> dict[str, Any]:
        browser = self._running(agent)
        if browser is not None and browser.busy:
            raise InvalidRequest(f"the browser of agent {agent} is in use by a run; stop it when the run is done")
        if browser is not None:
            await browser.stop()
        return {"ok": True, "stopped": browser is not None, "profile": agent}
