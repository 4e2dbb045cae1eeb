"""`homarus mcp list|tools|test|serve`: the MCP servers of the config, and Homarus as one.

``list`` reads the config (and, when a gateway runs, asks it how each server stands through
``mcp.status``); ``tools NAME`` and ``test NAME`` start that one server here, in this process, as
the gateway would, and list its tools or time its start (handshake and listing) — so a server can
be tried before the gateway uses it. Env values and headers are never printed. ``serve`` is
:mod:`homarus.cli.mcp_serve`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["add_mcp_parser", "run_mcp"]


def add_mcp_parser(mc: argparse.ArgumentParser) -> None:
    from homarus.cli.options import client_args

    ms = mc.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")
    client_args(ms.add_parser("list", help="configured servers (and their state when a gateway runs)"))
    serve = ms.add_parser("serve", help="be an MCP server (stdio) for editors and desktop apps")
    serve.add_argument("--allow-send", action="store_true", help="offer send_message (a turn in a session)")
    client_args(serve, 300.0)
    for name, what in (("tools", "start a server here and list its tools"), ("test", "start a server and time it")):
        p = ms.add_parser(name, help=what)
        p.add_argument("name")
        p.add_argument("--json", action="store_true")


def run_mcp(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import fail
    from homarus.config.store import ConfigStore

    sub = args.mcp_command
    if sub == "serve":
        from homarus.cli.mcp_serve import run_serve

        return run_serve(args, paths)
    servers = ConfigStore.open(paths).current.config.mcp.servers
    if sub == "list":
        return _list(args, paths, servers)
    if sub not in ("tools", "test"):
        return fail("usage: homarus mcp {list,tools,test,serve}", 2)
    cfg = servers.get(args.name)
    if cfg is None:
        known = ", ".join(sorted(servers)) or "none configured"
        return fail(f"no MCP server {args.name!r} in the config ({known})", 2)
    import asyncio  # not at import: `homarus --help` builds every parser

    return asyncio.run(_try(args, args.name, cfg))


def _list(args: argparse.Namespace, paths: StatePaths, servers: dict[str, Any]) -> int:
    from homarus.cli.client import GatewayCallError, GatewayUnreachable, call

    live: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(GatewayCallError, GatewayUnreachable):  # no gateway: the config alone
        live = {s["name"]: s for s in call(args, paths, "mcp.status", {})["servers"]}
    rows = []
    for name, cfg in sorted(servers.items()):
        state = live.get(name, {})
        where = " ".join([cfg.command or "", *cfg.args]) if cfg.kind == "stdio" else str(cfg.url)
        rows.append(
            {
                "name": name,
                "transport": cfg.kind,
                "enabled": cfg.enabled,
                "startup": cfg.startup,
                "target": where,
                "state": state.get("state", "not running" if cfg.enabled else "disabled"),
                "tools": len(state.get("tools", [])),
                "lastError": state.get("lastError"),
            }
        )
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    for r in rows:
        error = f"  ({r['lastError']})" if r["lastError"] else ""
        print(f"{r['name']:<16} {r['transport']:<5} {r['state']:<12} {r['tools']:>3} tools  {r['target']}{error}")
    if not rows:
        print("no MCP servers configured (mcp.servers in the config)")
    return 0


async def _try(args: argparse.Namespace, name: str, cfg: Any) -> int:
    import tempfile
    import time

    from homarus.cli.client import fail
    from homarus.mcp.connection import McpConnection, McpUnavailable

    with tempfile.TemporaryDirectory(prefix="homarus-mcp-") as logs:
        conn = McpConnection(name, cfg, log_dir=Path(logs), on_tools=lambda _c: None)
        started = time.perf_counter()
        try:
            await conn.start()
        except McpUnavailable as exc:
            return fail(str(exc))
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
        tools = list(conn.tools)
        await conn.stop()
    if args.json:
        out: dict[str, Any] = {"name": name, "startMs": round(elapsed_ms, 1)}
        out["tools"] = [{"name": t.name, "description": t.description or ""} for t in tools]
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    elif args.mcp_command == "test":
        print(f"{name}: started and listed {len(tools)} tool(s) in {elapsed_ms:.0f} ms")
    else:
        for t in tools:
            print(f"{name}__{t.name}  {(t.description or '').splitlines()[0] if t.description else ''}")
    return 0
