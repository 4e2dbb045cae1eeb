"""Per-job run history: ``cron/runs/<jobId>.jsonl``, one JSON object per finished run.

Appends are single ``write`` calls of whole lines (O_APPEND), so concurrent appenders never
interleave inside a line. Once a file grows past ``max_bytes`` it is rewritten atomically to its
last ``keep_lines`` lines. Readers skip lines that do not parse (a torn tail after a crash).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from homarus.errors import InvalidRequest
from homarus.fs import atomic_write, ensure_private_dir

__all__ = ["RunLog", "newest_first"]


class RunLog:
    def __init__(self, directory: Path, *, max_bytes: int = 2_000_000, keep_lines: int = 2000) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.keep_lines = keep_lines

    def path_for(self, job_id: str) -> Path:
        if not job_id or "/" in job_id or "\\" in job_id or job_id.startswith("."):
            raise InvalidRequest(f"invalid cron job id: {job_id!r}")
        return self.directory / f"{job_id}.jsonl"

    def append(self, job_id: str, entry: dict[str, Any]) -> None:
        path = self.path_for(job_id)
        ensure_private_dir(self.directory)
        line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            os.write(fd, line)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > self.max_bytes:
            self.prune(job_id)

    def prune(self, job_id: str) -> None:
        path = self.path_for(job_id)
        lines = path.read_bytes().splitlines(keepends=True)
        atomic_write(path, b"".join(lines[-self.keep_lines :]))

    def read(self, job_id: str, *, limit: int = 50, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """(entries newest first, skipping ``offset`` and at most ``limit``; total entries)."""
        entries = self.entries(job_id)
        return entries[offset : offset + limit], len(entries)

    def entries(self, job_id: str) -> list[dict[str, Any]]:
        """Every readable entry of one job, newest first (a torn or foreign line is skipped)."""
        try:
            raw = self.path_for(job_id).read_bytes()
        except FileNotFoundError:
            return []
        entries: list[dict[str, Any]] = []
        for line in raw.splitlines():
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                if isinstance(item, dict):
                    entries.append(item)
        entries.reverse()
        return entries

    def all_entries(self) -> list[dict[str, Any]]:
        """Every job's entries, newest first (by ``ts``, then ``runAtMs``)."""
        out: list[dict[str, Any]] = []
        try:
            names = sorted(p.name for p in self.directory.iterdir() if p.suffix == ".jsonl")
        except FileNotFoundError:
            return []
        for name in names:
            with contextlib.suppress(InvalidRequest):
                out.extend(self.entries(name[: -len(".jsonl")]))
        return newest_first(out)


def newest_first(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries of several jobs, newest first (by ``ts``, then ``runAtMs``)."""
    entries.sort(key=lambda e: (_number(e.get("ts")), _number(e.get("runAtMs"))), reverse=True)
    return entries


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
