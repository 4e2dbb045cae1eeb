"""The event loop's health in the original's ``eventLoop`` shape: a call that holds the loop shows
up as delay (p99 and max) in ``health`` and ``status``; a second or more marks it degraded with
the reason and since when; under no load it is not degraded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from homarus.gateway.services.loop_health import LoopHealth, _reasons
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import open_client

KEYS = {"degraded", "degradedSinceMs", "reasons", "intervalMs", "delayP99Ms", "delayMaxMs", "utilization",
        "cpuCoreRatio", "cpuBreakdown"}  # fmt: skip


async def test_a_held_loop_is_seen_and_a_long_hold_degrades() -> None:
    monitor = LoopHealth()
    monitor.start()
    try:
        await asyncio.sleep(0.3)
        calm = monitor.snapshot()
        assert set(calm) == KEYS and not calm["degraded"] and calm["delayMaxMs"] < 200
        time.sleep(0.3)
        await asyncio.sleep(0.2)
        held = monitor.snapshot()
        assert 250 <= held["delayMaxMs"] < 1000 and not held["degraded"], held
        time.sleep(1.1)
        await asyncio.sleep(0.2)
        stalled = monitor.snapshot()
        assert stalled["degraded"] and stalled["reasons"] == ["event_loop_delay"], stalled
        assert isinstance(stalled["degradedSinceMs"], int)
    finally:
        await monitor.stop()


async def test_the_cpu_figures_are_there_from_the_first_snapshot() -> None:
    """The original's clients read ``cpuBreakdown``'s ratios from the first ``health`` on; they
    were missing until a second CPU sample, a second after start."""
    monitor = LoopHealth()
    monitor.start()
    try:
        await asyncio.sleep(0.06)
        breakdown = monitor.snapshot()["cpuBreakdown"]
        assert {"mainThreadCoreRatio", "workerCoreRatio", "otherThreadsCoreRatio"} <= set(breakdown), breakdown
    finally:
        await monitor.stop()


def test_load_reasons_need_a_sustained_window_and_some_delay() -> None:
    busy = {"intervalMs": 5000.0, "delayP99Ms": 40.0, "delayMaxMs": 60.0, "utilization": 0.97, "cpuCoreRatio": 0.95}
    assert _reasons(busy) == ["event_loop_utilization", "cpu"]
    assert _reasons({**busy, "delayP99Ms": 5.0, "delayMaxMs": 10.0}) == []  # busy but answering promptly
    assert _reasons({**busy, "intervalMs": 500.0}) == []  # too short a window to call it sustained


async def test_health_and_status_carry_it(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN))["ok"]
        await asyncio.sleep(0.3)
        gw.call_soon(lambda: time.sleep(0.4))  # something holds the gateway's loop for 400 ms
        await asyncio.sleep(0.6)
        health = (await c.request("health"))["payload"]["eventLoop"]
        status = (await c.request("status"))["payload"]["eventLoop"]
        assert set(health) == KEYS and health["delayMaxMs"] >= 350, health
        assert status["delayMaxMs"] >= 350 and not status["degraded"]
