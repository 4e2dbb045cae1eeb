"""Bounded in-memory rate limiters with an injectable clock (pure, no I/O)."""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["FailureLimiter", "SlidingWindowBudget"]

Clock = Callable[[], float]
_MAX_KEYS = 10_000  # bound memory under a spray of spoofed or distinct client addresses


@dataclass(slots=True)
class _Failures:
    times: deque[float] = field(default_factory=deque)
    locked_until: float = 0.0


class FailureLimiter:
    """Counts failures per key; ``max_attempts`` in ``window_s`` locks the key for ``lockout_s``."""

    def __init__(self, max_attempts: int, window_s: float, lockout_s: float, clock: Clock = time.monotonic) -> None:
        self.max_attempts = max_attempts
        self.window_s = window_s
        self.lockout_s = lockout_s
        self._clock = clock
        self._keys: OrderedDict[str, _Failures] = OrderedDict()

    def retry_after(self, key: str) -> float | None:
        """Seconds until ``key`` may try again, or None when it is not locked."""
        entry = self._keys.get(key)
        if entry is None:
            return None
        remaining = entry.locked_until - self._clock()
        return remaining if remaining > 0 else None

    def record_failure(self, key: str) -> float | None:
        """Count one failure; returns the lockout in seconds when this failure triggered one."""
        now = self._clock()
        entry = self._keys.get(key)
        if entry is None:
            entry = self._keys[key] = _Failures()
            if len(self._keys) > _MAX_KEYS:
                self._keys.popitem(last=False)
        else:
            self._keys.move_to_end(key)
        entry.times.append(now)
        while entry.times and entry.times[0] <= now - self.window_s:
            entry.times.popleft()
        if len(entry.times) >= self.max_attempts:
            entry.times.clear()
            entry.locked_until = now + max(self.lockout_s, self.window_s if self.lockout_s == 0 else 0)
            return entry.locked_until - now
        return None

    def reset(self, key: str) -> None:
        self._keys.pop(key, None)


class SlidingWindowBudget:
    """At most ``limit`` uses per ``window_s`` per key (e.g. 3 config writes a minute)."""

    def __init__(self, limit: int, window_s: float, clock: Clock = time.monotonic) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._keys: OrderedDict[str, deque[float]] = OrderedDict()

    def try_acquire(self, key: str) -> float | None:
        """Take one use; returns None on success, else the seconds until one frees up."""
        now = self._clock()
        uses = self._keys.get(key)
        if uses is None:
            uses = self._keys[key] = deque()
            if len(self._keys) > _MAX_KEYS:
                self._keys.popitem(last=False)
        while uses and uses[0] <= now - self.window_s:
            uses.popleft()
        if len(uses) >= self.limit:
            return max(uses[0] + self.window_s - now, 0.001)
        uses.append(now)
        return None


def ceil_seconds(seconds: float) -> int:
    return max(1, math.ceil(seconds))
