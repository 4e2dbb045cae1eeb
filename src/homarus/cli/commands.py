"""Implementations of the CLI commands (imported only once a command was chosen)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import logging
import signal
import sys
from typing import Any

from homarus.config.loader import StatePaths
from homarus.config.values import resolve_bind_host
from homarus.errors import ConfigError, HomarusError

__all__ = ["dispatch"]


def _out(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _err(message: str) -> None:
    sys.stderr.write(f"homarus: {message}\n")


#: command → (the sub-command attribute that must be set, or None; "module:function" taking
#: (args, paths)): each command's module is imported only when that command runs
COMMANDS: dict[str, tuple[str | None, str]] = {
    "doctor": (None, "homarus.cli.doctor:run_doctor_command"),
    "config": (None, "homarus.cli.config_cmd:run_config"),
    "agent": (None, "homarus.cli.agent_cmd:run_agent_command"),
    "sessions": (None, "homarus.cli.sessions_cmd:run_sessions"),
    "channels": ("channels_command", "homarus.cli.channels_cmd:run_channels"),
    "pairing": ("pairing_command", "homarus.cli.pairing_cmd:run_pairing"),
    "mcp": ("mcp_command", "homarus.cli.mcp_cmd:run_mcp"),
    "devices": ("devices_command", "homarus.cli.devices_cmd:run_devices"),
    "cluster": ("cluster_command", "homarus.cli.cluster_cmd:run_cluster"),
    "storage": ("storage_command", "homarus.cli.storage_cmd:run_storage"),
    "migrate": ("migrate_command", "homarus.cli.migrate_cmd:run_migrate"),
    "security": ("security_command", "homarus.cli.security_cmd:run_security"),
    "cron": ("cron_command", "homarus.cli.cron_cmd:run_cron"),
    "memory": ("memory_command", "homarus.cli.memory_cmd:run_memory"),
    "onboard": (None, "homarus.cli.onboard_cmd:run_onboard"),
    "models": ("models_command", "homarus.cli.models_cmd:run_models"),
    "logs": (None, "homarus.cli.logs_cmd:run_logs"),
    "usage": (None, "homarus.cli.usage_cmd:run_usage"),
    "plugins": ("plugins_command", "homarus.cli.plugins_cmd:run_plugins"),
    "skills": ("skills_command", "homarus.cli.skills_cmd:run_skills"),
}


def dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    paths = StatePaths.from_env()
    try:
        if args.command == "gateway":
            if args.gateway_command == "run":
                return _gateway_run(args, paths)
            if args.gateway_command == "call":
                return _gateway_call(args, paths, args.method, args.params)
            if args.gateway_command in ("install", "uninstall", "status", "restart"):
                from homarus.cli.service_cmd import run_service

                return run_service(args, paths)
        elif args.command == "health":
            return _gateway_call(args, paths, "health", "{}")
        elif args.command in COMMANDS:
            sub, target = COMMANDS[args.command]
            if sub is None or getattr(args, sub, None):
                module, _, name = target.partition(":")
                run: Any = getattr(importlib.import_module(module), name)
                return int(run(args, paths))
    except ConfigError as exc:
        _err(str(exc))
        return 1
    with contextlib.suppress(SystemExit):  # a group without its subcommand: show its help, exit 2
        parser.parse_args([args.command, "--help"])
    return 2


# -- gateway ----------------------------------------------------------------------------
def _gateway_run(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus import codecache
    from homarus.gateway.services.warm import settle_heaps_of_this_process

    codecache.install()  # the gateway's dataclasses get their methods compiled at install time
    settle_heaps_of_this_process()  # this process is the gateway: what it builds at start stays
    from homarus.gateway.app import GatewayOptions
    from homarus.gateway.server import build_gateway, serve

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if logging.getLogger().level > logging.DEBUG:
        # httpx logs every request at INFO: a line per model call and per chat API call (and a
        # formatted record each, 0.15 ms of every turn); its warnings still show
        logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        host = resolve_bind_host(args.bind) if args.bind else None
    except ValueError as exc:
        _err(f"--bind: {exc}")
        return 2
    options = GatewayOptions(host=host, port=args.port, token=args.token)
    gateway = build_gateway(paths, options)

    served = False

    def after_graceful_stop(signum: int, frame: Any) -> None:
        # uvicorn handles SIGINT/SIGTERM while serving, shuts down gracefully, restores this
        # handler and re-raises the signal: a clean stop must still exit 0, not die by the signal.
        if not served:  # arrived before uvicorn took over the signals: stop right away
            raise SystemExit(128 + signum)

    def ready(server: Any) -> None:
        nonlocal served
        served = True
        scheme_host = f"[{gateway.host}]" if ":" in gateway.host else gateway.host
        print(
            f"homarus gateway listening on ws://{scheme_host}:{server.bound_port} (http on the same port)", flush=True
        )
        print(f"config: {paths.config_path}{'' if gateway.config_store.current.exists else ' (defaults)'}", flush=True)
        if gateway.auth.mode == "token" and not args.token and gateway.config.gateway.auth.token is None:
            verb = "generated" if gateway.auth.token_created else "stored"
            print(f"gateway token: {verb} in {paths.token_path} (mode 0600)", flush=True)

    previous = {sig: signal.signal(sig, after_graceful_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio.run(serve(gateway, on_ready=ready, log_level=args.log_level))
    except OSError as exc:
        _err(f"{exc}. Is another gateway running (homarus gateway status)? Another port: --port or gateway.port")
        return 1
    except HomarusError as exc:  # the storage could not be had (storage.backend: postgres)
        _err(f"cannot start: {exc.message}")
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _gateway_call(args: argparse.Namespace, paths: StatePaths, method: str, raw_params: str) -> int:
    from homarus.cli.client import GatewayCallError, call_gateway, gateway_target

    try:
        params = json.loads(raw_params)
    except json.JSONDecodeError as exc:
        _err(f"--params is not valid JSON: {exc}")
        return 2
    url, token = gateway_target(paths, args.url, args.token)
    try:
        result = asyncio.run(
            call_gateway(
                url, token, method, params, timeout=args.timeout, expect_final=getattr(args, "expect_final", False)
            )
        )
    except GatewayCallError as exc:
        _out({"ok": False, "error": exc.error})
        return 1
    except (OSError, TimeoutError) as exc:
        _err(f"cannot reach the gateway at {url}: {str(exc) or type(exc).__name__}")
        return 1
    except Exception as exc:  # websockets raises its own ConnectionClosed/InvalidStatus types
        _err(f"gateway call failed: {type(exc).__name__}: {exc}")
        return 1
    _out(result)
    return 0
