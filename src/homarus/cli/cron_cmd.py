"""`homarus cron status|list|add|rm|run|runs`: the gateway's ``cron.*`` methods over WebSocket.

Jobs live with the running gateway (its scheduler owns ``jobs.json``), so unlike ``sessions``
these commands need the gateway. Module-level imports stay cheap: the parser is built at
``homarus --help`` time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["add_cron_parser", "main", "run_cron"]

_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)?$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def add_cron_parser(cron: argparse.ArgumentParser) -> None:
    """``cron``'s subcommands and their arguments, on its parser ``cron``."""
    from homarus.cli.options import client_args as _client_args

    cs = cron.add_subparsers(dest="cron_command", metavar="SUBCOMMAND")
    _client_args(cs.add_parser("status", help="scheduler status: enabled, job count, next wake"))
    ls = cs.add_parser("list", help="list jobs, next run first")
    ls.add_argument("--all", action="store_true", help="include disabled jobs")
    _client_args(ls)
    add = cs.add_parser("add", help="add a job")
    add.add_argument("--name", required=True)
    add.add_argument("--description")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", help='once: ISO-8601 time (no offset = UTC) or relative like "+20m"')
    when.add_argument("--every", help='interval: "30s", "10m", "2h", "1d" or milliseconds')
    when.add_argument("--cron", metavar="EXPR", help="cron expression: 5 fields, or 6 with seconds first")
    add.add_argument("--tz", help="IANA time zone for --cron (default UTC)")
    add.add_argument("--exact", action="store_true", help="no stagger for top-of-hour --cron expressions")
    what = add.add_mutually_exclusive_group(required=True)
    what.add_argument("--system-event", metavar="TEXT", help="post TEXT into the main session")
    what.add_argument("--message", help="run an isolated agent turn with this message")
    add.add_argument("--agent", help="agent id (default: the default agent)")
    add.add_argument("--wake", choices=["now", "next-heartbeat"], default="now")
    deliver = add.add_mutually_exclusive_group()
    deliver.add_argument("--no-deliver", action="store_true", help="do not announce the result")
    deliver.add_argument("--webhook", metavar="URL", help="POST the finished run to URL")
    add.add_argument("--best-effort", action="store_true", help="a failed delivery does not fail the run")
    add.add_argument("--model", help="model ref <provider>/<model> for the agent turn")
    add.add_argument("--thinking")
    add.add_argument("--timeout-seconds", type=int, help="agent turn timeout (default 600)")
    add.add_argument("--disabled", action="store_true", help="add it disabled")
    add.add_argument("--keep-after-run", action="store_true", help="--at jobs: disable instead of delete")
    _client_args(add)
    rm = cs.add_parser("rm", help="remove a job")
    rm.add_argument("job_id")
    _client_args(rm)
    run = cs.add_parser("run", help="run a job now and wait for it")
    run.add_argument("job_id")
    run.add_argument("--due", action="store_true", help="only if it is due")
    _client_args(run, timeout=660.0)
    runs = cs.add_parser("runs", help="a job's run history, newest first")
    runs.add_argument("job_id")
    runs.add_argument("--limit", type=int, default=20)
    _client_args(runs)


def _duration_ms(text: str) -> int:
    m = _DURATION.match(text.strip())
    if m is None:
        raise ValueError(f'invalid duration "{text}": use e.g. 30s, 10m, 2h, 1d or milliseconds')
    return int(m.group(1)) * _UNIT_MS[m.group(2) or "ms"]


def job_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The ``cron.add`` params for ``homarus cron add`` flags (raises ValueError on bad flags)."""
    if args.at:
        schedule: dict[str, Any] = {"kind": "at", "at": args.at}
    elif args.every:
        schedule = {"kind": "every", "everyMs": _duration_ms(args.every)}
    else:
        schedule = {"kind": "cron", "expr": args.cron}
        if args.tz:
            schedule["tz"] = args.tz
        if args.exact:
            schedule["staggerMs"] = 0
    if args.tz and not args.cron:
        raise ValueError("--tz only applies to --cron")
    spec: dict[str, Any] = {"name": args.name, "schedule": schedule, "wakeMode": args.wake}
    if args.system_event is not None:
        spec["payload"] = {"kind": "systemEvent", "text": args.system_event}
    else:
        payload: dict[str, Any] = {"kind": "agentTurn", "message": args.message}
        for key, value in (
            ("model", args.model),
            ("thinking", args.thinking),
            ("timeoutSeconds", args.timeout_seconds),
        ):
            if value is not None:
                payload[key] = value
        spec["payload"] = payload
        if args.no_deliver:
            spec["delivery"] = {"mode": "none"}
        elif args.webhook:
            spec["delivery"] = {"mode": "webhook", "to": args.webhook}
        if args.best_effort:
            spec.setdefault("delivery", {"mode": "announce"})["bestEffort"] = True
    for key, value in (("agentId", args.agent), ("description", args.description)):
        if value is not None:
            spec[key] = value
    if args.disabled:
        spec["enabled"] = False
    if args.keep_after_run:
        spec["deleteAfterRun"] = False
    return spec


def _when(ms: int | None) -> str:
    return "-" if ms is None else datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _job_line(job: dict[str, Any]) -> str:
    s = job.get("schedule", {})
    what = s.get("at") or s.get("expr") or f"every {s.get('everyMs')} ms"
    if s.get("tz"):
        what += f" ({s['tz']})"
    st = job.get("state", {})
    status = "disabled" if not job.get("enabled", True) else f"next {_when(st.get('nextRunAtMs'))}"
    last = f"  last {st['lastRunStatus']}" if st.get("lastRunStatus") else ""
    return f"{job['id']}  {job['name']}  [{s.get('kind')}: {what}]  {status}{last}"


def _print(args: argparse.Namespace, result: Any) -> None:
    sub = args.cron_command
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    elif sub == "list":
        jobs = result.get("jobs", [])
        print("\n".join(_job_line(j) for j in jobs) if jobs else "no cron jobs")
    elif sub == "add":
        print(f"added {_job_line(result)}")
    elif sub == "rm":
        print("removed" if result.get("removed") else f"no such job: {args.job_id}")
    elif sub == "run":
        if result.get("ran"):
            print(f"ran: {result.get('status')}" + (f" — {result['error']}" if result.get("error") else ""))
            if result.get("summary"):
                print(result["summary"])
        else:
            print(f"not run: {result.get('reason')}")
    elif sub == "runs":
        entries = result.get("entries", [])
        for e in entries:
            extra = e.get("error") or e.get("summary") or ""
            flag = " (catch-up)" if e.get("catchUp") else ""
            print(f"{_when(e.get('runAtMs'))}  {e.get('status')}{flag}  {e.get('durationMs')} ms  {extra}"[:300])
        if not entries:
            print("no runs yet")
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


def run_cron(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import GatewayCallError, GatewayUnreachable, call, fail

    sub = args.cron_command
    params: dict[str, Any]
    try:
        if sub == "status":
            method, params = "cron.status", {}
        elif sub == "list":
            method, params = "cron.list", {"includeDisabled": bool(args.all), "limit": 200}
        elif sub == "add":
            method, params = "cron.add", job_spec(args)
        elif sub == "rm":
            method, params = "cron.remove", {"jobId": args.job_id}
        elif sub == "run":
            method, params = "cron.run", {"jobId": args.job_id, "mode": "due" if args.due else "force", "wait": True}
        elif sub == "runs":
            method, params = "cron.runs", {"jobId": args.job_id, "limit": args.limit}
        else:
            print("usage: homarus cron {status,list,add,rm,run,runs}", file=sys.stderr)
            return 2
    except ValueError as exc:
        print(f"homarus: {exc}", file=sys.stderr)
        return 2
    try:
        result = call(args, paths, method, params)
    except GatewayCallError as exc:
        return fail(exc.error.get("message", "request failed"))
    except GatewayUnreachable as exc:
        return fail(str(exc))
    _print(args, result)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m homarus.cli.cron_cmd ...`` (same as ``homarus cron ...``)."""
    from homarus.config.paths import StatePaths

    parser = argparse.ArgumentParser(prog="homarus")
    add_cron_parser(parser.add_subparsers(dest="command").add_parser("cron"))
    args = parser.parse_args(["cron", *(argv if argv is not None else sys.argv[1:])])
    return run_cron(args, StatePaths.from_env())


if __name__ == "__main__":
    sys.exit(main())
