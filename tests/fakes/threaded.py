"""Runs a fake platform's servers on their own event loop in a background thread, so sync and
async tests, and gateways in other processes, all reach them."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

__all__ = ["in_thread"]


@contextlib.contextmanager
def in_thread(name: str, serve: Callable[[asyncio.Event, Callable[[], None]], Awaitable[None]]) -> Iterator[None]:
    """Run ``serve(stop, ready)`` in a thread of its own until the block ends: it calls ``ready()``
    once it listens, and returns after ``stop`` is set."""
    started = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        stop = asyncio.Event()
        state["loop"], state["stop"] = asyncio.get_running_loop(), stop
        await serve(stop, started.set)

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:
            state["error"] = exc
            started.set()

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    if not started.wait(10) or "error" in state:
        raise RuntimeError(f"{name} did not start: {state.get('error')!r}")
    try:
        yield
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(10)
