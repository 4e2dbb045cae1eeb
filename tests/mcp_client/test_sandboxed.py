"""A stdio MCP server with ``sandbox: true`` runs in bubblewrap: as the sandbox user, in its own
directory, without the host's files or network, with its configured secret in its environment
and never on a command line; the registry's ``mcp-server-time`` runs there from its virtualenv
with nothing listed by hand."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from homarus.config.mcp import McpConfig
from homarus.mcp.hub import McpHub
from homarus.mcp.sandboxing import install_prefixes
from homarus.tools.base import ToolContext, ToolRegistry, ToolResult

HERE = Path(__file__).parent
DEMO = str(HERE / "demo_server.py")
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
SECRET = "sandboxed-s3cret-9f2c"


def _body(result: ToolResult) -> str:
    text = result.content[0].text  # type: ignore[union-attr]
    return text.split("---\n", 1)[1].rsplit("\n<<<END_EXTERNAL", 1)[0]


def _cmdlines() -> str:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
            except OSError:
                continue
    return "\n".join(out)


async def test_a_sandboxed_server_is_confined(tmp_path: Path) -> None:
    private = tmp_path / "state-secret.txt"
    private.write_text("host only")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    servers: dict[str, Any] = {
        "box": {
            "command": sys.executable,
            "args": [DEMO, "stdio"],
            "env": {"DEMO_TOKEN": SECRET},
            "sandbox": True,
            "sandboxReadPaths": [str(HERE)],
            "timeoutMs": 30_000,
        },
        "host": {"command": sys.executable, "args": [DEMO, "stdio"], "env": {"DEMO_TOKEN": SECRET}},
        "time": {"command": TIME_SERVER, "sandbox": True, "timeoutMs": 30_000},
    }
    registry = ToolRegistry()
    hub = McpHub(McpConfig.model_validate({"servers": servers}), registry, log_dir=tmp_path / "logs")
    ctx = ToolContext("k", "main", "r", "c", tmp_path)
    try:
        await hub.prepare("main")
        rows = {r["name"]: r for r in hub.status()["servers"]}
        assert rows["box"]["state"] == "ready", rows["box"]["lastError"]
        assert rows["box"]["sandbox"] is True and rows["host"]["sandbox"] is False
        assert SECRET not in _cmdlines()  # handed over in the environment, not on a command line
        assert SECRET not in json.dumps(hub.status())

        args = {"path": str(private), "port": port}
        inside = json.loads(_body(await registry.get("box__probe").execute(ctx, args)))  # type: ignore[union-attr]
        outside = json.loads(_body(await registry.get("host__probe").execute(ctx, args)))  # type: ignore[union-attr]
        assert outside == {**outside, "uid": os.getuid(), "sees": True, "reached": True, "token": SECRET}
        assert inside == {
            "uid": 65534,
            "cwd": "/workspace",
            "token": SECRET,
            "home": "/workspace",
            "sees": False,
            "reached": False,
        }
        assert (tmp_path / "mcp" / "box").is_dir()  # its own directory, under the state dir

        assert rows["time"]["state"] == "ready", rows["time"]["lastError"]
        now = await registry.get("time__get_current_time").execute(ctx, {"timezone": "UTC"})  # type: ignore[union-attr]
        assert not now.is_error and '"timezone": "UTC"' in _body(now)
    finally:
        await hub.stop()
        listener.close()


async def test_a_sandboxed_server_that_cannot_run_there_fails_alone(tmp_path: Path) -> None:
    """Its script is not among the paths it may read: the start fails with the server's own error."""
    cfg = {
        "servers": {"box": {"command": sys.executable, "args": [DEMO, "stdio"], "sandbox": True, "timeoutMs": 20_000}}
    }
    hub = McpHub(McpConfig.model_validate(cfg), ToolRegistry(), log_dir=tmp_path / "logs")
    try:
        await hub.prepare("main")
        row = hub.status()["servers"][0]
        assert row["state"] == "failed" and row["lastError"]
        assert "demo_server.py" in (tmp_path / "logs" / "mcp-box.log").read_text()  # python says it cannot open it
    finally:
        await hub.stop()


def test_install_prefixes_follow_links_and_shebangs() -> None:
    prefixes = install_prefixes(TIME_SERVER)
    venv = str(Path(sys.executable).parent.parent)
    assert venv in prefixes  # the console script's virtualenv
    real_python = Path(os.path.realpath(sys.executable))
    if not str(real_python).startswith("/usr/"):
        assert any(str(real_python).startswith(p + "/") for p in prefixes)  # the Python it points to
    assert install_prefixes("/usr/bin/env") == []  # the system's own directories are mounted anyway


def test_sandbox_is_for_stdio_servers() -> None:
    with pytest.raises(ValidationError, match="sandbox is for stdio servers"):
        McpConfig.model_validate({"servers": {"r": {"url": "http://example.com/mcp", "sandbox": True}}})
    with pytest.raises(ValidationError, match="not an absolute path"):
        McpConfig.model_validate({"servers": {"r": {"command": "x", "sandbox": True, "sandboxReadPaths": ["rel"]}}})
