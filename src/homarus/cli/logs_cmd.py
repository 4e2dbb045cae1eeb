"""`homarus logs [--follow] [--run RUNID] [--limit N] [--json] [--raw-stream]`: read the audit trail.

Reads ``$STATE/logs`` directly (no gateway needed), or with ``storage.backend: postgres`` the
cluster's shared trail (every gateway's records); ``--follow`` polls for new records.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.audit.log import AuditStore
    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig

__all__ = ["add_logs_parser", "run_logs"]

FOLLOW_POLL_S = 0.5


def add_logs_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", metavar="RUNID", help="only this run's records")
    p.add_argument("--limit", type=int, default=50, help="records to show (default 50)")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new records")
    p.add_argument("--json", action="store_true", help="print raw JSON lines")
    p.add_argument("--raw-stream", action="store_true", help="the raw model stream log instead (logging.rawStream)")
    p.add_argument("--gateway", action="store_true", help="the gateway service's own log (journal / log file)")


def _line(r: dict[str, Any]) -> str:
    from homarus.audit.summary import describe

    ts = datetime.fromtimestamp(int(r.get("ts", 0)) / 1000).strftime("%Y-%m-%d %H:%M:%S")
    return f"{ts} {describe(r)}"


def run_logs(args: argparse.Namespace, paths: StatePaths) -> int:
    if args.gateway:
        from homarus.cli.service_cmd import follow_gateway_log

        return follow_gateway_log(max(1, args.limit), args.follow)
    # only when the command runs: `--help` stays light
    from homarus.audit.log import AuditLog
    from homarus.config.loader import load_config

    directory = paths.state_dir / "logs"
    prefix = "raw-stream" if args.raw_stream else "audit"
    try:
        cfg: HomarusConfig | None = load_config(paths).config
    except Exception:  # the trail stays readable with a config that does not load
        cfg = None
    if cfg is not None and cfg.present("storage") and cfg.storage.backend == "postgres":
        return _shared_logs(args, cfg, prefix)
    return _show(args, AuditLog(directory, prefix=prefix), f"{prefix} records", str(directory))


def _shared_logs(args: argparse.Namespace, cfg: HomarusConfig, prefix: str) -> int:
    """The cluster's trail (``storage.backend: postgres``): every gateway's records."""
    from homarus.audit.pg_log import PgAuditLog
    from homarus.cli.storage_cmd import postgres_database
    from homarus.errors import HomarusError

    try:
        with postgres_database(cfg) as db:
            trail = PgAuditLog(db, "homarus-cli", prefix=prefix)
            return _show(args, trail, f"{prefix} records", f"PostgreSQL at {db.where}")
    except HomarusError as exc:
        print(f"homarus: cannot read the logs: {exc.message}", file=sys.stderr)
        return 1


def _show(args: argparse.Namespace, trail: AuditStore, what: str, where: str) -> int:
    """Print the last records, then (``--follow``) what comes, polling the trail."""
    show = (lambda r: json.dumps(r, ensure_ascii=False)) if args.json else _line
    tail = trail.tail(limit=max(1, args.limit), run_id=args.run)
    if tail.file is None and not args.follow:
        print(f"no {what} yet in {where}")
        return 0
    for record in tail.records:
        print(show(record), flush=True)
    cursor, current = tail.cursor, tail.file
    while args.follow:
        time.sleep(FOLLOW_POLL_S)
        more = trail.tail(limit=10_000, run_id=args.run, cursor=cursor)
        if more.file != current:  # a new day's file or a rotation: read the new file from its start
            more = trail.tail(limit=10_000, run_id=args.run, cursor=0)
            current = more.file
        for record in more.records:
            print(show(record), flush=True)
        cursor = more.cursor
    return 0
