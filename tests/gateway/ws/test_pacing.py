"""TurnPacer: a burst of requests starts at most ``per_turn`` per loop turn, in arrival order,
and timers (pings, health) get the loop between the batches."""

from __future__ import annotations

import asyncio

from homarus.gateway.ws.pacing import TurnPacer


async def test_a_burst_starts_per_turn_in_arrival_order_and_timers_run_between() -> None:
    pacer = TurnPacer(per_turn=10)
    loop = asyncio.get_running_loop()
    turn = 0
    ticking = True

    def tick() -> None:  # counts loop turns
        nonlocal turn
        turn += 1
        if ticking:
            loop.call_soon(tick)

    loop.call_soon(tick)
    started: list[tuple[int, int]] = []
    timer_fired_at: list[int] = []

    async def handler(i: int) -> None:
        await pacer.turn()
        started.append((i, turn))

    loop.call_later(0, lambda: timer_fired_at.append(len(started)))
    await asyncio.gather(*(handler(i) for i in range(95)))
    ticking = False
    assert [i for i, _ in started] == list(range(95))  # FIFO
    per_turn: dict[int, int] = {}
    for _, t in started:
        per_turn[t] = per_turn.get(t, 0) + 1
    assert max(per_turn.values()) <= 10 and len(per_turn) >= 10
    assert timer_fired_at and timer_fired_at[0] < 95  # the timer did not wait for the whole burst
    assert pacer.waiting == 0


async def test_a_cancelled_waiter_leaves_the_queue_and_the_rest_go_on() -> None:
    pacer = TurnPacer(per_turn=1)
    order: list[int] = []

    async def handler(i: int) -> None:
        await pacer.turn()
        order.append(i)

    tasks = [asyncio.create_task(handler(i)) for i in range(5)]
    await asyncio.sleep(0)
    tasks[2].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert order == [0, 1, 3, 4]
    assert pacer.waiting == 0


async def test_a_quiet_gateway_starts_requests_at_once() -> None:
    pacer = TurnPacer(per_turn=3)
    for _ in range(3):
        await asyncio.wait_for(pacer.turn(), 0.1)
    await asyncio.sleep(0)  # a new turn: a new budget
    await asyncio.wait_for(pacer.turn(), 0.1)
