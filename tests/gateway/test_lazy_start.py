"""The lazy-loading rule, checked by what a started gateway has imported (not by timing).

A fresh interpreter starts the gateway with the default config, waits for ``/health``, and
reports ``sys.modules``. A subsystem that is off or idle must not be there: an import that drags
one in at start fails here, long before anyone measures start-up time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# What the default gateway must not import before it is used (module prefixes).
MUST_STAY_LAZY = (
    "homarus.agents.runtime",
    "homarus.agents.loop",
    "homarus.providers",
    "homarus.tools",
    "homarus.memory.",
    "homarus.skills",
    "homarus.cron",
    "homarus.sandbox",
    "homarus.audit",
    "homarus.sessions.manager",
    "homarus.plugins.loader",
    "homarus.plugins.discovery",
    "homarus.plugins.manifest",
    "homarus.gateway.methods.",
    "homarus.gateway.http.openai",
    "homarus.gateway.http.hooks",
    "homarus.gateway.http.tools_invoke",
    "homarus.gateway.http.session_history",
    "homarus.gateway.services.agent_runtime",
    "homarus.gateway.services.memory",
    "homarus.usecases.cron",
    "homarus.gateway.services.tooling",
    "homarus.config.memory",
    "homarus.config.sandbox",
    "homarus.config.skills",
    "homarus.config.models",
    "homarus.config.automation",
    "homarus.config.channels",
    "homarus.channels",
    "homarus.gateway.services.channel",
    "homarus.config.mcp",
    "homarus.mcp",
    "homarus.browser",
    "playwright",
    "homarus.config.storage",
    "homarus.storage",
    "psycopg",
    "homarus.gateway.methods.mcp",
    "mcp.",
    "mcp_types",
    "markdown_it",
    "httpx",
    "numpy",
    "tokenizers",
    "safetensors",
    "sqlite_vec",
    "croniter",
    "jsonschema",
    "yaml",
)

PROBE = """
import asyncio, json, sys, urllib.request
from homarus.config.paths import StatePaths
from homarus.gateway.app import GatewayOptions
from homarus.gateway.server import build_gateway, make_server

state = __import__("pathlib").Path(sys.argv[1])
gateway = build_gateway(StatePaths(state, state / "homarus.json"), GatewayOptions(port=0, token="t" * 32))

async def main():
    server = make_server(gateway)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{server.bound_port}/health"
    body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
    assert json.loads(body)["ok"] is True
    server.should_exit = True
    await task

asyncio.run(main())
print(json.dumps(sorted(name for name, module in sys.modules.items() if module is not None)))
"""


def started_modules(state: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMARUS_")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(state)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    modules: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return modules


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return started_modules(tmp_path_factory.mktemp("state"))


def test_the_probe_sees_the_gateway(modules: list[str]) -> None:
    assert "homarus.gateway.app" in modules and "uvicorn" in modules


@pytest.mark.parametrize("prefix", MUST_STAY_LAZY)
def test_idle_subsystem_is_not_imported(modules: list[str], prefix: str) -> None:
    loaded = [m for m in modules if (m == prefix.rstrip(".") and not prefix.endswith(".")) or m.startswith(prefix)]
    assert loaded == [], f"imported at start although unused: {loaded}"


#: what a gateway whose only extra is a chat channel still must not load before its first agent run
LAZY_WITH_A_CHANNEL = (
    "homarus.tools.exec",
    "homarus.tools.web",
    "homarus.tools.files",
    "homarus.sandbox",
    "homarus.gateway.services.exec",
    "homarus.gateway.services.exec_approvals",
    "homarus.agents.runtime",
    "markdown_it",
)


def test_a_chat_channel_loads_its_plugin_not_the_tools(tmp_path: Path) -> None:
    # a token for a Bot API nobody serves: the account fails to start, the gateway serves anyway
    (tmp_path / "homarus.json").write_text(
        json.dumps({"channels": {"telegram": {"botToken": "1:x", "apiRoot": "http://127.0.0.1:9"}}}), encoding="utf-8"
    )
    loaded = started_modules(tmp_path)
    assert "homarus.channels.telegram.account" in loaded
    assert [m for m in loaded if m.startswith(LAZY_WITH_A_CHANNEL)] == []
