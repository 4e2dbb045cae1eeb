"""The outbox sender: every recorded piece goes out once, in order per conversation, or ends dead.

One loop wakes when pieces are added or a retry comes due. Each conversation has at most one piece
in flight (its oldest unfinished one), conversations go in parallel up to ``max_parallel``.

* a transient failure (network, 5xx, the account not running) waits 2 s, doubling to 5 min, and
  the piece is dead after ``max_attempts`` tries;
* ``429``: waits exactly the platform's ``retry_after`` (plus a little), without using up an
  attempt — flood control is the platform asking for patience, not a failure;
* a permanent refusal (blocked by the user, chat gone, file too large) is dead at once.

Dead pieces stay in the outbox for ``channels.status`` and the CLI, and can be replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from homarus.channels.adapter import SendFailed
from homarus.tasks import cancel_and_wait

if TYPE_CHECKING:
    from homarus.channels.adapter import ChannelAccount
    from homarus.channels.model import SendReceipt
    from homarus.channels.outbox import Outbox, OutboxRow

__all__ = ["Delivery"]

log = logging.getLogger("homarus.channels")

MAX_ATTEMPTS: Final = 8
BASE_DELAY_S: Final = 2.0
MAX_DELAY_S: Final = 300.0
#: 429 answers honoured before the piece counts as dead anyway (a platform that never relents)
MAX_FLOOD_WAITS: Final = 50


def _now_ms() -> int:
    return int(time.time() * 1000)


class Delivery:
    def __init__(
        self,
        outbox: Outbox,
        account_for: Callable[[OutboxRow], ChannelAccount | None],
        *,
        on_sent: Callable[[OutboxRow, SendReceipt], Awaitable[None]] | None = None,
        on_dead: Callable[[OutboxRow, str], Awaitable[None]] | None = None,
        max_parallel: int = 16,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        self.outbox = outbox
        self.account_for = account_for
        self.on_sent = on_sent
        self.on_dead = on_dead
        self.max_parallel = max_parallel
        self.max_attempts = max_attempts
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._inflight: dict[str, asyncio.Task[None]] = {}
        self._flood_waits: dict[int, int] = {}
        self.sent = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="channel-delivery")

    @property
    def running(self) -> bool:
        return self._task is not None

    def poke(self) -> None:
        """Pieces were added or an account came back: look again now."""
        self._wake.set()

    async def stop(self, grace_s: float = 5.0) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        if self._inflight:  # let sends already on the wire finish, so their outcome is recorded
            await asyncio.wait(list(self._inflight.values()), timeout=grace_s)
            for task in self._inflight.values():
                task.cancel()

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Wait until nothing is pending or in flight (tests, benchmarks)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            counts = await asyncio.to_thread(self.outbox.counts)
            if not counts.get("pending") and not counts.get("sending") and not self._inflight:
                return
            self.poke()
            await asyncio.sleep(0.02)

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                rows = await asyncio.to_thread(self.outbox.due, None, self.max_parallel * 2)
            except Exception:
                log.exception("channels: reading the outbox failed")
                rows = []
            for row in rows:
                if row.conversation in self._inflight or len(self._inflight) >= self.max_parallel:
                    continue
                task = asyncio.create_task(self._deliver(row), name=f"channel-send:{row.id}")
                self._inflight[row.conversation] = task
                task.add_done_callback(self._done_callback(row.conversation))
            await self._sleep_until_due()

    def _done_callback(self, conversation: str) -> Callable[[asyncio.Task[None]], None]:
        def done(_task: asyncio.Task[None]) -> None:
            self._inflight.pop(conversation, None)
            self._wake.set()

        return done

    async def _sleep_until_due(self) -> None:
        try:
            nxt = await asyncio.to_thread(self.outbox.next_due_at)
        except Exception as exc:  # the store away (a cluster's database): look again in a second
            log.warning("channels: reading the outbox failed: %s", exc)
            nxt = _now_ms() + 1000
        delay = 30.0 if nxt is None else max(0.0, (nxt - _now_ms()) / 1000)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(delay, 30.0) if delay > 0 else 0.05):
                await self._wake.wait()

    async def _deliver(self, row: OutboxRow) -> None:
        account = self.account_for(row)
        if account is None:
            await self._retry(row, "the channel account is not running", count=True)
            return
        if not await asyncio.to_thread(self.outbox.mark_sending, row.id):
            return  # someone else took it (a replay, a concurrent loop)

        async def transmitted() -> None:
            # committed on the loop's own thread, without yielding: the adapter writes its last
            # byte right after this returns, and every other task waiting meanwhile would widen
            # the gap between the record and the write
            self.outbox.mark_transmitted(row.id)

        try:
            receipt = await account.send(row.message, transmitted)
        except SendFailed as exc:
            if exc.permanent:
                await self._dead(row, exc.message)
            elif exc.retry_after is not None:
                await self._flood(row, exc)
            else:
                await self._retry(row, exc.message, count=False)
            return
        except Exception as exc:  # an adapter bug: keep the piece, try again later
            log.exception("channels: sending piece %s failed", row.id)
            await self._retry(row, f"{type(exc).__name__}", count=False)
            return
        await asyncio.to_thread(
            self.outbox.mark_sent, row.id, receipt.message_id, "plain text" if receipt.plain_fallback else None
        )
        self._flood_waits.pop(row.id, None)
        self.sent += 1
        if self.on_sent is not None:
            try:
                await self.on_sent(row, receipt)
            except Exception:
                log.exception("channels: after-send handler failed for piece %s", row.id)

    async def _retry(self, row: OutboxRow, error: str, *, count: bool) -> None:
        # ``row`` was read before this try: this try is attempt ``row.attempts + 1`` whether it was
        # recorded by mark_sending or (``count``: the account was down) is recorded now
        attempts = row.attempts + 1
        if attempts >= self.max_attempts:
            await self._dead(row, f"gave up after {attempts} attempts: {error}")
            return
        delay = min(MAX_DELAY_S, BASE_DELAY_S * (2 ** max(0, attempts - 1)))
        await asyncio.to_thread(self.outbox.retry, row.id, error, _now_ms() + int(delay * 1000), count_attempt=count)
        log.warning("channels: piece %s to %s failed (%s); retry in %.0fs", row.id, row.conversation, error, delay)

    async def _flood(self, row: OutboxRow, exc: SendFailed) -> None:
        waits = self._flood_waits.get(row.id, 0) + 1
        self._flood_waits[row.id] = waits
        if waits > MAX_FLOOD_WAITS:
            await self._dead(row, f"flood control never relented: {exc.message}")
            return
        wait = float(exc.retry_after or 1.0) + 0.25
        await asyncio.to_thread(self.outbox.wait_flood, row.id, exc.message, _now_ms() + int(wait * 1000))
        log.warning("channels: flood control on %s: waiting %.1fs", row.conversation, wait)

    async def _dead(self, row: OutboxRow, error: str) -> None:
        await asyncio.to_thread(self.outbox.dead, row.id, error)
        self._flood_waits.pop(row.id, None)
        log.error("channels: piece %s to %s is dead: %s", row.id, row.conversation, error)
        if self.on_dead is not None:
            try:
                await self.on_dead(row, error)
            except Exception:
                log.exception("channels: dead-letter handler failed for piece %s", row.id)
