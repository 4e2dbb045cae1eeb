"""`homarus mcp serve` driven by the official SDK's client over stdio, against a real gateway:
read-only tools by default, send_message with --allow-send, errors as tool errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, run_gateway

CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
}


def _serve(state_dir: Path, url: str, *extra: str) -> Any:
    env = {**os.environ, "HOMARUS_STATE_DIR": str(state_dir)}
    args = ["-m", "homarus", "mcp", "serve", "--url", url, "--token", TEST_TOKEN, *extra]
    errlog = open(os.devnull, "w")  # noqa: SIM115 - closed by the caller's ExitStack through the client's exit
    return stdio_client(StdioServerParameters(command=sys.executable, args=args, env=env), errlog=errlog), errlog


def _text(result: Any) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


async def test_an_mcp_client_talks_to_the_assistant(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("hello from homarus")])
        transport, errlog = _serve(gw.paths.state_dir, gw.url, "--allow-send")
        with errlog:
            async with Client(transport) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert names == {"sessions_list", "session_history", "memory_search", "send_message"}
                reply = await client.call_tool("send_message", {"message": "hi there"})
                assert reply.is_error is False and "hello from homarus" in _text(reply)
                listed = await client.call_tool("sessions_list", {})
                assert "agent:main:main" in _text(listed)
                history = await client.call_tool("session_history", {"session_key": "main"})
                assert "user: hi there" in _text(history) and "assistant: hello from homarus" in _text(history)
                bad = await client.call_tool("session_history", {"session_key": "agent:ghost:x"})
                assert bad.is_error is True and "ghost" in _text(bad)


async def test_read_only_by_default_and_a_gateway_that_is_down(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        state, url = gw.paths.state_dir, gw.url
        transport, errlog = _serve(state, url)
        with errlog:
            async with Client(transport) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert "send_message" not in names and "sessions_list" in names
    transport, errlog = _serve(state, url)  # the gateway has stopped
    with errlog:
        async with Client(transport) as client:
            down = await client.call_tool("sessions_list", {})
            assert down.is_error is True and "not reachable" in _text(down)
