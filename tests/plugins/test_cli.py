"""`homarus plugins list|info|enable|disable|doctor` as subprocesses against a temp state dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gateway_process import run_cli, scrubbed_env
from tests.plugins.helpers import make_plugin

CLI_TIMEOUT = 30.0

GOOD = """
async def ping(params, ctx):
    return {"pong": True}

async def shout(ctx, *, text: str) -> str:
    return text.upper()

def register(api):
    api.register_gateway_method("good.ping", ping, scope="operator.read")
    api.register_tool(shout)
    api.on("after_tool_call", lambda e, c: None)
"""
GREEDY = """
async def handler(params, ctx):
    return None

def register(api):
    api.register_gateway_method("health", handler)
"""


def cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(scrubbed_env(state), "plugins", *args, timeout=CLI_TIMEOUT)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    ext = state / "extensions"
    make_plugin(ext, "good", GOOD, name="Good", version="1.0.0", contracts={"tools": ["shout"]})
    make_plugin(ext, "broken", "raise ImportError('missing dependency')\n")
    make_plugin(ext, "greedy", GREEDY)
    return state


def json_out(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_list(state: Path) -> None:
    proc = cli(state, "list")
    assert proc.returncode == 0, proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.split() == ["ID", "ORIGIN", "STATUS", "VERSION", "DIAGNOSTICS"]
    table = {row.split()[0]: row.split()[1:] for row in rows}
    assert table == {
        "builtin-tools": ["bundled", "loaded", "0.1.0", "0"],
        "channels": ["bundled", "loaded", "0.1.0", "0"],
        "telegram": ["bundled", "loaded", "0.1.0", "0"],
        "discord": ["bundled", "loaded", "0.1.0", "0"],
        "slack": ["bundled", "loaded", "0.1.0", "0"],
        "whatsapp": ["bundled", "loaded", "0.1.0", "0"],
        "broken": ["global", "error", "-", "1"],
        "good": ["global", "loaded", "1.0.0", "0"],
        "greedy": ["global", "loaded", "-", "1"],
    }
    rows_json = json_out(cli(state, "list", "--json"))
    assert [r["id"] for r in rows_json] == [
        "builtin-tools",
        "channels",
        "telegram",
        "discord",
        "slack",
        "whatsapp",
        "broken",
        "good",
        "greedy",
    ]
    assert rows_json[7] == {
        "id": "good",
        "name": "Good",
        "version": "1.0.0",
        "origin": "global",
        "status": "loaded",
        "source": str(state / "extensions" / "good"),
        "diagnostics": 0,
    }


def test_info(state: Path) -> None:
    proc = cli(state, "info", "good")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("good: Good 1.0.0\n")
    for needle in (
        "origin:  global",
        "status:  loaded",
        "entry:   plugin.py",
        "contracts.tools: shout",
        'configSchema: {"type": "object"}',
        "hooks: after_tool_call",
        "tools: shout",
        "methods: good.ping",
        "diagnostics: none",
    ):
        assert needle in out
    data = json_out(cli(state, "info", "broken", "--json"))
    assert data["status"] == "error"
    assert data["manifest"] == {
        "id": "broken",
        "configSchema": {"type": "object"},
        "entry": "plugin.py",
        "contracts": {"tools": [], "channels": []},
    }
    assert data["diagnostics"] == [
        {
            "level": "error",
            "pluginId": "broken",
            "source": str(state / "extensions" / "broken"),
            "message": "plugin failed during register: import raised ImportError('missing dependency')",
        }
    ]
    missing = cli(state, "info", "nope")
    assert missing.returncode == 1 and "no plugin with id 'nope'" in missing.stderr


def test_doctor_and_enable_disable(state: Path) -> None:
    doctor = cli(state, "doctor")
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "9 plugin(s): 1 error, 8 loaded" in doctor.stdout
    assert (
        "error: [broken] plugin failed during register: import raised ImportError('missing dependency')"
        in doctor.stdout
    )
    assert "error: [greedy] gateway method 'health' already registered (core)" in doctor.stdout

    disabled = cli(state, "disable", "broken")
    assert disabled.returncode == 0, disabled.stderr
    assert disabled.stdout.startswith("disabled: broken (plugins.entries.broken.enabled = false; written to ")
    config = json.loads((state / "homarus.json").read_text(encoding="utf-8"))
    assert config == {"plugins": {"entries": {"broken": {"enabled": False}}}}

    assert cli(state, "doctor").returncode == 1  # greedy's refused method is still an error
    assert cli(state, "disable", "greedy").returncode == 0
    report = json_out(cli(state, "doctor", "--json"))
    assert report["ok"] is True
    assert {p["id"]: p["status"] for p in report["plugins"]}["broken"] == "disabled"
    assert cli(state, "doctor").returncode == 0

    again = cli(state, "disable", "broken")
    assert "unchanged" in again.stdout
    enabled = cli(state, "enable", "broken")
    assert enabled.returncode == 0 and "enabled: broken" in enabled.stdout
    config = json.loads((state / "homarus.json").read_text(encoding="utf-8"))
    assert config["plugins"]["entries"] == {"broken": {"enabled": True}, "greedy": {"enabled": False}}
    assert cli(state, "doctor").returncode == 1

    unknown = cli(state, "enable", "ghost")
    assert unknown.returncode == 1 and "no plugin with id 'ghost'" in unknown.stderr


def test_enable_warns_when_still_denied(state: Path) -> None:
    (state / "homarus.json").write_text('{plugins: {deny: ["good"]}}', encoding="utf-8")
    proc = cli(state, "enable", "good")
    assert proc.returncode == 0, proc.stderr
    assert "warning: good still does not load: listed in plugins.deny" in proc.stdout


def test_enable_refuses_an_invalid_result(state: Path) -> None:
    (state / "homarus.json").write_text('{plugins: {entries: {good: {enabled: "yes please"}}}}', encoding="utf-8")
    proc = cli(state, "disable", "good")
    assert proc.returncode == 1  # the existing file does not validate: nothing is written
    assert "plugins.entries.good.enabled" in proc.stderr


def test_help_stays_cheap() -> None:
    probe = (
        "import sys\nfrom homarus.cli.main import build_parser\nbuild_parser()\n"
        "print(sorted(m for m in ('homarus.plugins', 'jsonschema', 'homarus.cli.plugins_cmd') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False
    )
    assert proc.stdout.strip() == "[]", proc.stderr
