"""Audit trail overhead: the cost one tool call's record adds (redaction, JSON, one append write).

Run with ``.venv/bin/python bench/audit_bench.py [--n N]``. Writes into a temp dir (tmpfs when
``/dev/shm`` is writable, as the state dir of a small server often is not — the row for the temp
dir on disk is printed too), no fsync (the trail is append-only, flushed by the OS).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from homarus.audit.log import AuditLog  # after the sys.path line above
from homarus.audit.trail import RunAudit

ARGS = {"path": "notes/today.md", "content": "x" * 400, "apiKey": "sk-abcdefghijklmnopqrstuvwxyz"}


def _row(where: Path, n: int) -> tuple[float, float]:
    log = AuditLog(where / "logs")
    audit = RunAudit(log, "run-1", "agent:main:main", "main")
    for i in range(200):  # warm the file and the code paths
        audit.tool_call(
            tool_call_id=f"w{i}", tool="write", args=ARGS, is_error=False, duration_ms=1, details=None, error_text=None
        )
    start = time.perf_counter()
    for i in range(n):
        audit.tool_call(
            tool_call_id=f"c{i}", tool="write", args=ARGS, is_error=False, duration_ms=1, details=None, error_text=None
        )
    per_call = (time.perf_counter() - start) / n * 1e6
    start = time.perf_counter()
    for i in range(n):
        log.write({"type": "tool.call", "runId": "run-1", "n": i})
    per_write = (time.perf_counter() - start) / n * 1e6
    log.close()
    return per_call, per_write


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    args = ap.parse_args()
    rows = []
    for label, base in (("tmpfs (/dev/shm)", "/dev/shm"), ("disk ($TMPDIR)", None)):  # noqa: S108
        if base is not None and not os.access(base, os.W_OK):
            continue
        root = Path(tempfile.mkdtemp(prefix="homarus-audit-", dir=base))
        try:
            per_call, per_write = _row(root, args.n)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        rows.append((label, per_call, per_write))
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} CPUs, n={args.n}")
    print("| where | tool.call record (redact + JSON + append) µs | bare append of a small record µs |")
    print("| --- | --- | --- |")
    for label, per_call, per_write in rows:
        print(f"| {label} | {per_call:.1f} | {per_write:.1f} |")


if __name__ == "__main__":
    main()
