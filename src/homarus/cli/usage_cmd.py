"""``homarus usage``: what the model calls cost, read from the usage ledger (no gateway needed:
the file is SQLite in WAL mode, read while the gateway writes it; with the postgres backend, the
table every gateway of the cluster adds to)."""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING, Any

from homarus.config.paths import StatePaths
from homarus.errors import HomarusError

if TYPE_CHECKING:
    from homarus.usage.ledger import Row

__all__ = ["add_usage_parser", "run_usage"]

TOP = 10


def add_usage_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--days", type=int, default=30, help="days back from today (default 30)")
    p.add_argument("--since", metavar="YYYY-MM-DD", help="from this day (with --until)")
    p.add_argument("--until", metavar="YYYY-MM-DD", help="to this day (with --since)")
    p.add_argument("--agent", metavar="ID", help="one agent's usage (default: every agent's)")
    p.add_argument("--tz", metavar="ZONE", help="cut days at this IANA time zone's midnight (default UTC)")
    p.add_argument("--json", action="store_true", help="the usage.cost answer as JSON")


def _rows(paths: StatePaths, start_ms: int, end_ms: int, agent: str | None) -> list[Row]:
    """The ledger's rows: the state dir's file, or the cluster's table with the postgres backend."""
    from homarus.config.loader import load_config
    from homarus.usage.ledger import UsageLedger, ledger_path

    cfg = load_config(paths).config
    if cfg.storage.backend == "postgres":
        from homarus.cli.storage_cmd import postgres_database
        from homarus.usage.pg_ledger import PgUsageLedger

        with postgres_database(cfg) as db:
            return PgUsageLedger(db).rows(start_ms, end_ms, agent)
    ledger = UsageLedger(ledger_path(paths.state_dir))
    try:
        return ledger.rows(start_ms, end_ms, agent)
    finally:
        ledger.close()


def run_usage(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.usage.report import cost_summary, date_range

    try:
        period = date_range(
            days=args.days,
            start_date=args.since,
            end_date=args.until,
            mode="specific" if args.tz else None,
            time_zone=args.tz,
        )
        rows = _rows(paths, period.start_ms, period.end_ms, args.agent)
    except HomarusError as exc:
        print(f"homarus usage: {exc.message}")
        return 1
    summary = cost_summary(rows, period, updated_at=int(time.time() * 1000))
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for line in _table(summary):
        print(line)
    return 0


def _money(value: float) -> str:
    return f"${value:,.4f}" if 0 < value < 0.01 else f"${value:,.2f}"


def _row(label: str, totals: dict[str, Any], calls: int | None = None) -> str:
    calls_text = "" if calls is None else f"{calls:>7,}"
    return (
        f"{label[:44]:<44} {calls_text:>7} {totals['input']:>12,} {totals['output']:>10,} "
        f"{totals['cacheRead']:>10,} {_money(totals['totalCost']):>11}"
    )


def _table(s: dict[str, Any]) -> list[str]:
    head = f"{'':<44} {'calls':>7} {'input':>12} {'output':>10} {'cache rd':>10} {'cost':>11}"
    t = s["totals"]
    calls = sum(m["count"] for m in s["byModel"])
    lines = [f"usage {s['startDate']} to {s['endDate']} ({s['days']} days)", head, _row("total", t, calls)]
    if t["missingCostEntries"]:
        lines.append(
            f"  {t['missingCostEntries']} call(s) of models without a price (models.providers.*.models[].cost)"
        )
    if not s["daily"]:
        lines.append("no model calls recorded in this period")
        return lines
    lines += ["", "by day"] + [_row(d["date"], d) for d in s["daily"]]
    lines += ["", "by model"] + [_row(f"{m['provider']}/{m['model']}", m["totals"], m["count"]) for m in s["byModel"]]
    lines += ["", f"top sessions (of {s['sessionCount']})"]
    lines += [_row(x["key"], x["totals"], x["calls"]) for x in s["sessions"][:TOP]]
    return lines
