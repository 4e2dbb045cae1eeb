"""Stopping background tasks: cancel, then wait until each has really ended."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel every task given (None is skipped) and wait until each has ended.

    What a task raises while it ends is swallowed: it was being stopped. The caller's own
    cancellation is not: if the task awaiting this is cancelled meanwhile, that propagates (a bare
    ``suppress(CancelledError)`` around the await would swallow it too).
    """
    live = [t for t in tasks if t is not None]
    for task in live:
        task.cancel()
    for task in live:
        try:
            await task
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                raise
        except Exception:  # noqa: S110  (a task that failed while being stopped is stopped)
            pass
