"""Tests for LaneQueue: per-lane concurrency, FIFO, double-enqueue, clear, drain, cancellation."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from homarus.errors import Unavailable
from homarus.queue.lanes import DEFAULT_LANES, LaneCleared, LaneQueue, LaneStats, QueueDraining


class Probe:
    """Records how many tasks run at once and in which order they start."""

    def __init__(self) -> None:
        self.active = 0
        self.max_active = 0
        self.started: list[int] = []

    def task(self, i: int, hold: float = 0.01) -> Callable[[], Awaitable[int]]:
        async def run() -> int:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.started.append(i)
            try:
                await asyncio.sleep(hold)
            finally:
                self.active -= 1
            return i

        return run


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _stats(q: LaneQueue, lane: str) -> LaneStats:
    return next(s for s in q.stats() if s.lane == lane)


@pytest.mark.parametrize("concurrency", [1, 2, 3])
async def test_concurrency_is_respected(concurrency: int) -> None:
    q = LaneQueue({"work": concurrency})
    probe = Probe()
    results = await asyncio.gather(*(q.run("work", probe.task(i)) for i in range(10)))
    assert results == list(range(10))
    assert probe.max_active == concurrency
    assert _stats(q, "work") == LaneStats("work", concurrency, 0, 0, 10)


async def test_fifo_start_order() -> None:
    q = LaneQueue({"work": 2})
    probe = Probe()
    tasks = []
    for i in range(12):
        tasks.append(asyncio.create_task(q.run("work", probe.task(i, hold=0.005 * (i % 3)))))
        await asyncio.sleep(0)  # enqueue in a known order
    await asyncio.gather(*tasks)
    assert probe.started == list(range(12))


async def test_unconfigured_lane_uses_default_concurrency() -> None:
    q = LaneQueue({}, default=1)
    probe = Probe()
    await asyncio.gather(*(q.run("session:agent:main:x", probe.task(i)) for i in range(4)))
    assert probe.max_active == 1
    assert probe.started == [0, 1, 2, 3]


async def test_zero_concurrency_is_treated_as_one() -> None:
    q = LaneQueue({"work": 0})
    probe = Probe()
    await asyncio.gather(*(q.run("work", probe.task(i)) for i in range(3)))
    assert probe.max_active == 1


def test_default_lanes() -> None:
    assert dict(DEFAULT_LANES) == {"main": 4, "subagent": 8, "cron": 1, "nested": 1}


async def test_lanes_are_independent() -> None:
    q = LaneQueue({"a": 1, "b": 1})
    gate = asyncio.Event()

    async def block() -> None:
        await gate.wait()

    async def quick() -> str:
        return "b done"

    blocker = asyncio.create_task(q.run("a", block))
    await _settle()
    assert await asyncio.wait_for(q.run("b", quick), 1) == "b done"
    gate.set()
    await blocker


async def test_result_and_exception_propagate_and_free_the_slot() -> None:
    q = LaneQueue({"work": 1})

    async def fail() -> None:
        raise ValueError("bad run")

    with pytest.raises(ValueError, match="bad run"):
        await q.run("work", fail)

    async def ok() -> int:
        return 7

    assert await asyncio.wait_for(q.run("work", ok), 1) == 7
    assert _stats(q, "work") == LaneStats("work", 1, 0, 0, 2)


# -- double enqueue -----------------------------------------------------------------------------


async def test_double_enqueue_one_run_per_session_and_global_cap() -> None:
    q = LaneQueue({"main": 2})
    per_session: dict[str, int] = {}
    per_session_max: dict[str, int] = {}
    global_active = 0
    global_max = 0
    order: dict[str, list[int]] = {}

    def run_for(session: str, i: int) -> Callable[[], Awaitable[tuple[str, int]]]:
        async def fn() -> tuple[str, int]:
            nonlocal global_active, global_max
            per_session[session] = per_session.get(session, 0) + 1
            per_session_max[session] = max(per_session_max.get(session, 0), per_session[session])
            global_active += 1
            global_max = max(global_max, global_active)
            order.setdefault(session, []).append(i)
            await asyncio.sleep(0.01)
            global_active -= 1
            per_session[session] -= 1
            return session, i

        return fn

    async def agent_run(session: str, i: int) -> tuple[str, int]:
        fn = run_for(session, i)
        return await q.run(f"session:{session}", lambda: q.run("main", fn))

    jobs = [agent_run(s, i) for i in range(4) for s in ("s1", "s2", "s3", "s4")]
    results = await asyncio.gather(*jobs)
    assert sorted(results) == sorted((s, i) for i in range(4) for s in ("s1", "s2", "s3", "s4"))
    assert per_session_max == {"s1": 1, "s2": 1, "s3": 1, "s4": 1}
    assert global_max == 2
    assert order == {s: [0, 1, 2, 3] for s in ("s1", "s2", "s3", "s4")}
    assert _stats(q, "main").completed == 16


# -- clear --------------------------------------------------------------------------------------


async def test_clear_rejects_waiting_and_running_one_finishes() -> None:
    q = LaneQueue({"work": 1})
    gate = asyncio.Event()

    async def running() -> str:
        await gate.wait()
        return "finished"

    async def never() -> str:
        raise AssertionError("a cleared task must not run")

    first = asyncio.create_task(q.run("work", running))
    await _settle()
    waiting = [asyncio.create_task(q.run("work", never)) for _ in range(3)]
    await _settle()
    assert _stats(q, "work") == LaneStats("work", 1, 1, 3, 0)

    assert q.clear("work") == 3
    for task in waiting:
        with pytest.raises(LaneCleared, match="lane work was cleared") as info:
            await task
        assert isinstance(info.value, Unavailable)
    assert not first.done()
    assert _stats(q, "work") == LaneStats("work", 1, 1, 0, 0)
    gate.set()
    assert await first == "finished"
    assert _stats(q, "work") == LaneStats("work", 1, 0, 0, 1)
    assert q.clear("work") == 0


def test_clear_unknown_lane_returns_zero() -> None:
    assert LaneQueue().clear("nope") == 0


async def test_lane_usable_after_clear() -> None:
    q = LaneQueue({"work": 1})
    gate = asyncio.Event()

    async def hold() -> None:
        await gate.wait()

    async def ok() -> str:
        return "ok"

    first = asyncio.create_task(q.run("work", hold))
    await _settle()
    cleared = asyncio.create_task(q.run("work", ok))
    await _settle()
    assert q.clear("work") == 1
    later = asyncio.create_task(q.run("work", ok))
    await _settle()
    gate.set()
    await first
    assert await asyncio.wait_for(later, 1) == "ok"
    with pytest.raises(LaneCleared):
        await cleared


# -- drain --------------------------------------------------------------------------------------


async def test_drain_refuses_new_work_while_running_and_waiting_finish() -> None:
    q = LaneQueue({"work": 1})
    gate = asyncio.Event()

    async def hold() -> str:
        await gate.wait()
        return "held"

    async def after() -> str:
        return "waited"

    running = asyncio.create_task(q.run("work", hold))
    await _settle()
    waiting = asyncio.create_task(q.run("work", after))
    await _settle()
    states = [q.draining]
    q.drain()
    states.append(q.draining)
    assert states == [False, True]

    async def new() -> None:
        raise AssertionError("must not run")

    with pytest.raises(QueueDraining, match="draining") as info:
        await q.run("work", new)
    assert info.value.retryable is True
    with pytest.raises(QueueDraining):
        await q.run("other-lane", new)
    gate.set()
    assert await running == "held"
    assert await waiting == "waited"
    assert await q.wait_idle(1) is True


async def test_wait_idle_times_out_while_busy() -> None:
    q = LaneQueue({"work": 1})
    gate = asyncio.Event()

    async def hold() -> None:
        await gate.wait()

    assert await q.wait_idle(0.01) is True
    task = asyncio.create_task(q.run("work", hold))
    await _settle()
    assert await q.wait_idle(0.02) is False
    gate.set()
    await task
    assert await q.wait_idle(0.5) is True


# -- cancellation -------------------------------------------------------------------------------


async def test_cancel_waiting_task_does_not_leak_a_slot() -> None:
    q = LaneQueue({"work": 1})
    gate = asyncio.Event()

    async def hold() -> None:
        await gate.wait()

    async def never() -> None:
        raise AssertionError("cancelled task must not run")

    async def ok() -> str:
        return "ok"

    first = asyncio.create_task(q.run("work", hold))
    await _settle()
    victim = asyncio.create_task(q.run("work", never))
    await _settle()
    assert _stats(q, "work").waiting == 1
    victim.cancel()
    with pytest.raises(asyncio.CancelledError):
        await victim
    assert _stats(q, "work") == LaneStats("work", 1, 1, 0, 0)
    gate.set()
    await first
    assert _stats(q, "work") == LaneStats("work", 1, 0, 0, 1)
    assert await asyncio.wait_for(q.run("work", ok), 1) == "ok"
    assert _stats(q, "work") == LaneStats("work", 1, 0, 0, 2)


async def _handover_setup(
    q: LaneQueue, ran: list[str], names: list[str]
) -> tuple[list[asyncio.Task[None]], asyncio.Future[None]]:
    """``names[0]`` holds the only slot until the returned future is resolved; the others wait."""
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def fn_for(name: str) -> Callable[[], Awaitable[None]]:
        async def fn() -> None:
            if name == names[0]:
                await release
            ran.append(name)

        return fn

    tasks = []
    for name in names:
        tasks.append(asyncio.create_task(q.run("work", fn_for(name))))
        await _settle()
    return tasks, release


async def test_cancel_right_after_handover_does_not_leak_a_slot() -> None:
    q = LaneQueue({"work": 1})
    ran: list[str] = []
    (first, victim), release = await _handover_setup(q, ran, ["first", "victim"])
    assert _stats(q, "work") == LaneStats("work", 1, 1, 1, 0)
    release.set_result(None)
    await asyncio.sleep(0)  # first finishes and hands the slot to victim, which has not resumed yet
    assert first.done()
    assert _stats(q, "work") == LaneStats("work", 1, 1, 0, 1)  # the slot now belongs to victim
    victim.cancel()  # ... which is cancelled before it could use it
    with pytest.raises(asyncio.CancelledError):
        await victim
    assert ran == ["first"]
    assert _stats(q, "work") == LaneStats("work", 1, 0, 0, 1)

    async def third() -> str:
        return "third"

    assert await asyncio.wait_for(q.run("work", third), 1) == "third"
    assert _stats(q, "work") == LaneStats("work", 1, 0, 0, 2)


async def test_cancel_after_handover_passes_slot_to_next_waiter() -> None:
    q = LaneQueue({"work": 1})
    ran: list[str] = []
    (first, victim, third), release = await _handover_setup(q, ran, ["first", "victim", "third"])
    release.set_result(None)
    await asyncio.sleep(0)
    assert first.done()
    victim.cancel()
    await asyncio.wait_for(third, 1)
    assert victim.cancelled()
    assert ran == ["first", "third"]
    assert _stats(q, "work") == LaneStats("work", 1, 0, 0, 2)


async def test_cancel_running_task_frees_its_slot() -> None:
    q = LaneQueue({"work": 1})

    async def forever() -> None:
        await asyncio.Event().wait()

    async def ok() -> str:
        return "ok"

    task = asyncio.create_task(q.run("work", forever))
    await _settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.wait_for(q.run("work", ok), 1) == "ok"
    assert _stats(q, "work") == LaneStats("work", 1, 0, 0, 2)


# -- warnings and stats -------------------------------------------------------------------------


async def test_long_wait_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    q = LaneQueue({"work": 1}, warn_after_s=0.01)

    async def slow() -> None:
        await asyncio.sleep(0.05)

    async def quick() -> None:
        return None

    with caplog.at_level(logging.WARNING, logger="homarus.queue"):
        await asyncio.gather(q.run("work", slow), q.run("work", quick))
    records = [r for r in caplog.records if r.name == "homarus.queue"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert records[0].getMessage().startswith("lane work: task waited ")
    assert records[0].getMessage().endswith("s for a slot")


async def test_short_wait_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    q = LaneQueue({"work": 1}, warn_after_s=5)

    async def quick() -> None:
        await asyncio.sleep(0.001)

    with caplog.at_level(logging.WARNING, logger="homarus.queue"):
        await asyncio.gather(*(q.run("work", quick) for _ in range(3)))
    assert [r for r in caplog.records if r.name == "homarus.queue"] == []


async def test_stats_and_set_concurrency() -> None:
    q = LaneQueue({"b": 2, "a": 1})
    assert q.stats() == []
    gate = asyncio.Event()

    async def hold() -> None:
        await gate.wait()

    tasks = [asyncio.create_task(q.run("a", hold)) for _ in range(3)]
    await _settle()
    assert q.stats() == [LaneStats("a", 1, 1, 2, 0)]
    q.set_concurrency("a", 3)  # waiting tasks start at once
    await _settle()
    assert q.stats() == [LaneStats("a", 3, 3, 0, 0)]
    gate.set()
    await asyncio.gather(*tasks)
    q.set_concurrency("b", 5)
    assert q.stats() == [LaneStats("a", 3, 0, 0, 3), LaneStats("b", 5, 0, 0, 0)]


async def test_a_lane_that_is_not_configured_is_kept_only_while_busy() -> None:
    q = LaneQueue({"main": 1})
    gate = asyncio.Event()

    async def hold() -> None:
        await gate.wait()

    async def quick() -> None:
        return None

    await q.run("main", quick)
    await q.run("session:a", quick)
    busy = asyncio.create_task(q.run("session:b", hold))
    waiting = asyncio.create_task(q.run("session:b", quick))
    await _settle()
    assert [s.lane for s in q.stats()] == ["main", "session:b"] and q.waiting("session:b") == 1
    gate.set()
    await asyncio.gather(busy, waiting)
    assert [s.lane for s in q.stats()] == ["main"]
    cleared = asyncio.create_task(q.run("session:c", hold))
    gate.clear()
    blocked = asyncio.create_task(q.run("session:c", quick))
    await _settle()
    assert q.clear("session:c") == 1
    with pytest.raises(LaneCleared):
        await blocked
    gate.set()
    await cleared
    assert q.kept() == 1


async def test_memory_does_not_grow_with_the_sessions_ever_seen() -> None:
    """100,000 distinct sessions, each through its own lane and the shared one: the lanes kept
    stay the configured ones (before: one per session ever seen)."""
    q = LaneQueue({"main": 4})

    async def quick() -> None:
        return None

    for batch in range(100):
        await asyncio.gather(
            *(q.run(f"session:agent:main:s{batch}-{i}", lambda: q.run("main", quick)) for i in range(1000))
        )
        assert q.kept() <= 1 + 1000
    assert q.kept() == 1 and q.stats()[0].completed == 100_000


async def test_ahead_counts_what_must_make_room_in_each_lane() -> None:
    q = LaneQueue({"main": 2})
    release = asyncio.Event()

    async def hold() -> None:
        await release.wait()

    def run(session: str) -> asyncio.Task[None]:
        return asyncio.ensure_future(q.run(f"session:{session}", lambda: q.run("main", hold)))

    assert q.ahead("session:a", "main") == 0  # nothing yet: it would start at once
    tasks = [run("a")]
    await _settle()
    assert q.ahead("session:b", "main") == 0  # another session, and main has a free slot
    assert q.ahead("session:a", "main") == 1  # behind a's running one
    tasks.append(run("b"))
    await _settle()
    assert q.ahead("session:c", "main") == 1  # main is full: one of the two must finish
    tasks.append(run("c"))  # waits in main
    await _settle()
    assert q.ahead("session:d", "main") == 2  # the one waiting there first, then a slot
    assert q.ahead("session:a", "main") == 3  # and a's own run before that
    release.set()
    await asyncio.gather(*tasks)
    assert q.ahead("session:a", "main") == 0
