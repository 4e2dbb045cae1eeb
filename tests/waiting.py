"""Polling for a condition in async tests (a real process or thread changes it, not the test)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

__all__ = ["wait_for"]


async def wait_for(check: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """``check()``'s first truthy value, polled every 20 ms; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
