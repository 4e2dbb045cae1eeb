"""``homarus cluster status``: the gateways sharing this one's PostgreSQL database, as the running
gateway sees them (``status`` → ``storage``)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["add_cluster_parser", "run_cluster"]


def add_cluster_parser(cl: argparse.ArgumentParser) -> None:
    from homarus.cli.options import client_args

    cs = cl.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND")
    client_args(cs.add_parser("status", help="the storage backend and, on PostgreSQL, every member gateway"))


def _when(ms: Any) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S") if isinstance(ms, int) else "-"


def lines(storage: dict[str, Any]) -> list[str]:
    if storage.get("backend") != "postgres":
        return ["storage: embedded (files and SQLite in the state directory); no cluster"]
    health = "healthy" if storage.get("healthy") else f"unhealthy: {storage.get('error', 'the database is away')}"
    out = [f"storage: postgres {storage['database']} (schema v{storage['schemaVersion']}), {health}"]
    members = storage.get("members")
    if members is None:
        return out
    out.append(f"members: {storage.get('alive', 0)} alive of {len(members)}")
    for m in members:
        state = "alive" if m["alive"] else "gone "
        own = "  (this gateway)" if m["self"] else ""
        port = m["port"] if m["port"] is not None else "-"
        out.append(
            f"  {state} {m['host']}:{port} pid {m['pid']} v{m['version']}  "
            f"since {_when(m['startedAtMs'])}, seen {_when(m['seenAtMs'])}{own}"
        )
    ports = {m["id"]: f"{m['host']}:{m['port'] if m['port'] is not None else '-'}" for m in members}
    for role, holder in sorted((storage.get("roles") or {}).items()):
        where = ports.get(holder["member"], holder["member"])
        out.append(f"role {role}: {where}" + ("" if holder["live"] else " (lease expired: being taken over)"))
    if relay := storage.get("relay"):
        out.append(f"events to the other gateways: {relay['queued']} waiting, {relay['dropped']} dropped")
    return out


def run_cluster(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import GatewayCallError, GatewayUnreachable, call, fail

    if args.cluster_command != "status":
        return fail("usage: homarus cluster status", 2)
    try:
        result = call(args, paths, "status", {})
    except GatewayCallError as exc:
        return fail(str(exc.error.get("message", "request failed")))
    except GatewayUnreachable as exc:
        return fail(str(exc))
    storage = result.get("storage", {"backend": "embedded"})
    if args.json:
        sys.stdout.write(json.dumps(storage, indent=2) + "\n")
    else:
        print("\n".join(lines(storage)))
    return 0 if storage.get("healthy", True) else 1
