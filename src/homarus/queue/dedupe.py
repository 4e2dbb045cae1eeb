"""Idempotency cache: key → outcome, 5 minute TTL, at most 1000 entries (oldest evicted)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["DedupeCache", "DedupeEntry"]


@dataclass(slots=True)
class DedupeEntry:
    ts: float
    #: "accepted" / "started" / "in_flight" while running; "ok" / "error" / "timeout" / "interrupted" at the end
    status: str
    ok: bool = True
    payload: Any = None
    error: Any = None

    @property
    def terminal(self) -> bool:
        return self.status not in ("accepted", "started", "in_flight")


class DedupeCache:
    def __init__(
        self, ttl_s: float = 300.0, max_entries: int = 1000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, DedupeEntry] = OrderedDict()

    def get(self, key: str) -> DedupeEntry | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._clock() - entry.ts > self.ttl_s:
            del self._entries[key]
            return None
        return entry

    def put(self, key: str, status: str, *, ok: bool = True, payload: Any = None, error: Any = None) -> DedupeEntry:
        entry = DedupeEntry(self._clock(), status, ok, payload, error)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        self._sweep()
        return entry

    def _sweep(self) -> None:
        cutoff = self._clock() - self.ttl_s
        while self._entries:
            oldest_key, oldest = next(iter(self._entries.items()))
            if len(self._entries) > self.max_entries or oldest.ts < cutoff:
                del self._entries[oldest_key]
            else:
                break

    def __len__(self) -> int:
        return len(self._entries)
