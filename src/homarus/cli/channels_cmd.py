"""`homarus channels list|status|add|remove|logout|replay|drop`.

``list``, ``add`` and ``remove`` work on the config and need no gateway: when one is running,
``add``/``remove`` go through its ``config.patch`` so the change takes effect at once (the gateway
starts, restarts or stops the account); otherwise the file is rewritten (validated, atomically)
and the gateway picks it up when it starts. ``status``, ``logout``, ``replay`` and ``drop`` ask
the running gateway. What is particular to a channel (where its secret goes, how it is checked,
what ``list`` shows of an account) comes from its plugin (``ChannelSpec.setup``): nothing here
names a channel. Module-level imports stay cheap: the parser is built at ``homarus --help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from homarus.channels.adapter import ChannelSetup, ChannelSpec
    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig

__all__ = ["add_channels_parser", "channel_add_patch", "channel_specs", "run_channels"]

_POLICIES = ["pairing", "allowlist", "open", "disabled"]


def add_channels_parser(ch: argparse.ArgumentParser) -> None:
    from homarus.cli.options import client_args

    cs = ch.add_subparsers(dest="channels_command", metavar="SUBCOMMAND")
    ls = cs.add_parser("list", help="configured channels and accounts (from the config; no gateway needed)")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--available", action="store_true", help="the channels this installation can set up")
    st = cs.add_parser("status", help="accounts, delivery and dead letters of the running gateway")
    st.add_argument("--probe", action="store_true", help="ask each account to check its connection")
    client_args(st)
    add = cs.add_parser("add", help="configure a channel account (its secret checked with the platform first)")
    add.add_argument("channel", help="channel id (`homarus channels list --available` names them)")
    add.add_argument("--account", help="account id (default: the channel's default account)")
    add.add_argument(
        "--token", dest="bot_token", help='the secret; "-" reads it from stdin (default: prompt, or the env var)'
    )
    add.add_argument("--token-env", action="store_true", help="use the environment variable; store no token")
    add.add_argument("--mode", help="the transport, where a channel has several (slack: socket or http)")
    add.add_argument(
        "--secret",
        action="append",
        metavar="KEY=VALUE",
        help='another secret the channel needs (slack: appToken=xapp-…); VALUE "-" reads stdin (repeatable)',
    )
    add.add_argument("--dm-policy", choices=_POLICIES, help="who may DM the bot (default: pairing)")
    add.add_argument("--allow-from", action="append", metavar="ID", help="a sender id allowed to DM (repeatable)")
    add.add_argument("--api-root", help="the platform's API base URL (a local server standing in for it)")
    add.add_argument("--no-verify", action="store_true", help="do not check the token with the platform first")
    client_args(add, timeout=15.0, token_flag="--gateway-token")  # noqa: S106 - a flag name
    rm = cs.add_parser("remove", help="disable a channel account (--delete removes its config)")
    rm.add_argument("channel")
    rm.add_argument("--account")
    rm.add_argument("--delete", action="store_true", help="remove the config entry instead of disabling it")
    client_args(rm, timeout=15.0)
    lo = cs.add_parser("logout", help="stop an account and let go of its platform session")
    lo.add_argument("channel")
    lo.add_argument("--account")
    client_args(lo)
    li = cs.add_parser("login", help="link an account that pairs by QR code (whatsapp, mode personal)")
    li.add_argument("channel", nargs="?", default="whatsapp", help="the channel (default: whatsapp)")
    li.add_argument("--account", help="account id (default: the channel's default account)")
    li.add_argument("--force", action="store_true", help="unlink the current device first and link afresh")
    li.add_argument("--wait", type=float, default=180.0, metavar="S", help="how long to wait for the scan")
    client_args(li, timeout=60.0)
    rp = cs.add_parser("replay", help="send a dead letter again (its id from `channels status`)")
    rp.add_argument("id", type=int)
    client_args(rp)
    dr = cs.add_parser("drop", help="give up on a dead letter")
    dr.add_argument("id", type=int)
    client_args(dr)


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


# -- the channels there are ------------------------------------------------------------------------
def channel_specs(paths: StatePaths, config: HomarusConfig | None = None) -> dict[str, ChannelSpec]:
    """Every channel the plugins of this installation register (bundled and third-party), by id
    (``config``: the one already loaded, else the file's)."""
    from homarus.cli.plugins_cmd import load_registry
    from homarus.config.loader import load_config

    registry = load_registry(config if config is not None else load_config(paths).config, paths)
    return {channel_id: registered.spec for channel_id, registered in registry.channels.items()}


# -- list ------------------------------------------------------------------------------------------
def _list(args: argparse.Namespace, paths: StatePaths) -> int:
    import os

    from homarus.config.loader import load_config

    cfg = load_config(paths).config
    specs = channel_specs(paths, cfg)
    if args.available:
        found = [{"channel": cid, "label": s.label, "setup": s.setup is not None} for cid, s in sorted(specs.items())]
        if args.json:
            _print_json({"available": found})
        for row in [] if args.json else found:
            how = f"homarus channels add {row['channel']}" if row["setup"] else "configure it under channels"
            print(f"{row['channel']}  {row['label']}  ({how})")
        return 0
    rows: list[dict[str, Any]] = []
    for channel_id, channel in cfg.channels.configured().items():
        setup = specs[channel_id].setup if channel_id in specs else None
        for account_id in channel.account_ids():
            s = channel.account(account_id)
            row = {
                "channel": channel_id,
                "accountId": account_id,
                "enabled": channel.enabled is not False and s.get("enabled") is not False,
                "dmPolicy": s.get("dm_policy") or "pairing",
                "allowFrom": list(s.get("allow_from") or ()),
                "groups": sorted(s.get("groups") or {}),
                "mode": "-",
                "token": "-",
            }
            if setup is not None and setup.list_fields is not None:
                row.update(setup.list_fields(s, account_id, os.environ))
            rows.append(row)
    if args.json:
        _print_json({"channels": rows})
    elif not rows:
        print("no chat channel configured: homarus channels add <channel> (homarus channels list --available)")
    for r in [] if args.json else rows:
        state = "enabled" if r["enabled"] else "disabled"
        groups = f"  groups={','.join(r['groups'])}" if r["groups"] else ""
        where = f"{r['channel']}/{r['accountId']}"
        print(f"{where}  {state}  dmPolicy={r['dmPolicy']}  token={r['token']}  {r['mode']}{groups}")
    return 0


# -- status ----------------------------------------------------------------------------------------
def _print_status(result: dict[str, Any]) -> None:
    for channel_id in result.get("channelOrder", []):
        for acc in result.get("channelAccounts", {}).get(channel_id, []):
            state = "running" if acc.get("running") else "stopped"
            line = f"{channel_id}/{acc.get('accountId')}  {state}"
            if acc.get("mode"):
                line += f"  {acc['mode']}"
            if acc.get("lastError"):
                line += f"  error: {acc['lastError']}"
            print(line)
    if not result.get("channelOrder"):
        print("no chat channel configured")
    delivery = result.get("delivery") or {}
    outbox = delivery.get("outbox") or {}
    if outbox:
        print("outbox: " + ", ".join(f"{k} {v}" for k, v in sorted(outbox.items()) if isinstance(v, int)))
    pending = (result.get("pairing") or {}).get("pending")
    if pending:
        print(f"pairing requests waiting: {pending} (homarus pairing list)")
    dead = delivery.get("deadLetters") or []
    if dead:
        print(f"dead letters ({len(dead)}; `homarus channels replay ID` sends one again):")
        for d in dead:
            t = d.get("target") or {}
            text = " ".join(str(d.get("preview") or "").split())[:60]
            where = f"{t.get('channel')}/{t.get('accountId')} → {t.get('chatId')}"
            print(f"  {d.get('id')}  {where}  {text!r}  ({d.get('lastError')})")


# -- add / remove ----------------------------------------------------------------------------------
def _read_token(args: argparse.Namespace, setup: ChannelSetup) -> str | None:
    """The secret to store, or None to rely on the environment variable."""
    import os

    env_var = setup.credential_env
    if args.token_env:
        if not env_var or not os.environ.get(env_var):
            raise ValueError(f"--token-env: {env_var or 'this channel reads no environment variable'} is not set")
        return None
    if args.bot_token == "-":  # noqa: S105 - "read it from stdin", not a password
        return sys.stdin.readline().strip()
    if args.bot_token:
        return str(args.bot_token).strip()
    prompt = _getpass_if_tty()
    if prompt is not None:
        return prompt(setup.credential_label)
    if env_var and os.environ.get(env_var):
        return None
    also = f", or set {env_var}" if env_var else ""
    raise ValueError(f"no token: pass --token (or --token - to read stdin){also}")


def _where(channel: str, account: str | None, body: Any) -> dict[str, Any]:
    """A merge patch putting ``body`` at the channel root or under ``accounts.<account>``."""
    if account and account != "default":
        return {"channels": {channel: {"accounts": {account: body}}}}
    return {"channels": {channel: body}}


def _more_secrets(
    args: argparse.Namespace, setup: ChannelSetup, mode: str | None, prompt: Callable[[str], str] | None
) -> dict[str, str]:
    """The other secrets to store (``--secret``, else asked for, else left to their variables)."""
    import os

    given: dict[str, str] = {}
    for item in args.secret or ():
        key, sep, value = str(item).partition("=")
        if not sep:
            raise ValueError(f"--secret {key}: write it as KEY=VALUE")
        given[key.strip()] = sys.stdin.readline().strip() if value == "-" else value.strip()
    known = {s.key: s for s in setup.secrets}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ValueError(f"--secret {unknown[0]}: this channel takes {', '.join(sorted(known)) or 'no other secret'}")
    out: dict[str, str] = {}
    for secret in setup.secrets:
        if secret.modes and mode not in secret.modes:
            continue
        in_env = bool(secret.env and os.environ.get(secret.env))
        found = given.get(secret.key)
        if found is None and prompt is not None and not in_env:
            found = prompt(secret.label[:1].upper() + secret.label[1:])
        if found:
            out[secret.key] = found
        elif found is not None or not in_env:
            also = f", or set {secret.env}" if secret.env else ""
            raise ValueError(f"no {secret.label}: pass --secret {secret.key}=…{also}")
    return out


def _getpass_if_tty() -> Callable[[str], str] | None:
    if not sys.stdin.isatty():
        return None
    import getpass

    return lambda label: getpass.getpass(f"{label}: ").strip()


def channel_add_patch(
    args: argparse.Namespace, spec: ChannelSpec, *, prompt: Callable[[str], str] | None = None
) -> tuple[dict[str, Any], str]:
    """The config patch adding the account ``args`` describe, and the account's name on the
    platform (its secret checked there first unless ``--no-verify``). ``prompt`` asks for a
    secret not given (default: a hidden prompt when stdin is a terminal)."""
    setup = spec.setup
    if setup is None:
        raise ValueError(f"`channels add` cannot set up {spec.id}; configure it under channels.{spec.id}")
    body: dict[str, Any] = {"enabled": True}
    mode = args.mode
    if mode is not None:
        if mode not in setup.modes:
            raise ValueError(f"--mode {mode}: {spec.id} has {', '.join(setup.modes) or 'no modes to choose'}")
        body["mode"] = mode
    effective_mode = _mode(args, setup)
    token = None
    if not setup.credential_modes or effective_mode in setup.credential_modes:
        token = _read_token(args, setup)
        if token is not None and not token:
            raise ValueError("the token is empty")
    if token is not None:
        body[setup.credential_key] = token
    body.update(_more_secrets(args, setup, effective_mode, prompt or _getpass_if_tty()))
    if args.dm_policy:
        body["dmPolicy"] = args.dm_policy
    if args.allow_from:
        body["allowFrom"] = list(args.allow_from)
    if args.api_root:
        if setup.api_root_key is None:
            raise ValueError(f"{spec.id} takes no --api-root")
        body[setup.api_root_key] = args.api_root
    name = ""
    if token is not None and not args.no_verify and setup.verify is not None:
        name = setup.verify(token, args.api_root)
    return _where(spec.id, args.account, body), name


def _mode(args: argparse.Namespace, setup: ChannelSetup) -> str | None:
    return str(args.mode) if args.mode else (setup.modes[0] if setup.modes else None)


def next_step(setup: ChannelSetup, mode: str | None) -> str:
    """What a person does after adding an account in ``mode``."""
    return dict(setup.mode_steps).get(mode or "", setup.next_step)


def _apply(args: argparse.Namespace, paths: StatePaths, patch: dict[str, Any]) -> str:
    """Apply ``patch`` through the running gateway, else to the file; say which."""
    from homarus.cli.client import GatewayUnreachable, call

    try:
        current = call(args, paths, "config.get")
    except GatewayUnreachable:
        from homarus.config.store import ConfigStore

        ConfigStore.open(paths).patch(patch)
        return f"written to {paths.config_path}; it takes effect when the gateway starts (make run)"
    call(args, paths, "config.patch", {"raw": json.dumps(patch), "baseHash": current.get("hash")})
    return "applied to the running gateway"


def _remove_patch(args: argparse.Namespace, paths: StatePaths) -> dict[str, Any]:
    from homarus.config.loader import load_config

    configured = load_config(paths).config.channels.configured()
    channel = configured.get(args.channel)
    if channel is None:
        raise ValueError(f"channel {args.channel!r} is not configured")
    if args.account and args.account not in channel.account_ids():
        raise ValueError(f"channel {args.channel!r} has no account {args.account!r}")
    named = bool(args.account) and args.account != "default"
    if args.delete:
        if named:
            return _where(args.channel, args.account, None)
        return {"channels": None} if list(configured) == [args.channel] else {"channels": {args.channel: None}}
    return _where(args.channel, args.account, {"enabled": False})


def _name(args: argparse.Namespace) -> str:
    return f"{args.channel}/{args.account}" if args.account else str(args.channel)


# -- dispatch --------------------------------------------------------------------------------------
def run_channels(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import GatewayCallError, GatewayUnreachable, call, fail
    from homarus.errors import HomarusError

    sub = args.channels_command
    try:
        if sub == "list":
            return _list(args, paths)
        if sub == "add":
            specs = channel_specs(paths)
            spec = specs.get(args.channel)
            if spec is None or spec.setup is None:
                known = ", ".join(sorted(cid for cid, s in specs.items() if s.setup is not None)) or "none"
                return fail(
                    f"`channels add` sets up {known}; configure {args.channel} under channels.{args.channel} "
                    "(homarus config set)",
                    2,
                )
            patch, name = channel_add_patch(args, spec)
            how = _apply(args, paths, patch)
            print(f"{_name(args)} added{f' ({name})' if name else ''}: {how}")
            step = next_step(spec.setup, _mode(args, spec.setup))
            if step:
                print(step)
            return 0
        if sub == "login":
            from homarus.cli.channels_login import run_login

            return run_login(args, paths)
        if sub == "remove":
            how = _apply(args, paths, _remove_patch(args, paths))
            print(f"{_name(args)} {'removed' if args.delete else 'disabled'}: {how}")
            return 0
        account = {"accountId": args.account} if getattr(args, "account", None) else {}
        if sub == "status":
            result = call(args, paths, "channels.status", {"probe": bool(args.probe)})
        elif sub == "logout":
            result = call(args, paths, "channels.logout", {"channel": args.channel, **account})
        elif sub in ("replay", "drop"):
            result = call(args, paths, f"channels.outbox.{sub}", {"id": args.id})
        else:
            return fail("usage: homarus channels {list,status,add,remove,login,logout,replay,drop}", 2)
    except ValueError as exc:
        return fail(str(exc), 2)
    except GatewayCallError as exc:
        return fail(str(exc.error.get("message", "request failed")))
    except (GatewayUnreachable, HomarusError) as exc:
        return fail(str(exc))
    if args.json:
        _print_json(result)
    elif sub == "status":
        _print_status(result)
    elif sub == "logout":
        done = result.get("loggedOut") or []
        print(f"logged out: {', '.join(done)}" if done else f"{args.channel}: no running account to log out")
    else:
        print(f"dead letter {result.get('id')}: {result.get('status')}")
    return 0
