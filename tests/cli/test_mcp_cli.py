"""`homarus mcp list|tools|test` against the config and a real MCP server (mcp-server-time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import make_paths


def _homarus(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    servers = {
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "broken": {"command": "/nonexistent/mcp-server", "timeoutMs": 3000, "env": {"API_KEY": "k-secret-1"}},
    }
    paths = make_paths(tmp_path, {"mcp": {"servers": servers}, "gateway": {"port": 1}})
    env = {**os.environ, "HOMARUS_STATE_DIR": str(paths.state_dir), "HOMARUS_CONFIG": str(paths.config_path)}
    return subprocess.run(
        [sys.executable, "-m", "homarus", "mcp", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_list_tools_test_and_bad_names(tmp_path: Path) -> None:
    listed = _homarus(tmp_path, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["time"]["transport"] == "stdio" and rows["time"]["state"] == "not running"
    assert "k-secret-1" not in listed.stdout
    tools = _homarus(tmp_path, "tools", "time")
    assert tools.returncode == 0, tools.stderr
    assert "time__get_current_time" in tools.stdout and "time__convert_time" in tools.stdout
    tested = _homarus(tmp_path, "test", "time", "--json")
    assert tested.returncode == 0 and json.loads(tested.stdout)["startMs"] > 0
    broken = _homarus(tmp_path, "test", "broken")
    assert broken.returncode == 1 and "broken" in broken.stderr and "k-secret-1" not in broken.stderr
    unknown = _homarus(tmp_path, "tools", "nope")
    assert unknown.returncode == 2 and "no MCP server 'nope'" in unknown.stderr
