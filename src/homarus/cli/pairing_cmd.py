"""`homarus pairing list|approve|reject`: who waits to talk to the agent from a chat app.

Through the running gateway (``channels.pairing.*``), so an approval can tell the sender at once.
With no gateway running, the pairing store (``channels.sqlite``, or the cluster's PostgreSQL with
``storage.backend: postgres``) is read and changed directly:
the approval holds when the gateway starts, only the sender is not told.

The first approval also makes that sender the command owner when no owner is configured yet
(``commands.ownerAllowFrom``), as the first person to pair is the person who set the bot up;
``--no-owner`` leaves the owners alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.channels.pairing import PairingStore
    from homarus.config.paths import StatePaths

__all__ = ["add_pairing_parser", "run_pairing"]


def add_pairing_parser(pr: argparse.ArgumentParser) -> None:
    from homarus.cli.options import client_args

    ps = pr.add_subparsers(dest="pairing_command", metavar="SUBCOMMAND")
    ls = ps.add_parser("list", help="pending requests (codes expire after an hour)")
    ls.add_argument("channel", nargs="?")
    ls.add_argument("--account")
    client_args(ls)
    ap = ps.add_parser("approve", help="let the sender of a pairing code talk to the agent")
    ap.add_argument("channel")
    ap.add_argument("code")
    ap.add_argument("--account", help="account id (default: the one the code was issued on)")
    ap.add_argument("--no-notify", action="store_true", help="do not tell the sender")
    ap.add_argument("--no-owner", action="store_true", help="do not make a first sender the command owner")
    client_args(ap)
    rj = ps.add_parser("reject", help="dismiss a pairing request")
    rj.add_argument("channel")
    rj.add_argument("code")
    rj.add_argument("--account")
    client_args(rj)


@contextmanager
def _open_store(paths: StatePaths) -> Iterator[PairingStore]:
    """The pairing store: the state dir's file, or the cluster's database (``storage.backend:
    postgres``: the pairing every gateway shares)."""
    from homarus.channels.pairing import PairingStore
    from homarus.config.loader import load_config

    cfg = load_config(paths).config
    if cfg.present("storage") and cfg.storage.backend == "postgres":
        from homarus.channels.pg_db import PgChannelDb
        from homarus.cli.storage_cmd import postgres_database

        with postgres_database(cfg) as db:
            yield PairingStore(PgChannelDb(db))
        return
    from homarus.channels.db import ChannelDb

    path = paths.state_dir / "channels.sqlite"
    if not path.exists():
        raise ValueError("no pairing request yet: no chat channel has run in this state directory")
    file = ChannelDb(path)
    try:
        yield PairingStore(file)
    finally:
        file.close()


def _offline(args: argparse.Namespace, paths: StatePaths) -> dict[str, Any]:
    """What the gateway method would answer, from the store itself (no gateway running)."""
    with _open_store(paths) as store:
        return _offline_in(args, paths, store)


def _offline_in(args: argparse.Namespace, paths: StatePaths, store: PairingStore) -> dict[str, Any]:
    from homarus.channels.pairing import MAX_PENDING, TTL_MS

    sub = args.pairing_command
    if sub == "list":
        from datetime import UTC, datetime

        rows = [
            {
                "requestId": r.code,
                "channel": r.channel,
                "accountId": r.account_id,
                "senderId": r.sender_id,
                "senderLabel": str(r.meta.get("name") or r.sender_id),
                "expiresAt": datetime.fromtimestamp(r.expires_at / 1000, UTC).isoformat(timespec="seconds"),
            }
            for r in store.pending(args.channel)
            if not args.account or r.account_id == args.account
        ]
        return {"requests": rows, "limits": {"pendingPerAccount": MAX_PENDING, "ttlMs": TTL_MS}, "offline": True}
    code = args.code.strip().upper()
    if sub == "reject":
        request = store.dismiss(args.channel, code)
        return {"requestId": request.code, "senderId": request.sender_id, "offline": True}
    request = store.approve(args.channel, code, account_id=args.account, by="homarus-cli")
    bootstrap = "not-requested" if args.no_owner else _bootstrap_offline(paths, request.channel, request.sender_id)
    return {
        "requestId": request.code,
        "senderId": request.sender_id,
        "notification": "not-sent (gateway not running)",
        "commandOwnerBootstrap": bootstrap,
        "offline": True,
    }


def _bootstrap_offline(paths: StatePaths, channel: str, sender: str) -> str:
    from homarus.config.store import ConfigStore

    store = ConfigStore.open(paths)
    if store.current.config.commands.owner_allow_from:
        return "already-configured"
    store.patch({"commands": {"ownerAllowFrom": [f"{channel}:{sender}"]}})
    return "configured"


def _account_of(args: argparse.Namespace, paths: StatePaths, code: str) -> str:
    """The account a pending code was issued on (the methods name it; the CLI need not)."""
    from homarus.cli.client import call

    listed = call(args, paths, "channels.pairing.list", {"channel": args.channel})
    for r in listed.get("requests", []):
        if r.get("requestId") == code:
            return str(r["accountId"])
    raise ValueError(f"no pending {args.channel} pairing request {code} (homarus pairing list)")


def _online(args: argparse.Namespace, paths: StatePaths) -> dict[str, Any]:
    from homarus.cli.client import call

    sub = args.pairing_command
    if sub == "list":
        which = {k: v for k, v in (("channel", args.channel), ("accountId", args.account)) if v}
        result: dict[str, Any] = call(args, paths, "channels.pairing.list", which)
        return result
    code = args.code.strip().upper()
    ident = {"channel": args.channel, "accountId": args.account or _account_of(args, paths, code), "requestId": code}
    if sub == "reject":
        result = call(args, paths, "channels.pairing.dismiss", ident)
        return result
    params: dict[str, Any] = {**ident, "notify": not args.no_notify, "bootstrapCommandOwner": not args.no_owner}
    result = call(args, paths, "channels.pairing.approve", params)
    return result


def _print(args: argparse.Namespace, result: dict[str, Any]) -> None:
    sub = args.pairing_command
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        return
    if sub == "list":
        rows = result.get("requests", [])
        for r in rows:
            who = r.get("senderLabel") or r.get("senderId")
            where = f"{r.get('channel')}/{r.get('accountId')}"
            print(f"{where}  {r.get('requestId')}  {who} ({r.get('senderId')})  expires {r.get('expiresAt')}")
        if not rows:
            print("no pending pairing requests")
        return
    if sub == "reject":
        print(f"rejected {result.get('requestId')} (sender {result.get('senderId')})")
        return
    print(f"approved {result.get('requestId')}: sender {result.get('senderId')} may talk to the agent now")
    if result.get("notification") not in (None, "not-requested"):
        print(f"notification: {result['notification']}")
    if result.get("commandOwnerBootstrap") == "configured":
        print(f"{args.channel}:{result.get('senderId')} is now the command owner (commands.ownerAllowFrom)")


def run_pairing(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import GatewayCallError, GatewayUnreachable, fail
    from homarus.errors import HomarusError

    if args.pairing_command not in ("list", "approve", "reject"):
        return fail("usage: homarus pairing {list,approve,reject}", 2)
    try:
        try:
            result = _online(args, paths)
        except GatewayUnreachable:
            result = _offline(args, paths)
    except ValueError as exc:
        return fail(str(exc), 2)
    except GatewayCallError as exc:
        return fail(str(exc.error.get("message", "request failed")))
    except HomarusError as exc:
        return fail(str(exc))
    _print(args, result)
    return 0
