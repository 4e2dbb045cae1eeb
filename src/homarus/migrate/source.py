"""Reading an OpenClaw state directory, never writing to it.

What is read, for each kind, from whichever place the source's version keeps it:

* the config: ``openclaw.json`` (JSON5; ``$include`` of other files, merged; ``${ENV}`` references
  kept as written, since Homarus resolves them the same way);
* sessions: the per-agent SQLite store ``agents/<id>/agent/openclaw-agent.sqlite``
  (``session_nodes`` + ``transcript_events``; 2026.x) or the older files
  ``agents/<id>/sessions/sessions.json`` + ``<sessionId>.jsonl``;
* cron jobs: ``state/openclaw.sqlite`` (``cron_jobs``) or ``cron/jobs.json``;
* exec approvals: ``state/openclaw.sqlite`` (``exec_approvals_config``) or ``exec-approvals.json``;
* the workspace: ``agents.defaults.workspace`` if it exists, else ``workspace/`` beside or above
  the state directory.

The source is untrusted input: a SQLite store is copied (with its WAL) into a private temporary
directory and read there, so nothing — not even SQLite's ``-shm`` index — is created in the
source, and it cannot be locked or checkpointed; a session id that could not be a file name
(``[A-Za-z0-9._-]{1,128}``, no ``..``) is refused. Everything that cannot be read is reported as a
problem and the rest is still read.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import json5

__all__ = ["OpenClawState", "SessionRecord", "read_state"]

CONFIG_NAME: Final = "openclaw.json"
MAX_INCLUDES: Final = 32


@dataclass(slots=True)
class SessionRecord:
    agent_id: str
    key: str
    session_id: str
    entry: dict[str, Any]
    #: transcript lines (header first), each parsed; ``None`` marks a line that could not be read
    lines: list[dict[str, Any] | None]
    source: str


@dataclass(slots=True)
class OpenClawState:
    root: Path
    config: dict[str, Any] = field(default_factory=dict)
    config_path: Path | None = None
    workspace: Path | None = None
    sessions: list[SessionRecord] = field(default_factory=list)
    cron_jobs: list[dict[str, Any]] = field(default_factory=list)
    exec_approvals: dict[str, Any] | None = None
    #: (where, what went wrong): reported line by line, never fatal
    problems: list[tuple[str, str]] = field(default_factory=list)


@contextlib.contextmanager
def _readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """The store at ``path``, read from a private copy (with its ``-wal``, where recent writes of a
    running original may still sit): SQLite writes an ``-shm`` beside any WAL database it opens,
    even read-only, and the source must stay exactly as it was."""
    with tempfile.TemporaryDirectory(prefix="homarus-migrate-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        wal = path.with_name(path.name + "-wal")
        if wal.is_file() and not wal.is_symlink():
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        db = sqlite3.connect(copy)
        try:
            yield db
        finally:
            db.close()


def _safe_session_id(session_id: Any, where: str, state: OpenClawState) -> str | None:
    from homarus.errors import InvalidRequest
    from homarus.sessions.keys import valid_session_id

    try:
        return valid_session_id(str(session_id))
    except InvalidRequest as exc:
        state.problems.append((where, f"{exc.message}; the session is refused"))
        return None


def _load_json5(path: Path, state: OpenClawState, depth: int = 0) -> dict[str, Any]:
    try:
        data = json5.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        state.problems.append((str(path), f"cannot read: {exc}"))
        return {}
    if not isinstance(data, dict):
        state.problems.append((str(path), "not a JSON object"))
        return {}
    return _resolve_includes(data, path.parent, state, depth)


def _resolve_includes(data: dict[str, Any], base: Path, state: OpenClawState, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    include = data.get("$include")
    if include is not None:
        names = include if isinstance(include, list) else [include]
        for name in names:
            if depth >= MAX_INCLUDES or not isinstance(name, str):
                state.problems.append((str(base), f"$include {name!r} skipped"))
                continue
            out = _merge(out, _load_json5((base / name).expanduser(), state, depth + 1))
    for key, value in data.items():
        if key == "$include":
            continue
        out[key] = _resolve_includes(value, base, state, depth) if isinstance(value, dict) else value
    return out


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        out[key] = _merge(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def _find_config(root: Path) -> Path | None:
    for candidate in (root / CONFIG_NAME, root / "state" / CONFIG_NAME, root / ".openclaw" / CONFIG_NAME):
        if candidate.is_file():
            return candidate
    return None


def _workspace(state: OpenClawState, state_dir: Path) -> Path | None:
    configured = ((state.config.get("agents") or {}).get("defaults") or {}).get("workspace")
    candidates = []
    if isinstance(configured, str) and "${" not in configured:
        candidates.append(Path(configured).expanduser())
    candidates += [state_dir / "workspace", state_dir.parent / "workspace"]
    for path in candidates:
        if path.is_dir():
            if isinstance(configured, str) and path != candidates[0]:
                state.problems.append(("agents.defaults.workspace", f"{configured} not found; used {path}"))
            return path
    return None


def _sqlite_sessions(db_path: Path, agent_id: str, state: OpenClawState) -> None:
    try:
        with _readonly(db_path) as db:
            nodes = db.execute("SELECT session_key, current_session_id, entry_json FROM session_nodes").fetchall()
            for key, raw_id, entry_json in nodes:
                session_id = _safe_session_id(raw_id, f"{db_path}:{key}", state)
                if session_id is None:
                    continue
                try:
                    entry = json.loads(entry_json)
                except ValueError:
                    state.problems.append((f"{db_path}:{key}", "session entry is not JSON; skipped"))
                    continue
                lines: list[dict[str, Any] | None] = []
                rows = db.execute(
                    "SELECT seq, event_json FROM transcript_events WHERE session_id=? ORDER BY seq", (session_id,)
                ).fetchall()
                for seq, event_json in rows:
                    try:
                        value = json.loads(event_json) if event_json is not None else None
                    except ValueError:
                        value = None
                    if not isinstance(value, dict):
                        state.problems.append(
                            (f"{db_path}:{key}#{seq}", "transcript event not readable (compressed or corrupt)")
                        )
                        value = None
                    lines.append(value)
                state.sessions.append(SessionRecord(agent_id, key, session_id, entry, lines, str(db_path)))
    except sqlite3.Error as exc:
        state.problems.append((str(db_path), f"cannot read the session store: {exc}"))


def _file_sessions(directory: Path, agent_id: str, state: OpenClawState) -> None:
    store = directory / "sessions.json"
    try:
        entries = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        state.problems.append((str(store), f"cannot read: {exc}"))
        return
    for key, entry in entries.items() if isinstance(entries, dict) else []:
        raw_id = entry.get("sessionId") if isinstance(entry, dict) else None
        if not isinstance(raw_id, str):
            state.problems.append((f"{store}:{key}", "entry without sessionId; skipped"))
            continue
        session_id = _safe_session_id(raw_id, f"{store}:{key}", state)
        if session_id is None:
            continue
        lines: list[dict[str, Any] | None] = []
        path = directory / f"{session_id}.jsonl"
        try:
            if path.is_symlink():
                raise OSError("a symbolic link")
            raw_lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            raw_lines = []
            state.problems.append((str(path), "transcript missing; the session keeps its entry only"))
        for n, raw in enumerate(raw_lines, 1):
            try:
                value = json.loads(raw)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                state.problems.append((f"{path}:{n}", "not a JSON object; skipped"))
                value = None
            lines.append(value)
        state.sessions.append(SessionRecord(agent_id, key, session_id, entry, lines, str(path)))


def _agent_ids(state_dir: Path) -> list[str]:
    agents = state_dir / "agents"
    return sorted(p.name for p in agents.iterdir() if p.is_dir()) if agents.is_dir() else []


def _cron_and_approvals(state_dir: Path, state: OpenClawState) -> None:
    db_path = state_dir / "state" / "openclaw.sqlite"
    if db_path.is_file():
        try:
            with _readonly(db_path) as db:
                for job_id, job_json in db.execute("SELECT job_id, job_json FROM cron_jobs ORDER BY rowid"):
                    try:
                        state.cron_jobs.append(json.loads(job_json))
                    except ValueError:
                        state.problems.append((f"{db_path}:cron:{job_id}", "job is not JSON; skipped"))
                row = db.execute("SELECT raw_json FROM exec_approvals_config WHERE config_key='current'").fetchone()
                if row is not None:
                    state.exec_approvals = json.loads(row[0])
        except (sqlite3.Error, ValueError) as exc:
            state.problems.append((str(db_path), f"cannot read: {exc}"))
    jobs_file = state_dir / "cron" / "jobs.json"
    if not state.cron_jobs and jobs_file.is_file():
        try:
            state.cron_jobs = list(json.loads(jobs_file.read_text(encoding="utf-8")).get("jobs") or [])
        except (OSError, ValueError, AttributeError) as exc:
            state.problems.append((str(jobs_file), f"cannot read: {exc}"))
    approvals_file = state_dir / "exec-approvals.json"
    if state.exec_approvals is None and approvals_file.is_file():
        try:
            state.exec_approvals = json.loads(approvals_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            state.problems.append((str(approvals_file), f"cannot read: {exc}"))


def read_state(root: Path) -> OpenClawState:
    """Everything of the OpenClaw state under ``root`` (the directory holding ``openclaw.json``,
    or its parent)."""
    root = root.expanduser()
    state = OpenClawState(root)
    config_path = _find_config(root)
    if config_path is None:
        state.problems.append((str(root), f"no {CONFIG_NAME} found"))
        state_dir = root
    else:
        state.config_path = config_path
        state.config = _load_json5(config_path, state)
        state_dir = config_path.parent
    state.workspace = _workspace(state, state_dir)
    for agent_id in _agent_ids(state_dir):
        agent_dir = state_dir / "agents" / agent_id
        db_path = agent_dir / "agent" / "openclaw-agent.sqlite"
        if db_path.is_file():
            _sqlite_sessions(db_path, agent_id, state)
        elif (agent_dir / "sessions" / "sessions.json").is_file():
            _file_sessions(agent_dir / "sessions", agent_id, state)
    _cron_and_approvals(state_dir, state)
    return state
