"""MCP tool-call overhead over stdio: what a Homarus MCP tool call costs on top of the SDK's own.

Run with ``.venv/bin/python bench/mcp_bench.py [--calls N]``. Two stdio servers are started the
way the gateway starts them (``homarus.mcp.hub.McpHub``): the SDK-written demo server of the tests
(``echo``) and the third-party ``mcp-server-time`` from PyPI (``get_current_time``). For each the
bench times N sequential calls through the Homarus tool (schema, call, result mapping, the
untrusted-content wrapper) and N through a bare SDK ``Client`` on a second process of the same
server, and prints p50/p95 and the server's start (handshake and tool listing).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DEMO = str(ROOT / "tests" / "mcp_client" / "demo_server.py")

SERVERS: dict[str, tuple[list[str], str, dict[str, Any]]] = {
    "demo": ([DEMO, "stdio"], "echo", {"text": "hello"}),
    "time": (["-m", "mcp_server_time", "--local-timezone", "UTC"], "get_current_time", {"timezone": "UTC"}),
}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _homarus(name: str, args: list[str], tool: str, params: dict[str, Any], n: int) -> tuple[float, list[float]]:
    from homarus.config.mcp import McpConfig
    from homarus.mcp.hub import McpHub
    from homarus.tools.base import ToolContext, ToolRegistry

    registry = ToolRegistry()
    cfg = McpConfig.model_validate({"servers": {name: {"command": sys.executable, "args": args}}})
    with tempfile.TemporaryDirectory() as logs:
        hub = McpHub(cfg, registry, log_dir=Path(logs))
        started = time.perf_counter()
        await hub.prepare("main")
        start_ms = (time.perf_counter() - started) * 1000
        target = registry.get(f"{name}__{tool}")
        assert target is not None
        ctx = ToolContext("bench", "main", "r", "c", Path(logs))
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await target.execute(ctx, params)
            times.append((time.perf_counter() - t0) * 1000)
        await hub.stop()
    return start_ms, times


async def _sdk(args: list[str], tool: str, params: dict[str, Any], n: int) -> list[float]:
    import os

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    times = []
    with os.fdopen(os.open(os.devnull, os.O_WRONLY), "w") as errlog:
        transport = stdio_client(StdioServerParameters(command=sys.executable, args=args), errlog=errlog)
        async with Client(transport) as client:
            await client.list_tools()
            for _ in range(n):
                t0 = time.perf_counter()
                await client.call_tool(tool, params)
                times.append((time.perf_counter() - t0) * 1000)
    return times


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    n = parser.parse_args().calls
    print("| server | start (ms) | Homarus call p50 | p95 | bare SDK call p50 | p95 | overhead p50 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, (args, tool, params) in SERVERS.items():
        start_ms, ours = await _homarus(name, args, tool, params, n)
        bare = await _sdk(args, tool, params, n)
        o50, b50 = statistics.median(ours), statistics.median(bare)
        print(
            f"| {name} ({tool}) | {start_ms:.0f} | {o50:.2f} ms | {_pct(ours, 0.95):.2f} ms | "
            f"{b50:.2f} ms | {_pct(bare, 0.95):.2f} ms | {o50 - b50:+.2f} ms |"
        )


if __name__ == "__main__":
    asyncio.run(main())
