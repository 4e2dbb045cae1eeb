"""`homarus agent -m "..."`: one turn, streamed to the terminal.

Through the running gateway when one answers on the configured port (so other clients see the
run), else in-process with the same runtime, stores and locks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from typing import Any

from homarus.config.loader import StatePaths, load_config
from homarus.security.token_store import read_token

__all__ = ["run_agent_command"]


class _Printer:
    """Writes assistant deltas to stdout and tool activity to stderr as events arrive."""

    def __init__(self, quiet_tools: bool) -> None:
        self.quiet_tools = quiet_tools
        self.printed = ""

    def __call__(self, event: dict[str, Any]) -> None:
        data = event.get("data") or {}
        stream = event.get("stream")
        if stream == "assistant":
            text = str(data.get("text", ""))
            if not text.startswith(self.printed):  # a new message (e.g. after a tool call)
                if self.printed:
                    sys.stdout.write("\n")
                self.printed = ""
            sys.stdout.write(text[len(self.printed) :])
            sys.stdout.flush()
            self.printed = text
        elif stream == "tool" and not self.quiet_tools:
            if data.get("phase") == "start":
                args = json.dumps(data.get("args"), ensure_ascii=False)
                sys.stderr.write(f"\n[tool] {data.get('name')} {args[:200]}\n")
            elif data.get("phase") == "result":
                mark = "error" if data.get("isError") else "ok"
                ms = (data.get("meta") or {}).get("durationMs")
                sys.stderr.write(f"[tool] {data.get('name')} → {mark} ({ms} ms)\n")
        elif stream == "lifecycle" and data.get("phase") == "retry":
            sys.stderr.write(f"\n[retry {data.get('attempt')}/{data.get('maxAttempts')}] {data.get('error')}\n")
        elif stream == "lifecycle" and data.get("phase") == "fallback":
            sys.stderr.write(f"\n[fallback] {data.get('from')} failed ({data.get('reason')}); using {data.get('to')}\n")


def run_agent_command(args: argparse.Namespace, paths: StatePaths) -> int:
    loaded = load_config(paths)
    cfg = loaded.config
    url = args.url or f"ws://127.0.0.1:{cfg.gateway.port}"
    token = args.token or (cfg.gateway.auth.token.get_secret_value() if cfg.gateway.auth.token else None)
    if token is None:
        token = read_token(paths.token_path)
    printer = _Printer(args.quiet_tools)
    params: dict[str, Any] = {"message": args.message, "idempotencyKey": str(uuid.uuid4())}
    if args.session:
        params["sessionKey"] = args.session
    if args.model:
        params["model"] = args.model
    if not args.local:
        try:
            result = asyncio.run(_via_gateway(url, token, params, printer, args.timeout))
        except (OSError, TimeoutError) as exc:
            if args.url:
                sys.stderr.write(f"homarus: cannot reach the gateway at {url}: {exc}\n")
                return 1
        else:
            return _finish(result, printer)
    return _finish(asyncio.run(_in_process(paths, params, printer)), printer)


def _finish(result: dict[str, Any], printer: _Printer) -> int:
    if printer.printed:
        sys.stdout.write("\n")
    if result.get("ok") is False or result.get("status") == "error":
        error = result.get("error") or {}
        sys.stderr.write(f"homarus: run failed: {error.get('message') or result.get('summary') or error}\n")
        return 1
    meta = ((result.get("result") or {}).get("meta")) or {}
    if meta.get("aborted"):
        sys.stderr.write("homarus: run aborted\n")
        return 1
    return 0


async def _via_gateway(
    url: str, token: str | None, params: dict[str, Any], printer: _Printer, timeout: float
) -> dict[str, Any]:
    from websockets.asyncio.client import connect

    from homarus import __version__

    async with asyncio.timeout(timeout), connect(url, max_size=None, open_timeout=2) as ws:
        await ws.recv()  # connect.challenge
        await ws.send(
            json.dumps(
                {
                    "type": "req",
                    "id": "c",
                    "method": "connect",
                    "params": {
                        "minProtocol": 3,
                        "maxProtocol": 3,
                        "caps": ["tool-events"],
                        "client": {
                            "id": "homarus-cli",
                            "version": __version__,
                            "platform": sys.platform,
                            "mode": "cli",
                        },
                        "role": "operator",
                        "scopes": ["operator.admin", "operator.write", "operator.read"],
                        **({"auth": {"token": token}} if token else {}),
                    },
                }
            )
        )
        hello = json.loads(await ws.recv())
        if not hello.get("ok"):
            return {"ok": False, "error": hello.get("error")}
        await ws.send(json.dumps({"type": "req", "id": "a", "method": "agent", "params": params}))
        run_id = params["idempotencyKey"]
        async for raw in ws:
            frame = json.loads(raw)
            if frame.get("type") == "event" and frame.get("event") == "agent":
                payload = frame.get("payload") or {}
                if payload.get("runId") == run_id:
                    printer(payload)
            elif frame.get("type") == "res" and frame.get("id") == "a":
                if not frame.get("ok"):
                    return {"ok": False, "error": frame.get("error")}
                if (frame.get("payload") or {}).get("status") != "accepted":
                    return dict(frame["payload"])
    return {"ok": False, "error": {"message": "connection closed before the run finished"}}


async def _in_process(paths: StatePaths, params: dict[str, Any], printer: _Printer) -> dict[str, Any]:
    from homarus.agents.request import RunRequest
    from homarus.gateway.app import GatewayOptions
    from homarus.gateway.server import build_gateway
    from homarus.usecases.runs import final_payload

    gateway = build_gateway(paths, GatewayOptions())
    try:
        forward = gateway.runtime.on_event

        def both(event: dict[str, Any]) -> None:
            printer(event)
            forward(event)

        gateway.runtime.on_event = both
        key = gateway.sessions.resolve_key(params.get("sessionKey"))
        req = RunRequest(
            run_id=params["idempotencyKey"],
            session_key=key,
            message=params["message"],
            model=params.get("model"),
            channel="cli",
        )
        outcome = await gateway.runtime.run(req)
        payload = final_payload(outcome)
        if outcome.status == "error":
            return {"ok": False, "error": {"message": outcome.error}}
        return payload
    finally:
        gateway.journal.close()
