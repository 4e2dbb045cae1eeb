"""The bench's side of an agent turn over the gateway WebSocket: `agent` and `chat.send` requests,
timed until their final frames, and a gateway subprocess started from a config file."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection

from bench.harness import GatewayProcess

TURN_TIMEOUT_S = 30.0

_req_ids = iter(range(1, 10**9))


def _req(method: str, params: dict[str, Any]) -> tuple[str, str]:
    rid = f"b{next(_req_ids)}"
    return rid, orjson.dumps({"type": "req", "id": rid, "method": method, "params": params}).decode()


@dataclass
class AgentTiming:
    accepted_s: float
    final_s: float
    payload: dict[str, Any]
    frames: int  # frames received for the request, the final res included


async def agent_turn(ws: ClientConnection, params: dict[str, Any]) -> AgentTiming:
    """Send ``agent``; seconds to the ``accepted`` ack and to the final res (same id)."""
    rid, text = _req("agent", params)
    accepted = 0.0
    frames = 0
    t0 = time.perf_counter()
    await ws.send(text)
    async with asyncio.timeout(TURN_TIMEOUT_S):
        while True:
            frame = orjson.loads(await ws.recv())
            frames += 1
            if frame.get("type") != "res" or frame.get("id") != rid:
                continue  # an event (agent stream, chat, sessions.changed, tick, presence)
            if not frame.get("ok"):
                raise RuntimeError(f"agent failed: {frame!r}")
            payload: dict[str, Any] = frame.get("payload") or {}
            if payload.get("status") == "accepted":
                accepted = time.perf_counter() - t0
                continue
            return AgentTiming(accepted, time.perf_counter() - t0, payload, frames)


def final_text(payload: dict[str, Any]) -> str:
    payloads = (payload.get("result") or {}).get("payloads") or []
    return str(payloads[0].get("text", "")) if payloads else ""


async def chat_turn(ws: ClientConnection, session_key: str, message: str) -> tuple[float, str, int]:
    """Send ``chat.send``; seconds to the ``chat`` final event for the run, its text, frames received."""
    run_id = f"bench-chat-{uuid.uuid4().hex}"
    rid, text = _req("chat.send", {"sessionKey": session_key, "message": message, "idempotencyKey": run_id})
    acked = False
    final: dict[str, Any] | None = None
    elapsed = 0.0
    frames = 0
    t0 = time.perf_counter()
    await ws.send(text)
    async with asyncio.timeout(TURN_TIMEOUT_S):
        while not (acked and final is not None):
            frame = orjson.loads(await ws.recv())
            frames += 1
            if frame.get("type") == "res" and frame.get("id") == rid:
                if not frame.get("ok"):
                    raise RuntimeError(f"chat.send failed: {frame!r}")
                acked = True
            elif frame.get("event") == "chat":
                payload = frame.get("payload") or {}
                if payload.get("runId") == run_id and payload.get("state") in ("final", "error", "aborted"):
                    if payload.get("state") != "final":
                        raise RuntimeError(f"chat run ended {payload.get('state')}: {payload!r}")
                    final = payload
                    elapsed = time.perf_counter() - t0
    assert final is not None
    blocks = (final.get("message") or {}).get("content") or []
    return elapsed, "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict)), frames


def agent_params(message: str, session_key: str, model: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "message": message,
        "sessionKey": session_key,
        "idempotencyKey": f"bench-{uuid.uuid4().hex}",
    }
    if model is not None:
        params["model"] = model  # an override needs operator.admin, which the bench client has
    return params


def gateway_with_config(config: dict[str, Any], where: Path | None = None) -> GatewayProcess:
    """A not yet started gateway whose config file (``$HOMARUS_CONFIG``) sits in its temp dir."""
    workdir = Path(tempfile.mkdtemp(prefix="homarus-agent-bench-", dir=where))
    path = workdir / "homarus.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return GatewayProcess(env_overrides={"HOMARUS_CONFIG": str(path)}, workdir=workdir)
