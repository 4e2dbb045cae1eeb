"""Per-connection outbound queue with byte accounting (the slow-consumer guard).

Everything a connection sends goes through its outbox, in order. When a client stops reading,
uvicorn's ``send`` blocks on backpressure and frames pile up here; past ``max_bytes`` a
droppable frame (a streaming delta) is dropped, anything else closes the socket with 1008
``slow consumer``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from homarus.protocol.limits import CloseCode, truncate_reason

__all__ = ["Outbox"]

Send = Callable[[dict[str, Any]], Awaitable[None]]


class Outbox:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self.dropped = 0
        self.close_code: int | None = None
        self.close_reason = ""
        self._queue: deque[tuple[str, int]] = deque()
        self._wake = asyncio.Event()

    @property
    def closing(self) -> bool:
        return self.close_code is not None

    def push(self, text: str, *, droppable: bool = False) -> bool:
        """Queue one frame; False when it was dropped or the connection is closing."""
        if self.close_code is not None:
            return False
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        # A lone frame bigger than the budget still goes out when nothing is queued: the budget
        # measures a client falling behind, not the size of one answer.
        if self.queued_bytes and self.queued_bytes + size > self.max_bytes:
            if droppable:
                self.dropped += 1
                return False
            self.close(CloseCode.POLICY_VIOLATION, "slow consumer", discard=True)
            return False
        self._queue.append((text, size))
        self.queued_bytes += size
        self._wake.set()
        return True

    def close(self, code: int, reason: str = "", *, discard: bool = False) -> None:
        """Close after what is queued has been sent (or at once, dropping it, with ``discard``)."""
        if self.close_code is not None:
            return
        if discard:
            self._queue.clear()
            self.queued_bytes = 0
        self.close_code = code
        self.close_reason = truncate_reason(reason)
        self._wake.set()

    async def run(self, send: Send) -> None:
        """Writer loop: drain the queue into ``send`` until closed."""
        while True:
            while self._queue:
                text, size = self._queue.popleft()
                self.queued_bytes -= size
                await send({"type": "websocket.send", "text": text})
            if self.close_code is not None:
                await send({"type": "websocket.close", "code": self.close_code, "reason": self.close_reason})
                return
            self._wake.clear()
            await self._wake.wait()
