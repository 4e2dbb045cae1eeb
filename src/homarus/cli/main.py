"""Entry point: `homarus <command>`. Keep imports here cheap: `--help` must feel instant."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from homarus import __version__

__all__ = ["COMMAND_NAMES", "build_parser", "main"]

#: every command in the order ``--help`` lists them: its help line, and the function that adds
#: its arguments (``module:function`` in this package, imported only when that command is parsed)
_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("gateway", "run or talk to the gateway", ":_add_gateway"),
    ("health", "ask a running gateway for its health", ":_add_health"),
    ("doctor", "check config, state dir, port, token, session stores and transcripts", ":_add_doctor"),
    ("agent", "send one message to the agent and stream the reply", ":_add_agent"),
    ("sessions", "list, show, reset or delete sessions (works without a gateway)", ":_add_sessions"),
    ("config", "read, change or check the config file", ":_add_config"),
    ("plugins", "list, inspect, enable, disable or check plugins", ":_add_plugins"),
    ("logs", "show the audit trail of runs (who asked, model and tool calls, decisions)", "logs_cmd:add_logs_parser"),
    ("cron", "list, add, remove, run scheduled jobs (needs a running gateway)", "cron_cmd:add_cron_parser"),
    ("usage", "tokens and cost of the model calls, by day, model and session", "usage_cmd:add_usage_parser"),
    ("channels", "chat channels: list, status, add, remove, logout", "channels_cmd:add_channels_parser"),
    ("pairing", "list, approve or reject chat pairing requests", "pairing_cmd:add_pairing_parser"),
    ("migrate", "bring over state from OpenClaw", "migrate_cmd:add_migrate_parser"),
    ("devices", "paired devices and device pairing requests", "devices_cmd:add_devices_parser"),
    ("mcp", "the MCP servers whose tools the agents can call", "mcp_cmd:add_mcp_parser"),
    ("models", "list, pick, test the agents' models", "models_cmd:add_models_parser"),
    ("onboard", "set up a model (and a chat channel) step by step", "onboard_cmd:add_onboard_parser"),
    ("memory", "the agent's memory index: status, (re)index, search", "memory_cmd:add_memory_parser"),
    ("skills", "list, inspect, install or remove skills", "skills_cmd:add_skills_parser"),
    ("security", "audit this installation's security settings", "security_cmd:add_security_parser"),
    (
        "cluster",
        "the gateways sharing one PostgreSQL database (storage.backend: postgres)",
        "cluster_cmd:add_cluster_parser",
    ),
    ("storage", "move the state into PostgreSQL (storage migrate)", "storage_cmd:add_storage_parser"),
)
COMMAND_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _COMMANDS)


def build_parser(command: str | None = None, *, listing: bool = False) -> argparse.ArgumentParser:
    """The command line's parser. With ``command`` (one of :data:`COMMAND_NAMES`), only that
    command's arguments, so that ``homarus gateway run`` neither imports nor keeps the parsers (and
    modules) of the other commands for the life of the gateway (1.2 MiB, ~10 ms of its start);
    with ``listing``, the commands and their help lines only (``homarus --help``, a mistyped
    command); otherwise all of it."""
    parser = argparse.ArgumentParser(
        prog="homarus",
        description="Homarus: a self-hosted personal AI-assistant gateway.",
    )
    parser.add_argument("--version", action="version", version=f"homarus {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, text, target in _COMMANDS:
        if command is not None and command != name:
            continue
        own = sub.add_parser(name, help=text)
        if not listing:
            module, _, attr = target.partition(":")
            add: Callable[[argparse.ArgumentParser], object]
            add = getattr(importlib.import_module(f"homarus.cli.{module}"), attr) if module else globals()[attr]
            add(own)
    return parser


def _add_gateway(gw: argparse.ArgumentParser) -> None:
    from homarus.cli.service_cmd import add_service_parsers

    gw_sub = gw.add_subparsers(dest="gateway_command", metavar="SUBCOMMAND")
    run = gw_sub.add_parser("run", help="run the gateway in the foreground")
    run.add_argument("--bind", help="'loopback', 'lan' or an IP address (default: gateway.bind)")
    run.add_argument("--port", type=int, help="TCP port (default: gateway.port, 18789; 0 = any free port)")
    run.add_argument(
        "--token",
        help="shared token (default: $HOMARUS_GATEWAY_TOKEN, gateway.auth.token, or one generated into the state dir)",
    )
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    call = gw_sub.add_parser("call", help="call one gateway method and print its JSON result")
    call.add_argument("method")
    call.add_argument("--params", default="{}", help="JSON object of parameters")
    _client_args(call)
    call.add_argument("--expect-final", action="store_true", help="wait past an 'accepted' first response")

    add_service_parsers(gw_sub)


def _add_health(health: argparse.ArgumentParser) -> None:
    _client_args(health)


def _add_doctor(doc: argparse.ArgumentParser) -> None:
    doc.add_argument("--fix", action="store_true", help="show what can be repaired, and repair it when you say so")
    doc.add_argument("--yes", action="store_true", help="with --fix: do not ask")


def _add_agent(ag: argparse.ArgumentParser) -> None:
    ag.add_argument("-m", "--message", required=True, help="the message")
    ag.add_argument("--session", help="session key (default: the agent's main session)")
    ag.add_argument("--model", help="model ref <provider>/<model> for this run")
    ag.add_argument("--local", action="store_true", help="run in-process even if a gateway is running")
    ag.add_argument("--quiet-tools", action="store_true", help="do not print tool activity")
    _client_args(ag)
    ag.set_defaults(timeout=600.0)


def _add_sessions(sess: argparse.ArgumentParser) -> None:
    sess_sub = sess.add_subparsers(dest="sessions_command", metavar="SUBCOMMAND")
    ls = sess_sub.add_parser("list", help="list sessions, newest first")
    ls.add_argument("--agent", help="only this agent's sessions")
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--json", action="store_true", help="print JSON rows")
    show = sess_sub.add_parser("show", help="print a session's entry and its last messages")
    show.add_argument("key")
    show.add_argument("--limit", type=int, default=20, help="messages to show (default 20)")
    show.add_argument("--json", action="store_true")
    reset = sess_sub.add_parser("reset", help="start the session afresh (old transcript archived)")
    reset.add_argument("key")
    delete = sess_sub.add_parser("delete", help="delete a session (transcript archived)")
    delete.add_argument("key")
    delete.add_argument("--keep-transcript", action="store_true", help="leave the transcript file in place")


def _add_config(cfg: argparse.ArgumentParser) -> None:
    cfg_sub = cfg.add_subparsers(dest="config_command", metavar="SUBCOMMAND")
    get = cfg_sub.add_parser("get", help="print the effective config (secrets redacted), or one key")
    get.add_argument("key", nargs="?", help="dotted key, e.g. gateway.port")
    setp = cfg_sub.add_parser("set", help="set one key (value parsed as JSON5, else taken as a string)")
    setp.add_argument("key")
    setp.add_argument("value")
    unset = cfg_sub.add_parser("unset", help="remove one key")
    unset.add_argument("key")
    cfg_sub.add_parser("validate", help="validate the config file; exit 1 with the offending key if bad")
    cfg_sub.add_parser("path", help="print the config file path")
    cfg_sub.add_parser("backups", help="list the kept previous versions of the config (newest first)")
    restore = cfg_sub.add_parser("restore", help="bring a kept version back (the current one is kept too)")
    restore.add_argument("number", nargs="?", type=int, default=1, help="which backup (1 = the newest; default 1)")
    restore.add_argument("--yes", action="store_true", help="do not ask")


def _add_plugins(plg: argparse.ArgumentParser) -> None:
    plg_sub = plg.add_subparsers(dest="plugins_command", metavar="SUBCOMMAND")
    plg_list = plg_sub.add_parser("list", help="every discovered plugin: id, origin, status, version, diagnostics")
    plg_list.add_argument("--json", action="store_true", help="print JSON rows")
    plg_info = plg_sub.add_parser("info", help="a plugin's manifest, registrations and diagnostics")
    plg_info.add_argument("id")
    plg_info.add_argument("--json", action="store_true")
    plg_en = plg_sub.add_parser("enable", help="set plugins.entries.<id>.enabled to true")
    plg_en.add_argument("id")
    plg_dis = plg_sub.add_parser("disable", help="set plugins.entries.<id>.enabled to false")
    plg_dis.add_argument("id")
    plg_doc = plg_sub.add_parser("doctor", help="load every plugin and print all diagnostics; exit 1 on any error")
    plg_doc.add_argument("--json", action="store_true")


def _client_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", help="gateway WebSocket URL (default: ws://127.0.0.1:<gateway.port>)")
    p.add_argument("--token", help="gateway token (default: from config, env or the state dir)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # the top level takes no option with a value: the first other word names the command
    command = next((w for w in words if not w.startswith("-")), None)
    known = command in COMMAND_NAMES
    if known:
        from homarus.entry_points import skip_pydantic_plugin_scan

        skip_pydantic_plugin_scan()  # before the command builds its first model
    parser = build_parser(command if known else None, listing=not known)
    args = parser.parse_args(words)
    if args.command is None:
        parser.print_help()
        return 2
    from homarus.cli import commands

    try:
        return commands.dispatch(args, parser)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
