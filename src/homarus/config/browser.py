"""The ``browser`` config section: the agent's headless Chromium (the ``browser`` tool)."""

from __future__ import annotations

from pydantic import Field

from homarus.config.base import ConfigModel

__all__ = ["BrowserConfig", "BrowserSsrfConfig"]


class BrowserSsrfConfig(ConfigModel):
    #: hosts a page may reach although they are private, loopback or link-local (exact names or
    #: ``*.suffix``); cloud-metadata addresses stay blocked
    allow: list[str] = Field(default_factory=list, max_length=256)


class BrowserConfig(ConfigModel):
    enabled: bool = True
    #: the Chromium binary (Debian's ``chromium`` by default); nothing is downloaded
    executable_path: str = Field("/usr/bin/chromium", min_length=1, max_length=4096)
    headless: bool = True
    #: the agent's browser is closed after this many idle minutes (its profile stays)
    idle_minutes: float = Field(10.0, gt=0, le=24 * 60)
    #: the ``evaluate`` action (page JavaScript chosen by the model) is off unless this is on
    allow_evaluate: bool = False
    #: a snapshot is cut to this many characters
    max_snapshot_chars: int = Field(20_000, ge=1_000, le=500_000)
    #: a screenshot larger than this is refused (ask for a smaller viewport or element)
    max_screenshot_bytes: int = Field(2_000_000, ge=50_000, le=20_000_000)
    #: navigation and each action
    timeout_ms: int = Field(15_000, ge=1_000, le=300_000)
    ssrf: BrowserSsrfConfig = Field(default_factory=BrowserSsrfConfig)
