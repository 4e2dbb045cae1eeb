"""`homarus migrate openclaw [--from DIR] [--dry-run] [--json]`: bring an OpenClaw user's state over.

Reads the original's state directory (never writes to it), prints the plan — every config key,
workspace file, session, cron job and approval carried, renamed, kept or left out, with the
reason — and, unless ``--dry-run``, writes Homarus's state. Safe to run again. Stop the Homarus
gateway first: the session store and the cron store are written directly.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.errors import HomarusError

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["add_migrate_parser", "run_migrate"]

_SYMBOL = {"carry": "+", "rename": "~", "keep": "=", "skip": "-", "error": "!"}


def add_migrate_parser(mg: argparse.ArgumentParser) -> None:
    ms = mg.add_subparsers(dest="migrate_command", metavar="SOURCE")
    oc = ms.add_parser("openclaw", help="config, workspace, sessions, cron jobs and exec approvals of OpenClaw")
    oc.add_argument("--from", dest="source", default="~/.openclaw", help="the OpenClaw state dir (default ~/.openclaw)")
    oc.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    oc.add_argument("--json", action="store_true", help="the plan as JSON")


def run_migrate(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import fail
    from homarus.config.loader import load_config
    from homarus.migrate.apply import apply, plan
    from homarus.migrate.source import read_state
    from homarus.sessions.backend import EmbeddedSessions, SessionBackend
    from homarus.sessions.store import Maintenance

    if args.migrate_command != "openclaw":
        return fail("usage: homarus migrate openclaw [--from DIR] [--dry-run]", 2)
    source = Path(args.source).expanduser()
    if not source.is_dir():
        return fail(f"no OpenClaw state at {source} (pass --from DIR)", 2)
    state = read_state(source)
    cfg = load_config(paths).config
    workspace = cfg.agents.workspace_for(cfg.agents.default_id, paths.state_dir)

    def sessions_dir(agent_id: str) -> Path:
        return paths.state_dir / "agents" / agent_id / "sessions"

    try:
        with contextlib.ExitStack() as stack:
            sessions: SessionBackend = EmbeddedSessions()
            if cfg.storage.backend == "postgres":  # the sessions go where the gateway keeps them
                from homarus.cli.storage_cmd import postgres_sessions

                sessions = stack.enter_context(postgres_sessions(cfg))
            existing: set[str] = set()
            for agent_id in sorted({rec.agent_id for rec in state.sessions}):
                store = sessions.index(agent_id, sessions_dir(agent_id), Maintenance())
                try:
                    existing |= {str(e.get("sessionId")) for e in store.read().values()}
                finally:
                    store.close()
            cron_path = cfg.cron.store_path(paths.state_dir)
            jobs: set[str] = set()
            if cron_path.is_file():
                from homarus.cron.store import CronStore

                jobs = set(CronStore(cron_path).load())
            the_plan = plan(state, paths, workspace=workspace, existing_sessions=existing, existing_jobs=jobs)
            backups: list[str] = []
            if not args.dry_run:
                backups = apply(the_plan, paths, sessions_dir=sessions_dir, cron_store=cron_path, sessions=sessions)
    except HomarusError as exc:
        return fail(f"cannot migrate: {exc.message}")
    _print(args, the_plan, source, backups)
    return 0


def _print(args: argparse.Namespace, the_plan: Any, source: Path, backups: list[str]) -> None:
    if args.json:
        out = {
            "source": str(source),
            "dryRun": bool(args.dry_run),
            "items": [i.to_json() for i in the_plan.items],
            "counts": the_plan.counts(),
            "backups": backups,
        }
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
        return
    print(f"{'plan (dry run: nothing written)' if args.dry_run else 'migrated'} from {source}")
    for kind in ("source", "config", "file", "session", "cron", "approvals"):
        items = [i for i in the_plan.items if i.kind == kind]
        if not items:
            continue
        print(f"\n{kind}:")
        for item in items:
            detail = f" = {item.detail}" if kind == "config" and item.action == "carry" and item.detail else ""
            detail = detail or (f"  ({item.detail})" if item.detail else "")
            print(f"  {_SYMBOL.get(item.action, '?')} {item.action:<6} {item.what}{detail}")
            if item.security:
                print(f"           ⚠ security: {item.security}")
    flagged = [i for i in the_plan.items if i.security]
    if flagged:
        print(f"\n⚠ {len(flagged)} carried setting(s) matter for security: read them before you run the gateway")
    counts = ", ".join(f"{n} {action}" for action, n in sorted(the_plan.counts().items()))
    print(f"\n{counts}")
    for backup in backups:
        print(f"the previous config was saved as {backup}")
    if not args.dry_run:
        print("next: make run (or homarus gateway run); your sessions continue where they were")
