"""``sessions.json``: key → SessionEntry, rewritten only whole, under the cross-process lock.

Every update: take the path's lock, re-read the file inside it, apply the change, write a temp
file, fsync, rename. Readers never see a partial file; concurrent writers (threads or processes)
never lose each other's updates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import orjson
from pydantic import ValidationError

from homarus.errors import RuntimeFailure
from homarus.fs import atomic_write, ensure_private_dir
from homarus.locking import file_lock
from homarus.sessions.entry import SessionEntry

__all__ = ["Maintenance", "SessionStore", "StoreCorrupt"]

log = logging.getLogger("homarus.sessions")
T = TypeVar("T")

Entries = dict[str, dict[str, Any]]


class StoreCorrupt(RuntimeFailure):
    """sessions.json exists but is not a valid store; nothing is written over it."""


@dataclass(frozen=True, slots=True)
class Maintenance:
    mode: Literal["warn", "enforce"] = "warn"
    prune_after_ms: int = 30 * 24 * 3600 * 1000
    max_entries: int = 500


class SessionStore:
    """One agent's ``sessions.json``. Methods block (file I/O): call them from a worker thread."""

    def __init__(self, path: Path, *, maintenance: Maintenance | None = None, lock_timeout: float = 10.0) -> None:
        self.path = path
        self.maintenance = maintenance or Maintenance()
        self.lock_timeout = lock_timeout
        self._warned_at = -1e9

    def read(self) -> Entries:
        """Current entries (raw JSON objects); missing file = empty store."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = orjson.loads(raw)
        except ValueError as exc:
            raise StoreCorrupt(f"{self.path} is not valid JSON ({exc}); fix or move it away") from None
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise StoreCorrupt(f"{self.path} is not an object of session entries")
        return data

    def get(self, key: str) -> SessionEntry | None:
        raw = self.read().get(key)
        return _entry(key, raw) if raw is not None else None

    def entries(self) -> dict[str, SessionEntry]:
        out = {}
        for key, raw in self.read().items():
            try:
                out[key] = SessionEntry.model_validate(raw)
            except ValidationError:
                log.warning("skipping invalid session entry %s in %s", key, self.path)
        return out

    def update(self, change: Callable[[Entries], T]) -> T:
        """Apply ``change`` to the entries under the lock and persist them if they changed."""
        ensure_private_dir(self.path.parent)
        with file_lock(self.path, timeout=self.lock_timeout):
            entries = self.read()
            # orjson: with a hundred sessions the store is tens of kB, serialized three times per
            # update (two to see whether it changed), on the path of every agent turn
            before = orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)
            result = change(entries)
            self._maintain(entries)
            if orjson.dumps(entries, option=orjson.OPT_SORT_KEYS) != before:
                atomic_write(self.path, orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n", mode=0o600)
            return result

    def _maintain(self, entries: Entries) -> None:
        m = self.maintenance
        now = int(time.time() * 1000)
        stale = [k for k, v in entries.items() if now - _updated_at(v, now) > m.prune_after_ms]
        excess = max(0, len(entries) - len(stale) - m.max_entries)
        if not stale and excess == 0:
            return
        if m.mode == "warn":
            if time.monotonic() - self._warned_at < 600:
                return  # said recently; a store over its bounds is not news on every write
            self._warned_at = time.monotonic()
            log.warning(
                "session store %s: %d entries older than pruneAfter, %d over maxEntries (mode warn: kept)",
                self.path,
                len(stale),
                excess,
            )
            return
        for key in stale:
            if not key.endswith(":main"):
                entries.pop(key, None)
        if len(entries) > m.max_entries:
            # main sessions are never pruned, so the excess comes out of the others, oldest first
            prunable = [k for k in entries if not k.endswith(":main")]
            oldest = sorted(prunable, key=lambda k: _updated_at(entries[k], 0))
            for key in oldest[: len(entries) - m.max_entries]:
                entries.pop(key, None)


def _entry(key: str, raw: dict[str, Any]) -> SessionEntry:
    try:
        return SessionEntry.model_validate(raw)
    except ValidationError as exc:
        raise StoreCorrupt(f"session entry {key!r} is invalid: {exc.errors()[0]['msg']}") from None


def _updated_at(entry: dict[str, Any], default: int) -> int:
    value = entry.get("updatedAt")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
