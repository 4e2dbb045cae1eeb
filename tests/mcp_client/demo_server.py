"""An MCP server written with the official SDK for the tests: ``python demo_server.py stdio`` or
``python demo_server.py http PORT`` (streamable HTTP on 127.0.0.1) or ``sse PORT`` (SSE only)."""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("demo")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def crash() -> str:
    """Die at once, as a broken server would."""
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after a while."""
    await asyncio.sleep(seconds)
    return "late"


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Report progress count times."""
    for n in range(count):
        await ctx.report_progress(n + 1, count, f"step {n + 1}")
    return f"{count} steps"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named ``added`` and tell the client its tool list changed."""

    def added() -> str:
        """A tool that was not there at the start."""
        return "I was added"

    server.add_tool(added)
    await ctx.notify_tools_changed()  # 2026-07-28: to the client's subscriptions/listen stream
    return "grown"


@server.tool()
def probe(path: str, port: int) -> dict[str, object]:
    """Who and where the server is: its uid, directory, token, whether it sees a path and reaches a port."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            reached = True
    except OSError:
        reached = False
    return {
        "uid": os.getuid(),
        "cwd": os.getcwd(),
        "token": os.environ.get("DEMO_TOKEN"),
        "home": os.environ.get("HOME"),
        "sees": os.path.exists(path),
        "reached": reached,
    }


@server.tool()
def fail() -> str:
    """Fail as a tool (isError)."""
    raise ValueError("the tool failed on purpose")


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif sys.argv[1] == "sse":  # the older transport only: GET /sse and POST /messages/
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
