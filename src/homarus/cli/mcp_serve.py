"""`homarus mcp serve`: the assistant as an MCP server over stdio, for editors and desktop apps.

Every tool goes through the running gateway with its token, one connection per call, asking only
for the scopes it needs: read-only by default (``sessions_list``, ``session_history``,
``memory_search``); ``--allow-send`` adds ``send_message`` (``operator.write``: a turn in a
session, answered with the assistant's reply). A gateway error is the tool's error; the gateway
being down is a tool error saying so, never a crash of the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from mcp.server.mcpserver import MCPServer

    from homarus.config.paths import StatePaths

__all__ = ["build_server", "run_serve"]

HISTORY_MAX = 200


def build_server(url: str, token: str | None, *, allow_send: bool, timeout: float = 120.0) -> MCPServer:
    import uuid

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from homarus.cli.client import GatewayCallError, call_gateway
    from homarus.security.scopes import READ, WRITE

    server = MCPServer(
        "homarus",
        instructions="The Homarus assistant: its sessions, their history, its memory"
        + (", and a way to talk to it." if allow_send else " (read-only)."),
    )

    async def gateway(method: str, params: dict[str, Any], scopes: list[str], **kw: Any) -> Any:
        try:
            return await call_gateway(url, token, method, params, timeout=timeout, scopes=scopes, **kw)
        except GatewayCallError as exc:
            raise ToolError(str(exc.error.get("message") or "the gateway refused the call")) from None
        except (OSError, TimeoutError) as exc:
            why = str(exc) or type(exc).__name__
            raise ToolError(f"the Homarus gateway at {url} is not reachable: {why}") from None

    @server.tool()
    async def sessions_list(limit: int = 50, search: str | None = None) -> str:
        """List the assistant's sessions, newest first: key, label, last update."""
        params: dict[str, Any] = {"limit": max(1, min(limit, 500)), "includeLastMessage": True}
        if search:
            params["search"] = search
        result = await gateway("sessions.list", params, [READ])
        lines = [
            f"{row['key']}  {row.get('label') or ''}  {row.get('lastMessagePreview') or ''}".strip()
            for row in result.get("sessions", [])
        ]
        return "\n".join(lines) or "no sessions"

    @server.tool()
    async def session_history(session_key: str = "main", limit: int = 20) -> str:
        """The last messages of a session (user and assistant text)."""
        params = {"sessionKey": session_key, "limit": max(1, min(limit, HISTORY_MAX))}
        result = await gateway("chat.history", params, [READ])
        out = []
        for message in result.get("messages", []):
            content = message.get("content")
            text = (
                content
                if isinstance(content, str)
                else "".join(
                    b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
                )
            )
            if text and message.get("role") in ("user", "assistant"):
                out.append(f"{message['role']}: {text}")
        return "\n\n".join(out) or "no messages"

    @server.tool()
    async def memory_search(query: str, max_results: int = 5) -> str:
        """Search the assistant's memory files; the best matching snippets with their file and lines."""
        result = await gateway("memory.search", {"query": query, "maxResults": max(1, min(max_results, 50))}, [READ])
        hits = result.get("results", [])
        blocks = [
            f"{h.get('path')}:{h.get('startLine')}-{h.get('endLine')} ({h.get('score', 0):.2f})\n{h.get('snippet', '')}"
            for h in hits
        ]
        return "\n\n".join(blocks) or "no matches"

    if allow_send:

        @server.tool()
        async def send_message(message: str, session_key: str = "main") -> str:
            """Send a message to the assistant in a session and return its reply."""
            params = {"message": message, "sessionKey": session_key, "idempotencyKey": f"mcp-{uuid.uuid4()}"}
            result = await gateway("agent", params, [WRITE], expect_final=True)
            payloads = (result.get("result") or {}).get("payloads") or []
            return "\n\n".join(p.get("text", "") for p in payloads if p.get("text")) or "(no reply)"

    return server


def run_serve(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.cli.client import gateway_target

    url, token = gateway_target(paths, getattr(args, "url", None), getattr(args, "token", None))
    build_server(url, token, allow_send=bool(args.allow_send), timeout=args.timeout).run("stdio")
    return 0
