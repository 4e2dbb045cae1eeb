"""Exec allowlist analysis: every public red-team exec row, plus parser/safe-bin/decision cases."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from homarus.errors import Forbidden, InvalidRequest, NotFound
from homarus.gateway.services.exec_approvals import authorize, binding_of
from homarus.security.approvals import ApprovalManager, ApprovalRecord
from homarus.security.exec_analysis import Analysis, analyze, decide, decide_fallback, glob_match, path_pattern

REDTEAM = Path(__file__).resolve().parents[3] / "shared/reference/redteam-public.jsonl"
PATH = "/usr/bin:/bin"
LS = os.path.realpath("/usr/bin/ls")


def _rows() -> list[dict[str, Any]]:
    if not REDTEAM.exists():
        return []
    rows = [json.loads(line) for line in REDTEAM.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("target") == "exec"]


ROWS = _rows()
COMMAND_ROWS = [r for r in ROWS if "command" in r["input"]]
RPC_ROWS = [r for r in ROWS if "command" not in r["input"]]


def _config(text: str) -> dict[str, Any]:
    out: dict[str, Any] = dict(kv.split("=", 1) for kv in text.split())
    out["allowlist"] = [x for x in out.get("allowlist", "[]").strip("[]").split(",") if x]
    return out


@pytest.mark.skipif(not REDTEAM.exists(), reason="red-team corpus absent")
@pytest.mark.parametrize("row", COMMAND_ROWS, ids=[r["id"] for r in COMMAND_ROWS])
def test_redteam_command_rows(row: dict[str, Any], tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fake = ws / "ls"  # a workspace binary named ls (exec-022)
    fake.write_text("#!/bin/sh\necho pwned\n")
    fake.chmod(0o755)
    cfg = _config(row["input"]["config"])
    analysis = analyze(row["input"]["command"], path=PATH, allowlist=cfg["allowlist"], cwd=str(ws))
    decision = decide(analysis, cfg["security"], cfg.get("ask", "off"))
    expect = row["expect"]
    want = {"require_approval": "ask", "allow": "run", "block": "deny"}[expect["result"]]
    assert decision.action == want, (decision, analysis)
    if "error" in expect:
        assert expect["error"] in (decision.reason or ""), decision
    if want == "ask":
        fallback = decide_fallback(analysis, cfg.get("askFallback", "deny"))
        assert fallback.action == "deny"


def _manager() -> tuple[ApprovalManager, list[ApprovalRecord]]:
    seen: list[ApprovalRecord] = []
    return ApprovalManager("exec", on_requested=seen.append, on_resolved=seen.append), seen


def _payload(command: str, session: str = "agent:main:main", run: str = "run-1") -> dict[str, Any]:
    return {
        "command": command,
        "sessionKey": session,
        "runId": run,
        "binding": binding_of(command, cwd=None, agent_id=None, session_key=session, run_id=run),
    }


@pytest.mark.skipif(not REDTEAM.exists(), reason="red-team corpus absent")
@pytest.mark.parametrize("row", RPC_ROWS, ids=[r["id"] for r in RPC_ROWS])
async def test_redteam_approval_rows(row: dict[str, Any]) -> None:
    """exec-042..046 against the manager + binding (the wire versions are in tests/gateway)."""
    manager, _ = _manager()
    now = [1000.0]
    manager._clock = lambda: now[0]
    rid = row["id"]
    if rid == "exec-042":
        with pytest.raises(NotFound, match="unknown or expired approval id"):
            manager.resolve(row["input"]["params"]["id"], "allow-once", resolved_by="op")
    elif rid == "exec-043":
        record = manager.request(_payload("ls"), timeout_ms=1_800_000)
        now[0] += 1801
        with pytest.raises(NotFound, match="approval"):
            manager.resolve(record.id, "allow-once", resolved_by="op")
        assert record.decision is None and record.reason == "timeout"
    elif rid == "exec-044":
        record = manager.request(_payload("ls"), timeout_ms=60_000)
        manager.resolve(record.id, "allow-once", resolved_by="op")
        with pytest.raises(NotFound):
            manager.resolve(record.id, "allow-once", resolved_by="op")
        assert authorize(manager, record.id, command="ls", session_key="agent:main:main", run_id="run-1")
        with pytest.raises(Forbidden, match="approval mismatch"):  # allow-once is consumed
            authorize(manager, record.id, command="ls", session_key="agent:main:main", run_id="run-1")
    elif rid in ("exec-045", "exec-046"):
        record = manager.request(_payload("git status"), timeout_ms=60_000)
        manager.resolve(record.id, "allow-always", resolved_by="op")
        with pytest.raises(Forbidden, match="approval mismatch"):
            authorize(manager, record.id, command="git push --force", session_key="agent:main:main", run_id="run-1")
        with pytest.raises(Forbidden, match="approval mismatch"):
            authorize(manager, record.id, command="git status", session_key="agent:other:main", run_id="run-1")
        assert authorize(manager, record.id, command="git status", session_key="agent:main:main", run_id="run-1")
    else:
        pytest.fail(f"unhandled exec row {rid}")
    await asyncio.sleep(0)


def test_redteam_rows_present() -> None:
    if REDTEAM.exists():
        assert len(ROWS) >= 29


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("ls > /tmp/x", "redirection"),
        ("ls >> /tmp/x", "redirection"),
        ("cat < /etc/passwd", "redirection"),
        ("cat <<EOF", "redirection"),
        ("ls `id`", "`"),
        ("ls $(id)", "$()"),
        ("ls $((1+2))", "$()"),
        ("ls | tee >(sh)", ">("),
        ("{ ls; }", "{"),
        ("ls |& cat", "|&"),
        ("ls &> /tmp/x", "&>"),
        ("ls 'unterminated", "unterminated single quote"),
        ('ls "unterminated', "unterminated double quote"),
        ("ls \\", "unterminated escape"),
        ("ls ;; ls", "empty command segment"),
        ("ls\rrm", "newline"),
        ('ls "a\\\nb"', "newline"),
        ("ls \x00", "NUL"),
        ("ls |", "empty command segment"),
    ],
)
def test_shell_syntax_fails(command: str, fragment: str) -> None:
    a = analyze(command, path=PATH, allowlist=[LS, "/usr/bin/*"])
    assert not a.ok and a.needs_approval and a.rebuilt == ""
    assert fragment in (a.reason or "")
    assert decide(a, "allowlist", "on-miss").action == "ask"
    assert decide(a, "allowlist", "off").action == "deny"
    assert decide(a, "full", "off").action == "run"


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "ls && ls || ls; ls",
        "ls | wc -l | head -n 3",
        "env ls",
        "env -i LANG=C ls",
        "nice -n 5 ls",
        "nohup ls",
        "stdbuf -oL ls",
        "timeout -s KILL 5 ls",
        "LANG=C LC_ALL=C ls",
        "ls '$(id)' \"${HOME}\" *",
        "/usr/bin/ls",
        "ls 'a\nb'",
        "cut -d/ -f1",
        "tr a-z A-Z",
        "uniq -c",
        "tail --lin=5",
        "head --l 3",
        "tr -d a",
    ],
)
def test_allowed(command: str) -> None:
    a = analyze(command, path=PATH, allowlist=["/usr/bin/ls"])
    assert a.ok, a.reason
    assert decide(a, "allowlist", "on-miss").action == "run"
    assert decide(a, "allowlist", "always").action == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "X=1 ls",
        "PATH=/tmp ls",
        "env LD_PRELOAD=/x.so ls",
        "env -S 'ls -l' ls",
        "env -C /tmp ls",
        "timeout",
        "nice",
        "xargs ls",
        "sudo ls",
        "busybox ls",
        "tail -f /etc/passwd",
        "tail --follow",
        "wc --files0-from=x",
        "uniq --c",
        "tr",
        "wc -",
    ],
)
def test_misses(command: str) -> None:
    a = analyze(command, path=PATH, allowlist=["/usr/bin/ls", "/usr/bin/busybox", "/usr/bin/xargs", "sudo"])
    assert not a.ok and a.needs_approval, command
    assert (a.reason or "").startswith("exec denied: allowlist miss"), a.reason


def test_ld_reason_named_first() -> None:
    a = analyze("X=1 LD_PRELOAD=/tmp/evil.so /usr/bin/ls", path=PATH, allowlist=["/usr/bin/ls"])
    assert "LD_PRELOAD" in (a.reason or "")


def test_opt_in_safe_bins() -> None:
    names = {"sort", "grep", "jq"}
    ok = ["sort -k 2 -t ,", "grep -e foo -i", "jq -n --arg a b '.x'", "jq --argj a 1 .x"]
    bad = ["sort -o x", "sort --out=x", "grep foo", "grep -r -e x", "jq -n env", "jq '$ENV'", "jq -f x", "jq . file"]
    for cmd in ok:
        assert analyze(cmd, path=PATH, allowlist=[], safe_bin_names=names).ok, cmd
    for cmd in bad:
        assert not analyze(cmd, path=PATH, allowlist=[], safe_bin_names=names).ok, cmd
    assert not analyze("head -n 1", path=PATH, allowlist=[], safe_bins=False).ok


def test_safe_bin_must_be_trusted(tmp_path: Path) -> None:
    fake = tmp_path / "head"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    a = analyze("head -n 1", path=f"{tmp_path}:{PATH}", allowlist=[])
    assert not a.ok and "not in the allowlist" in (a.reason or "")


def test_rebuilt_is_quoted_and_resolved() -> None:
    a = analyze("LANG='C x' nice -n 5 ls 'a b' '$(id)' *; ls", path=PATH, allowlist=["/usr/bin/ls"])
    assert a.ok
    nice = os.path.realpath("/usr/bin/nice")
    assert a.rebuilt == f"LANG='C x' {nice} -n 5 {LS} 'a b' '$(id)' '*'; {LS}"
    assert shlex.split(a.rebuilt.split(";")[0])[5:] == ["a b", "$(id)", "*"]
    assert a.patterns == [path_pattern(LS)]
    assert [s.satisfied_by for s in a.segments] == ["allowlist", "allowlist"]


def test_patterns_unavailable_for_shells() -> None:
    assert analyze("bash -c 'x'", path=PATH, allowlist=[]).patterns == []
    assert analyze("nosuchcmd-xyz", path=PATH, allowlist=[]).patterns == []


def test_globs_and_bare_names(tmp_path: Path) -> None:
    assert glob_match("/usr/**", "/usr/bin/ls") and not glob_match("/usr/*", "/usr/bin/ls")
    assert glob_match("/usr/bin/l?", "/usr/bin/ls") and glob_match("/usr/bin/[kl]s", "/usr/bin/ls")
    assert not glob_match("/usr/bin/LS", "/usr/bin/ls")
    assert path_pattern("/a/*b") == "/a/[*]b" and glob_match(path_pattern("/a/*b"), "/a/*b")
    assert analyze("ls", path=PATH, allowlist=["ls"]).ok
    assert not analyze("/usr/bin/ls", path=PATH, allowlist=["ls"]).ok  # bare names: PATH-invoked only
    assert analyze("ls", path=PATH, allowlist=["/usr/**"]).ok
    assert not analyze("ls", path=f"relative:{PATH}", allowlist=["/nowhere/*"]).ok


def test_decide_modes() -> None:
    ok = analyze("ls", path=PATH, allowlist=["/usr/bin/ls"])
    miss = analyze("rm -rf /", path=PATH, allowlist=["/usr/bin/ls"])
    empty = analyze("   ", path=PATH, allowlist=[])
    assert decide(ok, "deny", "off").action == "deny"
    assert decide(miss, "full", "on-miss").action == "run"
    assert decide(miss, "allowlist", "off").action == "deny"
    assert decide(empty, "full", "off").action == "deny"
    assert decide_fallback(miss, "allowlist").action == "deny"
    assert decide_fallback(ok, "allowlist").action == "run"
    assert decide_fallback(miss, "full").action == "run"
    assert isinstance(ok, Analysis)


async def test_authorize_rejects_pending_and_unknown() -> None:
    manager, _ = _manager()
    record = manager.request(_payload("ls"), timeout_ms=60_000)
    with pytest.raises(NotFound):
        authorize(manager, record.id, command="ls", session_key="agent:main:main", run_id="run-1")
    with pytest.raises(NotFound):
        authorize(manager, "nope", command="ls")
    with pytest.raises(InvalidRequest):
        manager.request(_payload("ls"), timeout_ms=60_000, id=record.id)
    manager.cancel_all()
