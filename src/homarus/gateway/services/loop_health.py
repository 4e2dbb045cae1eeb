"""How the gateway's event loop is doing: timer delay, loop-thread and process CPU, in the
original's ``eventLoop`` shape (``health`` and ``status``).

A task asks to wake every ``RESOLUTION_S``; how late it wakes is the loop's delay (anything that
held the loop — a blocking call, a burst of frames — shows up here, as a client waiting for a
ping answer would see it). Samples of the last ``WINDOW_S`` give the p99 and the maximum; the
loop thread's CPU time over wall time is its utilization, the whole process's the core ratio.
``degraded`` follows the original's rule: a delay of a second or more, or under sustained load
(a window of at least a second with delays of 25 ms or more) a loop busy 95% of the time or a
process using 90% of a core.
"""

from __future__ import annotations

import asyncio
import collections
import os
import time
from typing import Any

from homarus.tasks import cancel_and_wait

__all__ = ["LoopHealth"]

RESOLUTION_S = 0.05
WINDOW_S = 60.0
DELAY_WARN_MS = 1000.0
UTILIZATION_WARN = 0.95
CPU_CORE_RATIO_WARN = 0.9
COEVIDENCE_DELAY_MS = 25.0
SUSTAINED_MIN_INTERVAL_MS = 1000.0


class LoopHealth:
    def __init__(self) -> None:
        #: (monotonic time of the wake-up, delay in ms)
        self._samples: collections.deque[tuple[float, float]] = collections.deque(maxlen=int(WINDOW_S / RESOLUTION_S))
        #: (monotonic, loop thread CPU s, process CPU s, host (busy, total) jiffies), one a second
        self._cpu: collections.deque[tuple[float, float, float, tuple[int, int] | None]] = collections.deque(
            maxlen=int(WINDOW_S) + 1
        )
        self._task: asyncio.Task[None] | None = None
        self._degraded_since_ms: int | None = None

    def start(self) -> None:
        if self._task is None:
            self._cpu.append(_cpu_now())  # the CPU figures exist from the first ``health`` on
            self._task = asyncio.get_running_loop().create_task(self._watch(), name="loop-health")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        next_cpu = loop.time() + 1.0
        while True:
            asked = loop.time()
            await asyncio.sleep(RESOLUTION_S)
            now = loop.time()
            self._samples.append((now, max(0.0, (now - asked - RESOLUTION_S) * 1000)))
            if now >= next_cpu:
                self._cpu.append(_cpu_now())
                next_cpu = now + 1.0

    def snapshot(self) -> dict[str, Any]:
        delays = sorted(d for _, d in self._samples)
        p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))] if delays else 0.0
        interval_ms = (self._samples[-1][0] - self._samples[0][0]) * 1000 if len(self._samples) > 1 else 0.0
        utilization = cpu_ratio = 0.0
        breakdown: dict[str, Any] = {"hostCpuCount": os.cpu_count() or 1}
        if self._cpu:  # the window's oldest reading against one taken now (on the loop's thread)
            (t0, th0, p0, h0), (t1, th1, p1, h1) = self._cpu[0], _cpu_now()
            wall = t1 - t0
            if wall > 0:
                utilization, cpu_ratio = min(1.0, (th1 - th0) / wall), (p1 - p0) / wall
                # every thread besides the loop's is a worker here (the io lane and the to_thread pool: file and
                # SQLite work); there are no other runtime threads to tell apart
                breakdown["mainThreadCoreRatio"] = round(utilization, 3)
                breakdown["workerCoreRatio"] = round(max(0.0, cpu_ratio - utilization), 3)
                breakdown["otherThreadsCoreRatio"] = 0.0
            if h0 is not None and h1 is not None and h1[1] > h0[1]:
                breakdown["hostUtilization"] = round((h1[0] - h0[0]) / (h1[1] - h0[1]), 3)
        metrics = {
            "intervalMs": round(interval_ms, 1),
            "delayP99Ms": round(p99, 1),
            "delayMaxMs": round(delays[-1], 1) if delays else 0.0,
            "utilization": round(utilization, 3),
            "cpuCoreRatio": round(cpu_ratio, 3),
        }
        reasons = _reasons(metrics)
        if reasons and self._degraded_since_ms is None:
            self._degraded_since_ms = int(time.time() * 1000)
        elif not reasons:
            self._degraded_since_ms = None
        return {
            "degraded": bool(reasons),
            "degradedSinceMs": self._degraded_since_ms,
            "reasons": reasons,
            **metrics,
            "cpuBreakdown": breakdown,
        }


def _cpu_now() -> tuple[float, float, float, tuple[int, int] | None]:
    """(monotonic, this thread's CPU s, the process's CPU s, host jiffies): call on the loop's thread."""
    return time.monotonic(), time.thread_time(), time.process_time(), _host_jiffies()


def _host_jiffies() -> tuple[int, int] | None:
    """(busy, total) CPU jiffies of the whole machine (Linux ``/proc/stat``), None elsewhere."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:8]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _reasons(m: dict[str, float]) -> list[str]:
    reasons = []
    if m["delayP99Ms"] >= DELAY_WARN_MS or m["delayMaxMs"] >= DELAY_WARN_MS:
        reasons.append("event_loop_delay")
    if m["intervalMs"] < SUSTAINED_MIN_INTERVAL_MS:
        return reasons
    if not (m["delayP99Ms"] >= COEVIDENCE_DELAY_MS or m["delayMaxMs"] >= COEVIDENCE_DELAY_MS):
        return reasons
    if m["utilization"] >= UTILIZATION_WARN:
        reasons.append("event_loop_utilization")
    if m["cpuCoreRatio"] >= CPU_CORE_RATIO_WARN:
        reasons.append("cpu")
    return reasons
