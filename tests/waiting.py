"""Polling for a condition in tests (a real process or thread changes it, not the test)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["wait_for", "wait_for_sync"]

POLL_S = 0.02


def _polls(timeout: float, what: str) -> Iterator[None]:
    """One step per poll; AssertionError once ``timeout`` s have passed."""
    deadline = time.monotonic() + timeout
    while True:
        yield
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")


async def wait_for(check: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """``check()``'s first truthy value, polled every 20 ms; AssertionError after ``timeout`` s."""
    for _ in _polls(timeout, what):
        if value := check():
            return value
        await asyncio.sleep(POLL_S)
    raise AssertionError("unreachable")


def wait_for_sync(check: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """:func:`wait_for` for a test without an event loop (one driving subprocesses)."""
    for _ in _polls(timeout, what):
        if value := check():
            return value
        time.sleep(POLL_S)
    raise AssertionError("unreachable")
