"""The migration plan for an OpenClaw state, and carrying it out into a Homarus state directory.

:func:`plan` decides everything without writing (``--dry-run`` prints it); :func:`apply` writes
what the plan carries. Re-running is idempotent: a session whose id is already there, a cron job
whose id is already there, a workspace file already identical are skipped; a workspace file that
differs is kept as Homarus has it (and reported); the existing ``homarus.json`` is backed up
before it is replaced by itself merged with the carried keys. Nothing in the source is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from homarus.config.paths import StatePaths
from homarus.config.store import merge_patch
from homarus.cron.models import CronJob
from homarus.fs import atomic_write, ensure_private_dir
from homarus.migrate.config_map import PlanItem, map_config
from homarus.migrate.source import OpenClawState, SessionRecord
from homarus.sessions.transcript_schema import CURRENT_VERSION, ENTRY_ADAPTER

if TYPE_CHECKING:
    from homarus.sessions.backend import SessionBackend

__all__ = ["MigrationPlan", "apply", "plan"]

WORKSPACE_FILES: Final = (
    "AGENTS.md",
    "SOUL.md",
    "USER.md",
    "IDENTITY.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
    "BOOTSTRAP.md",
)
WORKSPACE_DIRS: Final = ("memory", "skills")
_ENTRY_FIELDS: Final = ("sessionId", "updatedAt", "createdAt", "label", "displayName", "model", "modelProvider")


@dataclass(slots=True)
class MigrationPlan:
    items: list[PlanItem] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    files: list[tuple[Path, Path]] = field(default_factory=list)
    sessions: list[tuple[SessionRecord, list[dict[str, Any]], dict[str, Any]]] = field(default_factory=list)
    cron_jobs: list[CronJob] = field(default_factory=list)
    approvals: dict[str, Any] | None = None

    def add(self, kind: str, what: str, action: str, detail: str = "") -> None:
        self.items.append(PlanItem(kind, what, action, detail))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in self.items:
            out[item.action] = out.get(item.action, 0) + 1
        return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _workspace_files(src: Path, out: MigrationPlan) -> list[Path]:
    """The workspace files to consider, every one a regular file inside ``src`` itself: a symbolic
    link (to a file or a directory) or anything whose real path leaves the workspace is refused
    and reported, never followed (a hostile source could point ``memory/`` at ``~/.ssh``)."""
    root = src.resolve()
    found: list[Path] = []

    def refuse(path: Path, why: str) -> None:
        out.add("file", str(path.relative_to(src)), "error", f"refused: {why}")

    def consider(path: Path) -> None:
        if path.is_symlink():
            refuse(path, "a symbolic link")
        elif not path.resolve().is_relative_to(root):
            refuse(path, "its real path is outside the source")
        elif path.is_file():
            found.append(path)

    for name in WORKSPACE_FILES:
        if os.path.lexists(src / name):
            consider(src / name)
    for dirname in WORKSPACE_DIRS:
        base = src / dirname
        if base.is_symlink():
            refuse(base, "a symbolic link")
            continue
        if not base.is_dir():
            continue
        for parent, dirs, files in os.walk(base, followlinks=False):
            here = Path(parent)
            for d in sorted(dirs):
                if (here / d).is_symlink():
                    refuse(here / d, "a symbolic link")
            dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink())
            for f in sorted(files):
                consider(here / f)
    return found


def _plan_workspace(src: Path | None, target: Path, out: MigrationPlan) -> None:
    if src is None:
        out.add("file", "workspace", "skip", "no workspace found in the source")
        return
    for s in _workspace_files(src, out):
        t = target / s.relative_to(src)
        rel = str(s.relative_to(src))
        if t.exists():
            if t.is_file() and _digest(t) == _digest(s):
                out.add("file", rel, "skip", "already there")
            else:
                out.add("file", rel, "keep", "Homarus's own copy differs and is kept")
            continue
        out.files.append((s, t))
        out.add("file", rel, "carry", str(t))


def _clean_job(raw: dict[str, Any], out: MigrationPlan) -> CronJob | None:
    name = str(raw.get("name") or raw.get("id"))
    if raw.get("declarationKey"):
        out.add("cron", name, "skip", f"created by the original itself ({raw['declarationKey']})")
        return None
    job = {k: v for k, v in raw.items() if k not in ("declarationKey", "displayName", "configRevision")}
    job.setdefault("updatedAtMs", job.get("createdAtMs", int(time.time() * 1000)))
    dropped: list[str] = []
    for _ in range(50):
        try:
            return _carried_job(CronJob.model_validate(job), name, dropped, out)
        except ValidationError as exc:
            path = exc.errors()[0]["loc"]
            node: Any = job
            for part in path[:-1]:
                if isinstance(node, dict) and part in node:
                    node = node[part]  # parts that are not keys are union tags ("agentTurn")
            if not isinstance(node, dict) or path[-1] not in node:
                out.add("cron", name, "error", f"not valid in Homarus: {exc.errors()[0]['msg']}")
                return None
            del node[path[-1]]
            dropped.append(".".join(str(p) for p in path))
    out.add("cron", name, "error", "could not be made valid")
    return None


def _carried_job(job: CronJob, name: str, dropped: list[str], out: MigrationPlan) -> CronJob:
    note = f"left out: {', '.join(dropped)}" if dropped else ""
    out.add("cron", name, "carry", note)
    return job


def _short_id(source_id: str, taken: set[str]) -> str:
    digest = hashlib.sha256(source_id.encode()).hexdigest()
    for start in range(0, len(digest) - 8):
        candidate = digest[start : start + 8]
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    raise ValueError("no free entry id")  # 56 collisions in a row: not in this universe


def _plan_session(rec: SessionRecord, workspace: Path, out: MigrationPlan) -> None:
    what = f"{rec.key} ({rec.session_id})"
    lines = [line for line in rec.lines[1:]]
    kept: list[dict[str, Any]] = []
    previous: str | None = None
    skipped = 0
    taken: set[str] = set()
    for line in lines:
        if line is None:
            skipped += 1
            continue
        entry = dict(line)
        # Homarus ids are 8 hex digits; OpenClaw's newer ones are UUIDs: derived, the chain relinked
        entry["id"] = _short_id(str(line.get("id") or len(taken)), taken)
        entry["parentId"] = previous  # a skipped line must not leave a dangling link
        try:
            ENTRY_ADAPTER.validate_python(entry)
        except ValidationError:
            taken.discard(entry["id"])
            skipped += 1
            continue
        previous = entry["id"]
        kept.append(entry)
    header = {"type": "session", "version": CURRENT_VERSION, "id": rec.session_id, "cwd": str(workspace)}
    first = rec.lines[0] if rec.lines else None
    header["timestamp"] = str((first or {}).get("timestamp") or "")
    entry = {k: rec.entry[k] for k in _ENTRY_FIELDS if rec.entry.get(k) is not None}
    entry.setdefault("sessionId", rec.session_id)
    entry.setdefault("updatedAt", int(time.time() * 1000))
    entry["sessionFile"] = f"{rec.session_id}.jsonl"
    out.sessions.append((rec, [header, *kept], entry))
    detail = f"{len(kept)} transcript entries" + (f", {skipped} unreadable or invalid left out" if skipped else "")
    out.add("session", what, "carry", detail)


def plan(
    state: OpenClawState,
    paths: StatePaths,
    *,
    workspace: Path,
    existing_sessions: set[str],
    existing_jobs: frozenset[str] | set[str] = frozenset(),
) -> MigrationPlan:
    """Everything the migration would do, decided from the source and what the target holds."""
    out = MigrationPlan()
    for where, what in state.problems:
        out.add("source", where, "error", what)
    note = f"its files are copied to {workspace}" if state.workspace is not None else None
    out.config, items = map_config(state.config, workspace_note=note)
    out.items.extend(items)
    _plan_workspace(state.workspace, workspace, out)
    for rec in state.sessions:
        if rec.session_id in existing_sessions:
            out.add("session", f"{rec.key} ({rec.session_id})", "skip", "already migrated")
        else:
            _plan_session(rec, workspace, out)
    for raw in state.cron_jobs:
        if isinstance(raw, dict) and raw.get("id") in existing_jobs:
            out.add("cron", str(raw.get("name") or raw.get("id")), "skip", "already migrated")
            continue
        job = _clean_job(raw, out) if isinstance(raw, dict) else None
        if job is not None:
            out.cron_jobs.append(job)
    if state.exec_approvals:
        out.approvals = state.exec_approvals
        patterns = _approval_patterns(state.exec_approvals)
        out.add(
            "approvals", "exec approvals", "carry", f"{len(patterns)} allowlist pattern(s); socket settings left out"
        )
    return out


def _approval_patterns(raw: dict[str, Any]) -> list[str]:
    patterns: list[str] = []
    for agent in (raw.get("agents") or {}).values():
        for entry in (agent or {}).get("allowlist") or []:
            pattern = entry.get("pattern") if isinstance(entry, dict) else None
            if isinstance(pattern, str) and pattern not in patterns:
                patterns.append(pattern)
    return patterns


def apply(
    out: MigrationPlan,
    paths: StatePaths,
    *,
    sessions_dir: Callable[[str], Path],
    cron_store: Path,
    sessions: SessionBackend | None = None,
) -> list[str]:
    """Write what ``out`` carries (sessions into ``sessions``, the embedded files by default);
    returns what was backed up."""
    backups: list[str] = []
    config_path = paths.config_path
    existing: dict[str, Any] = {}
    if config_path.is_file():
        existing = json.loads(config_path.read_text(encoding="utf-8") or "{}")
    merged = merge_patch(existing, out.config)
    if merged != existing:
        if config_path.is_file():
            backup = config_path.with_name(f"{config_path.name}.bak-{int(time.time() * 1000)}")
            shutil.copy2(config_path, backup)
            backups.append(str(backup))
        atomic_write(config_path, json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    for src, target in out.files:
        ensure_private_dir(target.parent)
        # the file's own mode, never looser than the source had it (a 0600 note stays 0600)
        atomic_write(target, _read_regular(src), mode=(stat.S_IMODE(src.stat().st_mode) & ~0o022) | 0o600)
    if out.sessions:
        _write_sessions(out, sessions_dir, sessions)
    if out.cron_jobs:
        _write_cron(out.cron_jobs, cron_store)
    if out.approvals:
        _write_approvals(out.approvals, paths.state_dir)
    return backups


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path``, refusing a link that appeared since the plan was made."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _write_sessions(out: MigrationPlan, sessions_dir: Callable[[str], Path], backend: SessionBackend | None) -> None:
    from homarus.sessions.backend import EmbeddedSessions, WholeTranscript
    from homarus.sessions.store import Maintenance

    backend = backend or EmbeddedSessions()
    for agent_id in sorted({rec.agent_id for rec, _, _ in out.sessions}):
        directory = sessions_dir(agent_id)
        mine = [(rec, lines, entry) for rec, lines, entry in out.sessions if rec.agent_id == agent_id]
        for rec, lines, _entry in mine:  # transcripts first: an entry never names a missing file
            path = directory / f"{rec.session_id}.jsonl"
            backend.import_transcript(WholeTranscript(agent_id, rec.session_id, path, lines[0], lines[1:]))
        store = backend.index(agent_id, directory, Maintenance())
        try:
            store.add_missing({rec.key: entry for rec, _lines, entry in mine})
        finally:
            store.close()


def _write_cron(jobs: list[CronJob], path: Path) -> None:
    from homarus.cron.store import CronStore

    store = CronStore(path)
    store.load()
    for job in jobs:
        store.jobs.setdefault(job.id, job)
    ensure_private_dir(path.parent)
    store.write(store.snapshot())


def _write_approvals(raw: dict[str, Any], state_dir: Path) -> None:
    from homarus.security import exec_approvals_file as approvals

    path = approvals.approvals_path(state_dir)
    current = approvals.load(path) if path.exists() else approvals.ExecApprovalsFile()
    defaults = raw.get("defaults") or {}
    policy = approvals.ExecPolicySettings(
        defaults.get("security") or current.policy.security,
        defaults.get("ask") or current.policy.ask,
        defaults.get("askFallback") or current.policy.ask_fallback,
    )
    patterns = [*current.patterns, *(p for p in _approval_patterns(raw) if p not in current.patterns)]
    approvals.save(path, approvals.ExecApprovalsFile(policy, tuple(patterns), dict(current.added_at_ms)))
