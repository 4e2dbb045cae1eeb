"""What the service commands ask of a gateway: its port (from the unit or the config) and
whether ``/health`` answers; :class:`ServiceError` is their one-sentence failure."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["HEALTH_WAIT_S", "ServiceError", "healthy", "port_of", "wait_healthy"]

HEALTH_WAIT_S = 20.0


class ServiceError(Exception):
    """One sentence and what to do."""


def port_of(paths: StatePaths, unit_text: str | None = None) -> int:
    """The ``--port`` of the unit's ``ExecStart``, else ``gateway.port`` of the config."""
    if unit_text:
        words = next((ln for ln in unit_text.splitlines() if ln.startswith("ExecStart=")), "").split()
        if "--port" in words and words.index("--port") + 1 < len(words):
            return int(words[words.index("--port") + 1].strip('"'))
    from homarus.config.loader import load_config

    return load_config(paths).config.gateway.port


def healthy(port: int, timeout: float = 2.0) -> dict[str, Any] | None:
    """The body of ``/health`` on loopback, or None when nothing answers."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as response:
            body = json.loads(response.read(65536) or b"{}")
            return body if isinstance(body, dict) else {"ok": True}
    except (OSError, ValueError):
        return None


def wait_healthy(port: int, wait_s: float = HEALTH_WAIT_S) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if healthy(port, 1.0) is not None:
            return True
        time.sleep(0.25)
    return False
