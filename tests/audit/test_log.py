"""The audit files: daily names, 0600/0700, size rotation, bounded lines, tail with cursor, redaction."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from homarus.audit.log import AuditLog, audit_files, read_records
from homarus.audit.trail import REDACTED, redact_args

DAY1 = 1_795_000_000.0  # 2026-11-18 UTC
DAY2 = DAY1 + 86_400


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_daily_files_permissions_and_tail(tmp_path: Path) -> None:
    clock = Clock(DAY1)
    log = AuditLog(tmp_path / "logs", clock=clock)
    log.write({"type": "run.start", "runId": "r1"})
    log.write({"type": "run.end", "runId": "r1"})
    clock.now = DAY2
    log.write({"type": "run.start", "runId": "r2"})
    log.close()
    files = audit_files(tmp_path / "logs")
    assert [f.name for f in files] == ["audit-2026-11-18.jsonl", "audit-2026-11-19.jsonl"]
    assert stat.S_IMODE(os.stat(tmp_path / "logs").st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    tail = read_records(tmp_path / "logs", limit=10)
    assert [r["runId"] for r in tail.records] == ["r1", "r1", "r2"] and tail.records[0]["ts"] == int(DAY1 * 1000)
    assert [r["type"] for r in read_records(tmp_path / "logs", run_id="r1").records] == ["run.start", "run.end"]
    assert [r["runId"] for r in read_records(tmp_path / "logs", limit=1).records] == ["r2"]


def test_rotation_by_size_and_follow_cursor(tmp_path: Path) -> None:
    clock = Clock(DAY1)
    log = AuditLog(tmp_path, max_file_bytes=400, clock=clock)
    for i in range(12):
        log.write({"type": "tool.call", "runId": "r", "n": i, "pad": "x" * 40})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "audit-2026-11-18.jsonl" in names and "audit-2026-11-18.1.jsonl" in names
    assert all(p.stat().st_size <= 400 for p in tmp_path.iterdir())
    everything = read_records(tmp_path, limit=100)
    assert [r["n"] for r in everything.records] == list(range(12))  # rotated parts read in order
    cursor = everything.cursor
    assert read_records(tmp_path, cursor=cursor).records == []
    log.write({"type": "run.end", "runId": "r", "n": 12})
    follow = read_records(tmp_path, cursor=cursor)
    assert [r["n"] for r in follow.records] == [12]


def test_torn_and_garbage_lines_are_skipped(tmp_path: Path) -> None:
    log = AuditLog(tmp_path, clock=Clock(DAY1))
    log.write({"type": "a", "runId": "r"})
    log.close()
    path = audit_files(tmp_path)[0]
    with open(path, "ab") as f:
        f.write(b'not json\n{"type": "b", "runId": "r"}\n{"type": "torn')
    tail = read_records(tmp_path)
    assert [r["type"] for r in tail.records] == ["a", "b"]


def test_huge_records_are_cut_and_failures_never_raise(tmp_path: Path) -> None:
    log = AuditLog(tmp_path, clock=Clock(DAY1))
    log.write({"type": "tool.call", "runId": "r", "args": {"content": "y" * 200_000}})
    record = read_records(tmp_path).records[0]
    assert record["truncated"] is True and len(record["args"]["content"]) < 3000
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    broken = AuditLog(blocked / "logs", clock=Clock(DAY1))
    broken.write({"type": "x"})  # cannot create the directory: counted, not raised
    assert broken.failures == 1


def test_redaction() -> None:
    args = {
        "command": "curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://x",
        "apiKey": "sk-live-123",
        "env": {"OPENAI_API_KEY": "sk-abcdefghijklmnopqrstu", "LANG": "C"},
        "text": "token ghp_abcdefghijklmnopqrstuvwxyz0123 in text",
        "long": "z" * 5000,
    }
    out = redact_args(args)
    assert "abcdefghijklmnop1234" not in str(out) and out["apiKey"] == REDACTED
    assert out["env"]["OPENAI_API_KEY"] == REDACTED and out["env"]["LANG"] == "C"
    assert "ghp_" not in out["text"] and len(out["long"]) < 1100
