"""One worker thread for the runs' small file work: the first trip of a run (journal start record,
session entry, history, bootstrap files, skills), its transcript appends, and the writes of the
session index and the run journal (``homarus.group_commit``).

Why not the shared pool: under load, every trip to the pool woke another of its threads, and
those threads fought the event loop for the interpreter lock around each of their system calls.
On the 2-core bench machine a third of the gateway's CPU went to those hand-offs (futex waits
and wake-ups in the kernel), not to the work; with one thread running the trips back to back,
the kernel time per 500 echo runs fell by about half (``bench/RESULTS.md``, issue #23). The work
is bounded and local: what may wait on something else for long (network, a subprocess, a user)
belongs in the pool, never here. (A transcript locked by another process for long would hold the
lane up to its lock timeout: a rare case, traded for the common one.)

Trips keep FIFO order, and each runs in a copy of its caller's context (as ``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

__all__ = ["lane_executor", "on_lane", "run_on_lane"]

P = ParamSpec("P")
T = TypeVar("T")

_lane: ThreadPoolExecutor | None = None
_lane_mutex = threading.Lock()
_where = threading.local()


def _mark_lane() -> None:
    _where.on_lane = True


def lane_executor() -> ThreadPoolExecutor:
    """The lane's one-thread executor (created on first use: a process that runs nothing has no thread)."""
    global _lane
    if _lane is None:
        with _lane_mutex:
            if _lane is None:
                _lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="homarus-io-lane", initializer=_mark_lane)
    return _lane


def on_lane() -> bool:
    """True on the lane's thread: there, waiting for another trip of the lane would never end."""
    return bool(getattr(_where, "on_lane", False))


async def run_on_lane(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``await asyncio.to_thread(fn, ...)``, on the lane's thread."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await loop.run_in_executor(lane_executor(), call)
