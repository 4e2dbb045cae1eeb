"""The runs' file-work lane: one thread, FIFO, the caller's context, errors to the caller."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from homarus.io_lane import run_on_lane

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("WHO", default="nobody")


async def test_trips_run_one_at_a_time_in_order_on_one_thread() -> None:
    seen: list[int] = []
    threads: set[int] = set()
    busy = threading.Lock()

    def trip(i: int) -> int:
        assert busy.acquire(blocking=False), "two trips at once"
        try:
            threads.add(threading.get_ident())
            seen.append(i)
            return i * 2
        finally:
            busy.release()

    results = await asyncio.gather(*(run_on_lane(trip, i) for i in range(50)))
    assert results == [i * 2 for i in range(50)]
    assert seen == list(range(50))
    assert len(threads) == 1 and threading.get_ident() not in threads


async def test_a_trip_sees_its_callers_context_and_raises_to_it() -> None:
    WHO.set("caller")

    def who() -> str:
        return WHO.get()

    def fails() -> None:
        raise ValueError("disk says no")

    assert await run_on_lane(who) == "caller"
    with pytest.raises(ValueError, match="disk says no"):
        await run_on_lane(fails)
    assert await run_on_lane(who) == "caller"  # the lane survives a failed trip
