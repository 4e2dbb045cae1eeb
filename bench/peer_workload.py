"""The workload every system in the side-by-side bench gets, measured the same way for each.

All client code is this file's: a protocol-v4 WebSocket client (device-less connect as a backend
client, which both gateways accept with the shared token), httpx for HTTP. Every loop is bounded
by a request count and a wall-clock cap; everything goes to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench.harness import HOST, percentile
from bench.peer_targets import GATEWAY_TOKEN, HOOKS_TOKEN, tree_cpu_s

T = TypeVar("T")
CAP_S = 60.0  # no load phase runs longer than this, whatever its count


def _connect_frame() -> str:
    return json.dumps(
        {
            "type": "req",
            "id": "connect",
            "method": "connect",
            "params": {
                "minProtocol": 4,
                "maxProtocol": 4,
                "client": {"id": "gateway-client", "version": "1.0.0", "platform": "linux", "mode": "backend"},
                "role": "operator",
                "scopes": ["operator.admin", "operator.read", "operator.write"],
                "auth": {"token": GATEWAY_TOKEN},
            },
        }
    )


async def open_ws(port: int) -> ClientConnection:
    ws = await connect(f"ws://{HOST}:{port}", max_size=None, compression=None, ping_interval=None, open_timeout=30)
    async with asyncio.timeout(30):
        await ws.recv()  # connect.challenge
        await ws.send(_connect_frame())
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("type") == "res" and frame.get("id") == "connect":
                if not frame.get("ok"):
                    raise RuntimeError(f"connect refused: {frame.get('error')}")
                return ws


async def call(ws: ClientConnection, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """One request; its final response (a second ``res`` with the same id replaces an ``accepted`` one)."""
    rid = uuid.uuid4().hex
    await ws.send(json.dumps({"type": "req", "id": rid, "method": method, "params": params or {}}))
    while True:
        frame = json.loads(await ws.recv())
        if frame.get("type") != "res" or frame.get("id") != rid:
            continue
        if (frame.get("payload") or {}).get("status") == "accepted":
            continue
        return frame  # type: ignore[no-any-return]


async def handshakes(port: int, n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        ws = await open_ws(port)
        out.append(time.perf_counter() - started)
        await ws.close()
    return out


async def sequential(port: int, n: int, method: str = "health") -> list[float]:
    ws = await open_ws(port)
    try:
        for _ in range(min(20, n)):
            await call(ws, method)
        out = []
        deadline = time.monotonic() + CAP_S
        for _ in range(n):
            started = time.perf_counter()
            frame = await call(ws, method)
            out.append(time.perf_counter() - started)
            if not frame.get("ok") or time.monotonic() > deadline:
                break
        return out
    finally:
        await ws.close()


async def ws_throughput(port: int, pid: int, total: int, sockets: int = 8) -> dict[str, float]:
    """``health`` over ``sockets`` sockets, one request in flight on each (the peer bench's method)."""
    conns = [await open_ws(port) for _ in range(sockets)]
    done = 0
    deadline = time.monotonic() + CAP_S

    async def worker(ws: ClientConnection) -> None:
        nonlocal done
        while done < total and time.monotonic() < deadline:
            done += 1
            await call(ws, "health")

    cpu0, started = tree_cpu_s(pid), time.perf_counter()
    try:
        await asyncio.gather(*(worker(ws) for ws in conns))
    finally:
        for ws in conns:
            await ws.close()
    elapsed, cpu = time.perf_counter() - started, tree_cpu_s(pid) - cpu0
    return {"rps": done / elapsed, "cpu_ms_per_req": cpu * 1000 / max(1, done), "n": done}


async def http_load(
    pid: int, url: str, headers: dict[str, str], body: dict[str, Any], total: int, concurrency: int = 8
) -> dict[str, float]:
    """``total`` POSTs over ``concurrency`` keep-alive connections; req/s, p50 and server CPU per request."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    latencies: list[float] = []
    errors = 0
    sent = 0
    deadline = time.monotonic() + CAP_S
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        for _ in range(concurrency):  # warm the connections
            await client.post(url, headers=headers, json=body)

        async def worker() -> None:
            nonlocal sent, errors
            while sent < total and time.monotonic() < deadline:
                sent += 1
                started = time.perf_counter()
                response = await client.post(url, headers=headers, json=body)
                latencies.append(time.perf_counter() - started)
                errors += response.status_code >= 400

        cpu0, started = tree_cpu_s(pid), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed, cpu = time.perf_counter() - started, tree_cpu_s(pid) - cpu0
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50) * 1000,
        "cpu_ms_per_req": cpu * 1000 / max(1, len(latencies)),
        "errors": float(errors),
        "n": float(len(latencies)),
    }


async def tools_invoke(port: int, pid: int, total: int) -> dict[str, float]:
    body = {"tool": "sessions_list", "args": {}}
    headers = {"authorization": f"Bearer {GATEWAY_TOKEN}"}
    return await http_load(pid, f"http://{HOST}:{port}/tools/invoke", headers, body, total)


async def hooks_wake(port: int, pid: int, total: int) -> dict[str, float]:
    body = {"text": "bench ping", "mode": "next-heartbeat"}
    headers = {"authorization": f"Bearer {HOOKS_TOKEN}"}
    return await http_load(pid, f"http://{HOST}:{port}/hooks/wake", headers, body, total)


async def agent_turns(port: int, n: int, session: str) -> list[float]:
    """``n`` sequential ``agent`` turns "hi" in one session: seconds from request to the final res."""
    ws = await open_ws(port)
    try:
        out = []
        for _ in range(n):
            params = {"message": "hi", "sessionKey": session, "idempotencyKey": uuid.uuid4().hex}
            started = time.perf_counter()
            frame = await call(ws, "agent", params)
            out.append(time.perf_counter() - started)
            if not frame.get("ok"):
                raise RuntimeError(f"agent turn failed: {frame.get('error')}")
        return out
    finally:
        await ws.close()


async def openai_turns(port: int, n: int, api_key: str | None, model: str, warmup: int = 3) -> list[float]:
    """``n`` non-streaming ``POST /v1/chat/completions`` "hi" turns after ``warmup`` unmeasured ones."""
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "user": "bench"}
    out = []
    async with httpx.AsyncClient(timeout=60) as client:
        for i in range(warmup + n):
            started = time.perf_counter()
            response = await client.post(f"http://{HOST}:{port}/v1/chat/completions", json=body, headers=headers)
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                raise RuntimeError(f"chat completion failed: {response.status_code} {response.text[:300]}")
            if i >= warmup:
                out.append(elapsed)
    return out


async def model_alone(base_url: str, body: bytes, n: int) -> list[float]:
    """``body`` (a recorded model request) POSTed to the fake model itself ``n`` times: what a turn
    spends in the model, to tell a gateway's own time from it."""
    out = []
    async with httpx.AsyncClient(timeout=30) as client:
        for i in range(n + 3):
            started = time.perf_counter()
            async with client.stream("POST", f"{base_url}/chat/completions", content=body) as response:
                async for _ in response.aiter_bytes():
                    pass
            if i >= 3:
                out.append(time.perf_counter() - started)
    return out


def run(coro_fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    return asyncio.run(coro_fn(*args))


def wrk_post(
    pid: int, url: str, bearer: str, body: dict[str, Any], seconds: int = 5, conns: int = 8
) -> dict[str, float]:
    """``wrk`` (when installed) POSTing ``body``: a C load generator, so the client does not cap the
    server on two cores the way a Python client does. req/s, p50 and server CPU per request."""
    exe = shutil.which("wrk")
    if exe is None:
        return {}
    script = (
        'wrk.method = "POST"\n'
        f"wrk.body = {json.dumps(json.dumps(body))}\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Bearer {bearer}"\n'
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        cpu0 = tree_cpu_s(pid)
        out = subprocess.run(
            [exe, "-t1", f"-c{conns}", f"-d{seconds}s", "--latency", "-s", f.name, url],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
            check=True,
        ).stdout
        cpu = tree_cpu_s(pid) - cpu0
    finally:
        os.unlink(f.name)
    rps = float(_grab(r"Requests/sec:\s+([\d.]+)", out))
    requests = float(_grab(r"(\d+) requests in", out))
    p50 = _grab(r"50%\s+([\d.]+)(us|ms|s)", out, whole=True)
    return {"rps": rps, "p50_ms": p50, "cpu_ms_per_req": cpu * 1000 / max(1.0, requests), "n": requests}


def _grab(pattern: str, text: str, whole: bool = False) -> float:
    match = re.search(pattern, text)
    if match is None:
        return float("nan")
    if not whole:
        return float(match.group(1))
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[match.group(2)]
    return float(match.group(1)) * scale
