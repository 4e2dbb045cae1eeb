"""cancel_and_wait: every task ends before it returns; a task's own failure while stopping is
swallowed; the caller's own cancellation is not."""

from __future__ import annotations

import asyncio

import pytest

from homarus.tasks import cancel_and_wait


async def test_tasks_end_and_their_failures_are_swallowed() -> None:
    ended: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            ended.append(name)

    async def fails() -> None:
        raise RuntimeError("already broken")

    broken = asyncio.create_task(fails())
    await asyncio.sleep(0)
    a, b = asyncio.create_task(forever("a")), asyncio.create_task(forever("b"))
    await asyncio.sleep(0)
    await cancel_and_wait(a, None, b, broken)
    assert sorted(ended) == ["a", "b"] and a.cancelled() and b.cancelled()


async def test_the_callers_own_cancellation_propagates() -> None:
    async def stubborn() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)  # takes its time to stop
            raise

    inner = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    stopper = asyncio.create_task(cancel_and_wait(inner))
    await asyncio.sleep(0.05)
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper
