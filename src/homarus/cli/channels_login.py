"""``homarus channels login [whatsapp]``: link an account that pairs by QR code.

The running gateway holds the account's connection (``web.login.start`` / ``web.login.wait``, the
methods the original's Control UI calls), so the link is made where it will be used and no second
connection of the same device competes with the gateway's. Each new code WhatsApp hands out is
drawn again in the terminal; without ``segno`` it is written to a PNG file instead.
"""

from __future__ import annotations

import base64
import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from homarus.config.paths import StatePaths

__all__ = ["run_login"]

#: how long one web.login.wait call waits at most (a fresh code comes about every 20 s)
_WAIT_S = 25.0


def _show(result: dict[str, Any], paths: StatePaths) -> None:
    """The code drawn in the terminal, else written to a private PNG file; then what to do."""
    from homarus.channels.qr_code import QrUnavailable, terminal
    from homarus.fs import atomic_write

    try:
        print(terminal(str(result.get("qr") or "")), flush=True)
    except QrUnavailable:
        url = str(result.get("qrDataUrl") or "")
        dest = paths.state_dir / "whatsapp-link-qr.png"
        atomic_write(dest, base64.b64decode(url.split(",", 1)[1]))
        print(f"the code is in {dest}: open it and scan it", flush=True)
    print(result.get("message") or "", flush=True)


def run_login(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import GatewayCallError, GatewayUnreachable, call, fail

    where: dict[str, Any] = {"channel": args.channel}
    if args.account:
        where["accountId"] = args.account
    deadline = time.monotonic() + max(1.0, float(args.wait))
    args.timeout = max(float(args.timeout), _WAIT_S + 15.0)
    current: str | None = None
    try:
        result = call(args, paths, "web.login.start", {**where, "force": bool(args.force), "timeoutMs": 30_000})
        while True:
            if args.json:
                print(json.dumps({k: v for k, v in result.items() if k != "qrDataUrl"}), flush=True)
            elif result.get("qrDataUrl"):
                _show(result, paths)
            current = result.get("qrDataUrl") or current
            if result.get("connected"):
                if not args.json:
                    print(result.get("message") or "linked", flush=True)
                return 0
            left = deadline - time.monotonic()
            if left <= 0 or result.get("linking") is False:
                return fail(f"not linked: {result.get('message') or 'nobody scanned the code in time'}")
            params: dict[str, Any] = {**where, "timeoutMs": int(min(left, _WAIT_S) * 1000)}
            if current:
                params["currentQrDataUrl"] = current
            result = call(args, paths, "web.login.wait", params)
    except GatewayCallError as exc:
        return fail(str(exc.error.get("message", "request failed")))
    except GatewayUnreachable as exc:
        return fail(f"{exc} (linking happens in the running gateway: start it first, make run)")
    except KeyboardInterrupt:
        return fail("stopped", 130)
