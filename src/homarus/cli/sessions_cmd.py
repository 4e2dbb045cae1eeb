"""`homarus sessions list|show|reset|delete`, straight on the store files (same locks as the gateway)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from homarus.config.loader import StatePaths, load_config
from homarus.errors import HomarusError
from homarus.sessions.manager import SessionManager
from homarus.sessions.store import Maintenance
from homarus.sessions.views import message_text, session_row, visible_messages

__all__ = ["run_sessions"]


@contextmanager
def _manager(paths: StatePaths) -> Iterator[SessionManager]:
    """The sessions where the gateway keeps them: the state directory, or with ``storage.backend:
    postgres`` the database (its schema brought up to date first, as a gateway does at start)."""
    cfg = load_config(paths).config
    m = cfg.session.maintenance
    with contextlib.ExitStack() as stack:
        backend = None
        if cfg.storage.backend == "postgres":
            from homarus.cli.storage_cmd import postgres_sessions

            backend = stack.enter_context(postgres_sessions(cfg))
        mgr = SessionManager(
            paths.state_dir,
            agent_ids=cfg.agents.ids,
            default_agent=cfg.agents.default_id,
            main_key=cfg.session.main_key,
            maintenance=Maintenance(m.mode, m.prune_after_ms, m.max_entries),
            workspace=cfg.agents.defaults.workspace,
            backend=backend,
        )
        stack.callback(mgr.close)
        yield mgr


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def run_sessions(args: argparse.Namespace, paths: StatePaths) -> int:
    try:
        with _manager(paths) as mgr:
            return _run(mgr, args)
    except HomarusError as exc:
        print(f"homarus: {exc.message}", file=sys.stderr)
        return 1


def _run(mgr: SessionManager, args: argparse.Namespace) -> int:
    sub = args.sessions_command
    if sub == "list":
        return _list(mgr, args)
    if sub == "show":
        return _show(mgr, args)
    if sub == "reset":
        ref, archived = mgr.reset(mgr.resolve_key(args.key))
        print(f"reset {ref.key}: new session {ref.entry.session_id}" + (f"; archived {archived}" if archived else ""))
        return 0
    if sub == "delete":
        deleted, archived_files = mgr.delete(mgr.resolve_key(args.key), delete_transcript=not args.keep_transcript)
        if not deleted:
            print(f"homarus: no such session: {args.key}", file=sys.stderr)
            return 1
        print(f"deleted {args.key}" + (f"; archived {', '.join(archived_files)}" if archived_files else ""))
        return 0
    print("usage: homarus sessions {list,show,reset,delete}", file=sys.stderr)
    return 2


def _list(mgr: SessionManager, args: argparse.Namespace) -> int:
    agent = mgr.resolve_key(None, args.agent).agent_id if args.agent else None
    rows = [session_row(mgr.resolve_key(k), e) for _, k, e in mgr.all_entries(agent)[: args.limit]]
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not rows:
        print("no sessions")
        return 0
    for row in rows:
        label = f"  [{row['label']}]" if row.get("label") else ""
        status = f"  {row['status']}" if row.get("status") else ""
        print(f"{_when(row['updatedAt'])}  {row['key']}{label}{status}")
    return 0


def _show(mgr: SessionManager, args: argparse.Namespace) -> int:
    ref = mgr.require(mgr.resolve_key(args.key))
    view = mgr.transcript_for(ref).read()
    messages = visible_messages(view.entries)[-args.limit :]
    if args.json:
        out: dict[str, Any] = {"key": ref.key.canonical, "entry": ref.entry.to_json(), "messages": messages}
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
        return 0
    print(f"{ref.key}  session {ref.entry.session_id}  updated {_when(ref.entry.updated_at)}")
    for name, value in ref.entry.to_json().items():
        if name not in ("sessionId", "updatedAt", "sessionFile"):
            print(f"  {name}: {json.dumps(value, ensure_ascii=False)}")
    if view.torn_tail:
        print("  (the transcript ends with a torn line from an interrupted write; it is ignored)")
    for message in messages:
        print(f"--- {message.get('role')}")
        print(message_text(message))
    return 0
