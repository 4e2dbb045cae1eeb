"""The audit trail: one append-only JSONL file per day, ``$STATE/logs/audit-YYYY-MM-DD.jsonl``.

Every line is one record with ``ts`` (ms), ``type`` and the run it belongs to; the writers in
:mod:`homarus.audit.trail` decide what a record holds (never prompt text, secrets redacted). The
directory is 0700 and the files 0600; a day's file that reaches ``max_file_bytes`` is renamed to
``audit-YYYY-MM-DD.<n>.jsonl`` and a new one started, so no file grows without bound and nothing
is ever rewritten. Writes are one ``write(2)`` of a whole line to an ``O_APPEND`` descriptor (no
torn lines between writers); a write that fails is counted and logged, never raised into a run.

:func:`read_records` serves ``logs.tail`` and ``homarus logs``: newest files first, filtered by
run id, a byte cursor for following.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import orjson

from homarus.fs import ensure_private_dir

__all__ = ["AuditLog", "AuditStore", "Tail", "audit_files", "bounded", "read_records"]

log = logging.getLogger("homarus.audit")

DEFAULT_MAX_FILE_BYTES: Final = 50 * 1024 * 1024
MAX_LINE_BYTES: Final = 64 * 1024
_NAME = re.compile(r"^audit-(\d{4}-\d{2}-\d{2})(?:\.(\d+))?\.jsonl$")


class AuditStore(Protocol):
    """Where a trail's records go and are read back: these files, or a cluster's PostgreSQL
    (``audit/pg_log.py``)."""

    failures: int

    def write(self, record: dict[str, Any]) -> None: ...
    def close(self) -> None: ...
    def tail(self, *, limit: int = 200, run_id: str | None = None, cursor: int | None = None) -> Tail: ...


class AuditLog:
    def __init__(
        self,
        directory: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        clock: Callable[[], float] = time.time,
        prefix: str = "audit",
    ) -> None:
        self.directory = directory
        self.max_file_bytes = max_file_bytes
        self.prefix = prefix
        self._clock = clock
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._day: str | None = None
        self._size = 0
        self.failures = 0

    def path_for(self, day: str, part: int | None = None) -> Path:
        suffix = f".{part}" if part else ""
        return self.directory / f"{self.prefix}-{day}{suffix}.jsonl"

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` (``ts`` added when missing); failures are logged, never raised."""
        now = self._clock()
        line = orjson.dumps({"ts": int(now * 1000), **record}, default=str) + b"\n"
        if len(line) > MAX_LINE_BYTES:
            line = orjson.dumps({**bounded(record, now), "truncated": True}, default=str) + b"\n"
        day = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%d")
        with self._lock:
            try:
                fd = self._open(day, len(line))
                os.write(fd, line)
                self._size += len(line)
            except OSError as exc:
                self.failures += 1
                if self.failures in (1, 10, 100) or self.failures % 1000 == 0:
                    log.error("audit write failed (%d so far): %s", self.failures, exc)

    def _open(self, day: str, incoming: int) -> int:
        if self._fd is not None and self._day == day and self._size + incoming <= self.max_file_bytes:
            return self._fd
        self._close()
        ensure_private_dir(self.directory)
        path = self.path_for(day)
        if path.exists() and path.stat().st_size + incoming > self.max_file_bytes:
            part = 1
            while self.path_for(day, part).exists():
                part += 1
            os.rename(path, self.path_for(day, part))
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o600)
        os.fchmod(fd, 0o600)
        self._fd, self._day, self._size = fd, day, os.fstat(fd).st_size
        return fd

    def _close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None

    def close(self) -> None:
        with self._lock:
            self._close()

    def tail(self, *, limit: int = 200, run_id: str | None = None, cursor: int | None = None) -> Tail:
        return read_records(self.directory, limit=limit, run_id=run_id, cursor=cursor, prefix=self.prefix)


def bounded(record: dict[str, Any], now: float) -> dict[str, Any]:
    """A record too large for one line: long strings cut (arguments are for reading, not replay)."""

    def cut(value: Any) -> Any:
        if isinstance(value, str):
            return value if len(value) <= 2000 else value[:2000] + f"…[{len(value) - 2000} more]"
        if isinstance(value, dict):
            return {k: cut(v) for k, v in list(value.items())[:100]}
        if isinstance(value, list):
            return [cut(v) for v in value[:100]]
        return value

    return {"ts": int(now * 1000), **cut(record)}


# -- reading --------------------------------------------------------------------------------------
def audit_files(directory: Path, prefix: str = "audit") -> list[Path]:
    """The audit files, oldest first (day, then rotation part: .N are older than the unnumbered one)."""
    if not directory.is_dir():
        return []
    found: list[tuple[str, int, Path]] = []
    for path in directory.iterdir():
        match = _NAME.match(path.name.replace(prefix, "audit", 1)) if path.name.startswith(prefix + "-") else None
        if match:
            part = int(match.group(2)) if match.group(2) else 1_000_000
            found.append((match.group(1), part, path))
    return [p for _, _, p in sorted(found)]


@dataclass(slots=True)
class Tail:
    records: list[dict[str, Any]]
    file: str | None
    #: byte offset in ``file`` after the last line read (pass it back to follow)
    cursor: int
    truncated: bool = False
    #: how much the newest file (the shared table: its last ``seq``) holds
    size: int = 0


def _lines(path: Path, start: int) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as f:
        f.seek(start)
        offset = start
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # a line still being written: read it next time
            offset += len(raw)
            yield offset, raw


def _matching(path: Path, start: int, run_id: str | None) -> tuple[list[dict[str, Any]], int]:
    out: list[dict[str, Any]] = []
    end = start
    for offset, raw in _lines(path, start):
        end = offset
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if run_id is None or record.get("runId") == run_id:
            out.append(record)
    return out, end


def read_records(
    directory: Path,
    *,
    limit: int = 200,
    run_id: str | None = None,
    cursor: int | None = None,
    prefix: str = "audit",
) -> Tail:
    """The last ``limit`` records (of ``run_id``); with ``cursor``, only what the newest file got since."""
    files = audit_files(directory, prefix)
    if not files:
        return Tail([], None, 0)
    newest = files[-1]
    if cursor is not None:
        start = cursor if cursor <= newest.stat().st_size else 0  # rotated under us: start again
        out, end = _matching(newest, start, run_id)
        truncated = len(out) > limit
        return Tail(out[-limit:], newest.name, end, truncated, _size(newest))
    out, end = [], newest.stat().st_size
    for path in reversed(files):  # newest first, until enough
        found, last = _matching(path, 0, run_id)
        if path == newest:
            end = last
        out = found + out
        if len(out) > limit:
            break
    truncated = len(out) > limit
    return Tail(out[-limit:], newest.name, end, truncated, _size(newest))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
