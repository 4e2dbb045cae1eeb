"""``homarus storage migrate --from embedded --to postgres``: move an installation's state into
the PostgreSQL database of ``storage.postgres.url`` (what is shared there: every agent's sessions
and transcripts, ``sessions/transfer.py``, the run journal, ``queue/pg_journal.py``, the cron jobs
and their run logs, ``cron/pg_store.py``, the channels' inbox, cursors, outbox and pairing,
``channels/pg_db.py``); and the
PostgreSQL session backend for the commands that work without a gateway (``homarus sessions``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from homarus.errors import HomarusError

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig
    from homarus.sessions.pg_backend import PostgresSessions
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["add_storage_parser", "postgres_database", "postgres_sessions", "run_storage"]


def add_storage_parser(st: argparse.ArgumentParser) -> None:
    sub = st.add_subparsers(dest="storage_command", metavar="SUBCOMMAND")
    mig = sub.add_parser("migrate", help="copy the embedded state into PostgreSQL (storage.postgres.url)")
    mig.add_argument("--from", dest="source", choices=["embedded"], required=True, help="where the state is now")
    mig.add_argument("--to", dest="target", choices=["postgres"], required=True, help="where it goes")
    mig.add_argument("--dry-run", action="store_true", help="count what would be copied, write nothing")
    mig.add_argument("--json", action="store_true", help="the report as JSON")


@contextmanager
def postgres_sessions(cfg: HomarusConfig) -> Iterator[PostgresSessions]:
    """The sessions of ``storage.postgres.url``, its schema brought up to date first (as a gateway
    does at start); raises ``StorageUnavailable`` or ``SchemaTooNew`` with the reason."""
    from homarus.sessions.pg_backend import PostgresSessions

    with postgres_database(cfg) as db:
        yield PostgresSessions(db)


@contextmanager
def postgres_database(cfg: HomarusConfig) -> Iterator[BlockingDatabase]:
    """The database of ``storage.postgres.url`` for a command without a gateway, its schema
    brought up to date first; raises ``StorageUnavailable`` or ``SchemaTooNew`` with the reason."""
    from homarus.storage.blocking import BlockingDatabase
    from homarus.storage.migrations import migrate_at

    pg = cfg.storage.postgres
    if pg.url is None:
        raise HomarusError("storage.postgres.url is not set (homarus config set storage.postgres.url postgresql://…)")
    url = pg.url.get_secret_value()
    asyncio.run(migrate_at(url, timeout_s=pg.connect_timeout_seconds))
    db = BlockingDatabase(
        url, max_size=2, timeout_s=pg.connect_timeout_seconds, statement_timeout_ms=pg.statement_timeout_ms
    )
    try:
        yield db
    finally:
        db.close()


def _copy_cron(cfg: HomarusConfig, paths: StatePaths, db: BlockingDatabase, *, dry_run: bool) -> tuple[int, int, int]:
    """The cron jobs file and the run logs of the jobs copied: (jobs, copied, run-log entries)."""
    from homarus.cron.pg_runlog import PgRunLog
    from homarus.cron.pg_store import import_jobs
    from homarus.cron.runlog import RunLog
    from homarus.cron.store import CronStore

    path = cfg.cron.store_path(paths.state_dir)
    jobs = CronStore(path).load()  # a file that does not parse stops the move (CronStoreCorrupt)
    if not jobs:
        return 0, 0, 0
    copied, _present = import_jobs(db, jobs.values(), dry_run=dry_run)
    history, target, entries = RunLog(path.parent / "runs"), PgRunLog(db, keep_lines=cfg.cron.run_log.keep_lines), 0
    for job_id in copied:
        found = history.entries(job_id)[::-1]  # oldest first
        entries += len(found)
        if not dry_run:
            target.import_entries(job_id, found)
    return len(jobs), len(copied), entries


def _copy_memory(
    cfg: HomarusConfig, paths: StatePaths, db: BlockingDatabase, *, dry_run: bool
) -> dict[str, tuple[int, int]]:
    """Each agent's embedding cache: {agent: (vectors found, added)} for agents with an index file."""
    from homarus.memory.manager import resolve_db_path
    from homarus.memory.pg_store import import_embedding_cache

    memory = cfg.agents.defaults.memory_search
    out: dict[str, tuple[int, int]] = {}
    for agent_id in cfg.agents.ids:
        path = resolve_db_path(memory, paths.state_dir, agent_id)
        if path.is_file():
            out[agent_id] = import_embedding_cache(db.connection, agent_id, path, dry_run=dry_run)
    return out


def _copy_exec_approvals(paths: StatePaths, db: BlockingDatabase, *, dry_run: bool) -> tuple[int, bool]:
    """The host's exec approvals file: (allow-always patterns in it, or -1 without a file; copied).
    A cluster that has its approvals already keeps them."""
    from homarus.security.exec_approvals_file import approvals_path, load
    from homarus.security.pg_exec_approvals import PgExecApprovals

    path = approvals_path(paths.state_dir)
    if not path.exists():
        return -1, False
    approvals = load(path)  # an unsafe or malformed file stops the move, as it stops exec
    if dry_run:
        return len(approvals.patterns), False
    return len(approvals.patterns), PgExecApprovals(db).import_document(approvals)


def _tables_line(label: str, report: dict[str, tuple[int, int]], verb: str | None) -> str:
    """``label: table n, …; copied m row(s)`` (without the copy on a dry run: ``verb`` None)."""
    line = f"{label}: " + ", ".join(f"{table} {n}" for table, (n, _) in report.items())
    return line + (f"; {verb} {sum(added for _, added in report.values())} row(s)" if verb else "")


def run_storage(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.channels.pg_db import import_channels
    from homarus.cli.client import fail
    from homarus.config.loader import load_config
    from homarus.queue.pg_journal import import_runs
    from homarus.security.devices import import_devices
    from homarus.sessions.transfer import copy_sessions
    from homarus.storage.statements import import_tables
    from homarus.usage.ledger import COLUMNS, ledger_path

    if args.storage_command != "migrate":
        return fail("usage: homarus storage migrate --from embedded --to postgres [--dry-run]", 2)
    cfg = load_config(paths).config
    try:
        with postgres_sessions(cfg) as target:
            report = copy_sessions(paths.state_dir, target, dry_run=args.dry_run)
            runs, unfinished, runs_added = import_runs(target.db, paths.state_dir / "runs.sqlite", dry_run=args.dry_run)
            cron = _copy_cron(cfg, paths, target.db, dry_run=args.dry_run)
            channels = import_channels(target.db, paths.state_dir / "channels.sqlite", dry_run=args.dry_run)
            memory = _copy_memory(cfg, paths, target.db, dry_run=args.dry_run)
            approvals = _copy_exec_approvals(paths, target.db, dry_run=args.dry_run)
            devices = import_devices(target.db, paths.state_dir / "devices.sqlite", dry_run=args.dry_run)
            usage = import_tables(
                target.db, ledger_path(paths.state_dir), {"usage": COLUMNS}, dry_run=args.dry_run, in_order=False
            )
    except HomarusError as exc:
        return fail(f"cannot migrate: {exc.message}")
    if args.json:
        out = {
            "dryRun": bool(args.dry_run),
            "agents": [a.to_json() for a in report],
            "runs": {"found": runs, "unfinished": unfinished, "added": runs_added},
            "cron": {"jobs": cron[0], "added": cron[1], "history": cron[2]},
            "channels": {table: {"found": n, "added": added} for table, (n, added) in channels.items()},
            "memory": {agent: {"vectors": n, "added": added} for agent, (n, added) in memory.items()},
            "execApprovals": None if approvals[0] < 0 else {"patterns": approvals[0], "added": approvals[1]},
            "devices": {table: {"found": n, "added": added} for table, (n, added) in devices.items()},
            "usage": {"found": usage["usage"][0], "added": usage["usage"][1]} if usage else None,
        }
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    verb = "would copy" if args.dry_run else "copied"
    copied_any = report or runs or cron[0] or channels or memory or approvals[0] >= 0 or devices or usage
    if not copied_any:
        print(
            f"nothing to copy: no sessions under {paths.state_dir / 'agents'}, no run journal, no cron jobs, "
            "no channel store, no memory index, no exec approvals file, no paired devices, no usage ledger"
        )
    for a in report:
        line = f"agent {a.agent_id}: {a.sessions} session(s), {a.transcripts} transcript(s) ({a.archived} set aside), "
        line += f"{a.entries} entries"
        if not args.dry_run:
            kept = (a.sessions - a.sessions_added) + (a.transcripts - a.transcripts_added)
            line += f"; {verb} {a.sessions_added} session(s) and {a.transcripts_added} transcript(s)"
            line += f", {kept} already there (kept)" if kept else ""
        print(line)
        for name, count in sorted(a.skipped_lines.items()):
            print(f"  {name}: {count} line(s) that do not parse, left out")
    if runs:
        line = f"run journal: {runs} run(s), {unfinished} unfinished"
        if not args.dry_run:
            line += f"; {verb} {runs_added}" + (
                f", {runs - runs_added} already there (kept)" if runs > runs_added else ""
            )
            line += " (the first gateway to start takes the unfinished ones up)" if unfinished else ""
        print(line)
    if cron[0]:
        line = f"cron: {cron[0]} job(s)"
        if not args.dry_run:
            line += f"; {verb} {cron[1]} with {cron[2]} run-log entries"
            line += f", {cron[0] - cron[1]} already there (kept)" if cron[0] > cron[1] else ""
        print(line)
    if channels:
        print(_tables_line("channel store", channels, verb if not args.dry_run else None))
    for agent_id, (n, added) in memory.items():
        line = f"memory of agent {agent_id}: {n} cached vector(s)"
        if not args.dry_run:
            line += f"; {verb} {added} (the first sync builds the shared index from the memory files without"
            line += " embedding them again)"
        print(line)
    if approvals[0] >= 0:
        line = f"exec approvals: {approvals[0]} allow-always pattern(s)"
        if not args.dry_run:
            line += f"; {verb}" if approvals[1] else "; the cluster has its own already (kept, not copied)"
        print(line)
    if devices:
        print(_tables_line("paired devices", devices, verb if not args.dry_run else None))
    if usage:
        line = f"usage ledger: {usage['usage'][0]} hourly row(s)"
        if not args.dry_run:
            line += f"; {verb} {usage['usage'][1]}"
        print(line)
    if not args.dry_run and copied_any:
        print(
            "the embedded files are left as they were; set storage.backend to postgres and restart the "
            "gateway (stop it before migrating: what it writes meanwhile is not copied)"
        )
    return 0
