"""FIFO lanes with per-lane concurrency.

A lane admits at most ``concurrency`` tasks at once and starts waiting ones in arrival order.
Agent runs are double-enqueued by their callers: first the session's lane (one run per session
at a time), then a global lane (``main``, ``subagent``, ``cron``, ``nested``) that caps
parallelism. Waiting longer than ``warn_after_s`` is logged. ``clear`` rejects what is pending in
a lane; ``drain`` makes every new enqueue fail while running work finishes. A lane that is not
configured (a session's) exists only while something runs or waits in it: memory does not grow with
the number of sessions ever seen.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from homarus.errors import Unavailable

__all__ = ["DEFAULT_LANES", "GATED_PREFIX", "LaneCleared", "LaneGate", "LaneQueue", "LaneStats", "QueueDraining"]

log = logging.getLogger("homarus.queue")
T = TypeVar("T")

DEFAULT_LANES: Mapping[str, int] = {"main": 4, "subagent": 8, "cron": 1, "nested": 1}


class LaneCleared(Unavailable):
    """The task was still waiting when its lane was cleared."""


class QueueDraining(Unavailable):
    """The queue is shutting down and accepts no new work."""


@dataclass(slots=True)
class _Lane:
    concurrency: int
    active: int = 0
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)
    completed: int = 0


@dataclass(frozen=True, slots=True)
class LaneStats:
    lane: str
    concurrency: int
    active: int
    waiting: int
    completed: int


class LaneGate(Protocol):
    """What a session lane's head also holds while it runs (``storage/leases.py``: the session's
    lease, so that one session's runs execute on one gateway of a cluster at a time)."""

    async def enter(self, lane: str) -> None: ...
    async def leave(self, lane: str) -> None: ...


#: the lanes a gate guards: one per session (the shared lanes are per gateway)
GATED_PREFIX = "session:"


class LaneQueue:
    #: set by a gateway of a cluster (None: one gateway, nothing to hold beyond the lane)
    gate: LaneGate | None = None

    def __init__(
        self, concurrency: Mapping[str, int] | None = None, *, default: int = 1, warn_after_s: float = 2.0
    ) -> None:
        self._config = dict(DEFAULT_LANES if concurrency is None else concurrency)
        self._default = default
        self.warn_after_s = warn_after_s
        self._lanes: dict[str, _Lane] = {}
        self._draining = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._running = 0

    def _lane(self, name: str) -> _Lane:
        lane = self._lanes.get(name)
        if lane is None:
            lane = self._lanes[name] = _Lane(max(1, self._config.get(name, self._default)))
        return lane

    def set_concurrency(self, name: str, concurrency: int) -> None:
        self._config[name] = concurrency
        lane = self._lane(name)
        lane.concurrency = max(1, concurrency)
        self._wake(lane)

    async def run(self, lane_name: str, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` when ``lane_name`` has a free slot; FIFO among waiters."""
        if self._draining:
            raise QueueDraining("gateway is draining; not accepting new work", retryable=True)
        lane = self._lane(lane_name)
        if lane.active >= lane.concurrency or lane.waiting:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            lane.waiting.append(waiter)
            started = time.monotonic()
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in lane.waiting:
                    lane.waiting.remove(waiter)
                elif waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                    lane.active -= 1  # we were granted the slot but will not use it
                    self._wake(lane)
                self._forget_if_idle(lane_name, lane)
                raise
            waited = time.monotonic() - started
            if waited > self.warn_after_s:
                log.warning("lane %s: task waited %.1fs for a slot", lane_name, waited)
        else:
            lane.active += 1
        self._running += 1
        self._idle.clear()
        try:
            gate = self.gate if lane_name.startswith(GATED_PREFIX) else None
            if gate is None:
                return await fn()
            await gate.enter(lane_name)
            try:
                return await fn()
            finally:
                await asyncio.shield(gate.leave(lane_name))
        finally:
            lane.active -= 1
            lane.completed += 1
            self._running -= 1
            self._wake(lane)
            self._forget_if_idle(lane_name, lane)
            if self._running == 0:
                self._idle.set()

    def ahead(self, *lane_names: str) -> int:
        """How many tasks must make room before one enqueued now in each of ``lane_names`` (in
        that order) starts: per lane, those beyond its free slots (0 when a slot is free)."""
        total = 0
        for name in lane_names:
            lane = self._lanes.get(name)
            if lane is not None:
                total += max(0, lane.active + len(lane.waiting) - lane.concurrency + 1)
        return total

    def _wake(self, lane: _Lane) -> None:
        while lane.waiting and lane.active < lane.concurrency:
            waiter = lane.waiting.popleft()
            if waiter.done():
                continue
            lane.active += 1  # the slot is handed over, so no newcomer can barge in
            waiter.set_result(None)

    def clear(self, lane_name: str) -> int:
        """Reject every task still waiting in ``lane_name``; returns how many."""
        lane = self._lanes.get(lane_name)
        if lane is None:
            return 0
        rejected = 0
        while lane.waiting:
            waiter = lane.waiting.popleft()
            if not waiter.done():
                waiter.set_exception(LaneCleared(f"lane {lane_name} was cleared"))
                rejected += 1
        self._forget_if_idle(lane_name, lane)
        return rejected

    def drain(self) -> None:
        """Refuse new work from now on; running and already-waiting tasks go on."""
        self._draining = True

    @property
    def draining(self) -> bool:
        return self._draining

    async def wait_idle(self, timeout: float | None = None) -> bool:
        try:
            async with asyncio.timeout(timeout):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    def waiting(self, name: str) -> int:
        """How many tasks wait for a slot in lane ``name`` (0 for a lane never used)."""
        lane = self._lanes.get(name)
        return len(lane.waiting) if lane is not None else 0

    def stats(self) -> list[LaneStats]:
        return [
            LaneStats(name, lane.concurrency, lane.active, len(lane.waiting), lane.completed)
            for name, lane in sorted(self._lanes.items())
        ]

    def _forget_if_idle(self, name: str, lane: _Lane) -> None:
        """Drop a lane that is not configured once nothing runs or waits in it (made again on demand)."""
        if lane.active == 0 and not lane.waiting and name not in self._config and self._lanes.get(name) is lane:
            del self._lanes[name]

    def kept(self) -> int:
        """How many lanes are kept now (the configured ones used so far, and the busy others)."""
        return len(self._lanes)
