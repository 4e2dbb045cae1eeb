"""A fake clock and a scheduler wired to a real store in a temp dir (no gateway)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homarus.cron.models import CronJob
from homarus.cron.runlog import RunLog
from homarus.cron.scheduler import CronScheduler, RunResult
from homarus.cron.service import CronService
from homarus.cron.store import CronStore

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@dataclass
class Recorder:
    """A runner that records its calls; ``behave`` decides each result (or raises)."""

    clock: Clock
    behave: Callable[[CronJob], Awaitable[RunResult]] | None = None
    calls: list[tuple[str, int]] = field(default_factory=list)

    async def __call__(self, job: CronJob) -> RunResult:
        self.calls.append((job.id, self.clock()))
        if self.behave is not None:
            return await self.behave(job)
        return RunResult("ok", summary=f"ran {job.name}")


@dataclass
class Rig:
    store: CronStore
    scheduler: CronScheduler
    service: CronService
    runlog: RunLog
    clock: Clock
    runner: Recorder
    events: list[dict[str, Any]]

    async def tick(self) -> None:
        await asyncio.gather(*await self.scheduler.tick())


def make_rig(root: Path, clock: Clock | None = None, runner: Recorder | None = None, **kw: Any) -> Rig:
    clock = clock or Clock()
    runner = runner or Recorder(clock)
    store = CronStore(root / "cron" / "jobs.json")
    runlog = RunLog(root / "cron" / "runs")
    events: list[dict[str, Any]] = []
    kw.setdefault("enabled", False)  # tests drive tick() themselves
    scheduler = CronScheduler(store, runner, clock=clock, runlog=runlog, on_change=events.append, **kw)
    return Rig(store, scheduler, CronService(store, scheduler, runlog), runlog, clock, runner, events)


def every(ms: int, name: str = "job", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {"kind": "every", "everyMs": ms},
        "payload": {"kind": "systemEvent", "text": f"tick {name}"},
        **extra,
    }


def at(when: str, name: str = "once", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {"kind": "at", "at": when},
        "payload": {"kind": "agentTurn", "message": "do it"},
        **extra,
    }
