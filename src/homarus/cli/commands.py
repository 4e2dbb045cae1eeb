"""Implementations of the CLI commands (imported only once a command was chosen)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import socket
import stat
import sys
from typing import Any

import json5

from homarus.config.loader import LoadedConfig, StatePaths, load_config
from homarus.config.redact import REDACTED, redact
from homarus.config.schema import is_loopback_host, resolve_bind_host
from homarus.config.store import ConfigStore
from homarus.errors import ConfigError
from homarus.security.token_store import read_token

__all__ = ["dispatch"]


def _out(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _err(message: str) -> None:
    sys.stderr.write(f"homarus: {message}\n")


def dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    paths = StatePaths.from_env()
    try:
        if args.command == "gateway":
            if args.gateway_command == "run":
                return _gateway_run(args, paths)
            if args.gateway_command == "call":
                return _gateway_call(args, paths, args.method, args.params)
        elif args.command == "health":
            return _gateway_call(args, paths, "health", "{}")
        elif args.command == "doctor":
            return _doctor(paths)
        elif args.command == "config":
            return _config(args, paths)
    except ConfigError as exc:
        _err(str(exc))
        return 1
    with contextlib.suppress(SystemExit):  # a group without its subcommand: show its help, exit 2
        parser.parse_args([args.command, "--help"])
    return 2


# -- gateway ----------------------------------------------------------------------------
def _gateway_run(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.gateway.app import GatewayOptions
    from homarus.gateway.server import build_gateway, serve

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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
        if gateway.auth_mode == "token" and not args.token and gateway.config.gateway.auth.token is None:
            verb = "generated" if gateway.token_created else "stored"
            print(f"gateway token: {verb} in {paths.token_path} (mode 0600)", flush=True)

    previous = {sig: signal.signal(sig, after_graceful_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio.run(serve(gateway, on_ready=ready, log_level=args.log_level))
    except OSError as exc:
        _err(str(exc))
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _client_target(args: argparse.Namespace, paths: StatePaths) -> tuple[str, str | None]:
    loaded = load_config(paths)
    token = args.token
    if token is None and loaded.config.gateway.auth.token is not None:
        token = loaded.config.gateway.auth.token.get_secret_value()
    if token is None:
        token = read_token(paths.token_path)
    url = args.url or f"ws://127.0.0.1:{loaded.config.gateway.port}"
    return url, token


def _gateway_call(args: argparse.Namespace, paths: StatePaths, method: str, raw_params: str) -> int:
    from homarus.cli.client import GatewayCallError, call_gateway

    try:
        params = json.loads(raw_params)
    except json.JSONDecodeError as exc:
        _err(f"--params is not valid JSON: {exc}")
        return 2
    url, token = _client_target(args, paths)
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


# -- doctor -----------------------------------------------------------------------------
def _doctor(paths: StatePaths) -> int:
    failures = 0

    def report(level: str, message: str) -> None:
        nonlocal failures
        failures += level == "fail"
        print(f"[{level:4}] {message}")

    loaded: LoadedConfig | None = None
    try:
        loaded = load_config(paths)
        report("ok", f"config {'valid' if loaded.exists else 'absent, using defaults'}: {paths.config_path}")
    except ConfigError as exc:
        report("fail", f"config: {exc}")
    _doctor_state_dir(paths, report)
    if loaded is None:
        return 1
    cfg = loaded.config.gateway
    host = resolve_bind_host(cfg.bind)
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, cfg.port))
        report("ok", f"port {host}:{cfg.port} is free")
    except OSError as exc:
        report("warn", f"port {host}:{cfg.port} is not free ({exc.strerror}); a gateway may already run there")
    if cfg.auth.mode == "none":
        report(
            "warn" if is_loopback_host(host) else "fail", "gateway.auth.mode is 'none': anyone who can connect is admin"
        )
    elif cfg.auth.mode == "password":
        report("ok", "password auth configured")
    elif cfg.auth.token is not None:
        report("ok", "gateway token configured (config or HOMARUS_GATEWAY_TOKEN)")
    else:
        try:
            token = read_token(paths.token_path)
        except ConfigError as exc:
            report("fail", str(exc))
        else:
            report(
                "ok" if token else "warn",
                f"gateway token stored in {paths.token_path}"
                if token
                else f"no gateway token yet; one is generated into {paths.token_path} on first start",
            )
    return 1 if failures else 0


def _doctor_state_dir(paths: StatePaths, report: Any) -> None:
    try:
        st = paths.state_dir.stat()
    except FileNotFoundError:
        report("ok", f"state dir {paths.state_dir} does not exist yet (created 0700 on first start)")
        return
    if not stat.S_ISDIR(st.st_mode):
        report("fail", f"state dir {paths.state_dir} is not a directory")
    elif st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        report(
            "warn",
            f"state dir {paths.state_dir} is accessible to group/others "
            f"(mode {stat.S_IMODE(st.st_mode):o}); run: chmod 700 {paths.state_dir}",
        )
    else:
        report("ok", f"state dir {paths.state_dir} is private (mode {stat.S_IMODE(st.st_mode):o})")


# -- config -----------------------------------------------------------------------------
def _config(args: argparse.Namespace, paths: StatePaths) -> int:
    sub = args.config_command
    if sub == "path":
        print(paths.config_path)
        return 0
    if sub == "validate":
        loaded = load_config(paths)
        print(f"ok: {paths.config_path}" + ("" if loaded.exists else " (absent: defaults)"))
        return 0
    if sub == "get":
        loaded = load_config(paths)
        data = loaded.config.model_dump(by_alias=True, exclude_none=True)
        data = redact(_reveal(data))
        if args.key:
            for part in args.key.split("."):
                if not isinstance(data, dict) or part not in data:
                    _err(f"no such key: {args.key}")
                    return 1
                data = data[part]
        _out(data)
        return 0
    if sub in ("set", "unset"):
        store = ConfigStore.open(paths)
        value: Any = None
        if sub == "set":
            try:
                value = json5.loads(args.value)
            except ValueError:
                value = args.value
            if value == REDACTED:
                _err("refusing to store the redaction placeholder as a value")
                return 2
        result = store.set_path(args.key, value)
        print(f"{'unchanged' if result.noop else 'updated'}: {paths.config_path}")
        if result.restart_required:
            print(f"restart the gateway to apply: {', '.join(result.restart_required)}")
        return 0
    print("usage: homarus config {get,set,unset,validate,path}", file=sys.stderr)
    return 2


def _reveal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reveal(v) for k, v in value.items()}
    if hasattr(value, "get_secret_value"):
        return value.get_secret_value()
    return value
