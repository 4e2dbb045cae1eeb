"""What a fake platform's WebSocket server shares: the one connection it talks to now, frames sent
to it from the fake's own loop (tests call in from other threads), and a cut without a close
frame, as a network failure looks."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["LiveSocket"]


class LiveSocket:
    def __init__(self) -> None:
        #: the connection frames go to (None: nobody is connected)
        self._current: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Future[None]] = set()

    def drop(self) -> None:
        """Cut the live connection without a close frame (a network failure)."""
        self._call(self._abort)

    def _call(self, fn: Any, *args: Any) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(fn, *args)

    def _send_frame(self, frame: str) -> None:
        """Send ``frame`` on the live connection (on the fake's loop; dropped when there is none)."""
        if self._current is None:
            return
        self._tasks.add(task := asyncio.ensure_future(self._send(self._current, frame)))
        task.add_done_callback(self._tasks.discard)

    async def _send(self, ws: Any, frame: str) -> None:
        with contextlib.suppress(Exception):
            await ws.send(frame)

    def _abort(self) -> None:
        if self._current is not None:
            self._current.transport.abort()
