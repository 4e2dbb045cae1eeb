"""`homarus devices list|approve|reject|revoke|remove`: paired devices and pairing requests.

Through the running gateway (``device.pair.*``, ``device.token.revoke``), so that a revoked
device's open sockets are closed at once.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["add_devices_parser", "run_devices"]


def add_devices_parser(dv: argparse.ArgumentParser) -> None:
    from homarus.cli.options import client_args

    ds = dv.add_subparsers(dest="devices_command", metavar="SUBCOMMAND")
    client_args(ds.add_parser("list", help="pending requests and paired devices"))
    for name, what in (("approve", "approve a pairing request"), ("reject", "reject a pairing request")):
        p = ds.add_parser(name, help=what)
        p.add_argument("request_id")
        client_args(p)
    for name, what in (("revoke", "revoke a device's token (it must pair again)"), ("remove", "forget a device")):
        p = ds.add_parser(name, help=what)
        p.add_argument("device_id")
        if name == "revoke":
            p.add_argument("--role", default="operator", choices=["operator", "node"])
        client_args(p)


def _when(ms: Any) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M") if isinstance(ms, int) else "-"


def _print(sub: str, result: dict[str, Any]) -> None:
    if sub == "list":
        pending, paired = result.get("pending", []), result.get("paired", [])
        for r in pending:
            who = r.get("displayName") or r.get("clientId") or "?"
            print(f"pending  {r['requestId']}  {who}  {r['deviceId'][:16]}…  from {r.get('remoteIp')}  {r.get('role')}")
        for d in paired:
            who = d.get("displayName") or d.get("clientId") or "?"
            print(f"paired   {d['deviceId'][:16]}…  {who}  {d.get('role')}  last seen {_when(d.get('lastSeenAtMs'))}")
        if not pending and not paired:
            print("no devices")
    elif sub == "approve":
        print(f"approved {result.get('requestId')}: the device connects on its next try")
    elif sub == "reject":
        print(f"rejected {result.get('requestId')}")
    else:
        print(f"{sub}d {result.get('deviceId')} ({result.get('closedConnections', 0)} connection(s) closed)")


def run_devices(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import GatewayCallError, GatewayUnreachable, call, fail

    sub = args.devices_command
    methods = {
        "list": ("device.pair.list", {}),
        "approve": ("device.pair.approve", {"requestId": getattr(args, "request_id", "")}),
        "reject": ("device.pair.reject", {"requestId": getattr(args, "request_id", "")}),
        "revoke": (
            "device.token.revoke",
            {"deviceId": getattr(args, "device_id", ""), "role": getattr(args, "role", "operator")},
        ),
        "remove": ("device.pair.remove", {"deviceId": getattr(args, "device_id", "")}),
    }
    if sub not in methods:
        return fail("usage: homarus devices {list,approve,reject,revoke,remove}", 2)
    method, params = methods[sub]
    try:
        result = call(args, paths, method, params)
    except GatewayCallError as exc:
        return fail(str(exc.error.get("message", "request failed")))
    except GatewayUnreachable as exc:
        return fail(str(exc))
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        _print(sub, result)
    return 0
