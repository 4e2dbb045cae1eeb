"""RunEvents: a run's end is announced (its lifecycle event) before it is stored; waiting for the
stored end (``wait_recorded``) returns only once ``record_end`` has written it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from homarus.usecases.run_events import RunEvents


def _events() -> RunEvents:
    bus = SimpleNamespace(session_event=lambda *a, **k: None, release_run=lambda run_id: None)
    dedupe: Any = SimpleNamespace(get=lambda key: None)
    return RunEvents(bus, dedupe)


def _end(run_id: str) -> dict[str, Any]:
    data = {"phase": "end", "startedAt": 1, "endedAt": 2, "stopReason": "stop"}
    return {"runId": run_id, "seq": 1, "stream": "lifecycle", "ts": 2, "data": data, "sessionKey": "agent:main:s"}


async def test_the_announced_end_is_not_the_recorded_end() -> None:
    events = _events()
    recorded = asyncio.ensure_future(events.wait_recorded("r1", 5))
    events(_end("r1"))  # the end event: agent.wait answers, the journal may not have it yet
    assert (await events.wait("r1", 1)) is not None
    await asyncio.sleep(0.01)
    assert not recorded.done()
    events.finished("r1", "ok", 1, 2, None)  # record_end, after the journal and the cache
    assert await recorded is True
    assert await events.wait_recorded("r1", 0.01) is True  # already recorded: at once


async def test_waiting_for_a_record_that_never_comes_times_out() -> None:
    events = _events()
    assert await events.wait_recorded("never", 0.05) is False
    assert events._recorded_waiters == {}  # nothing left behind
