"""`homarus security audit`: a safe installation passes; each risky setting is listed with its
fix, exit 1 when one is high; the gateway logs the high ones at start."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from homarus.config.schema import HomarusConfig
from homarus.security.config_audit import audit_config
from tests.conftest import run_gateway
from tests.gateway_process import json_out, run_cli, scrubbed_env

SHARED = "shared-token-0123456789abcdefXYZ"
RISKY: dict[str, Any] = {
    "gateway": {"bind": "lan", "auth": {"token": SHARED}},
    "session": {"shareMainWithNonOwners": True},
    "channels": {
        "telegram": {
            "botToken": "123:abc",
            "dmPolicy": "open",
            "allowFrom": ["*"],
            "strangerTools": ["exec", "mcp:fs"],
        }
    },
    "tools": {"exec": {"security": "full"}},
    "hooks": {"enabled": True, "token": "hooks-token-0123456789abcdefXYZ"},
    "mcp": {"servers": {"fs": {"command": "/bin/cat"}}},
}


def write(state: Path, config: dict[str, Any]) -> dict[str, str]:
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    (state / "homarus.json").write_text(json.dumps(config))
    os.chmod(state / "homarus.json", 0o600)
    return scrubbed_env(state)


def test_a_default_installation_has_nothing_to_report(tmp_path: Path) -> None:
    env = write(tmp_path / "state", {})
    result = run_cli(env, "security", "audit")
    assert result.returncode == 0 and "no risky settings found" in result.stdout


def test_each_risky_setting_is_listed_with_its_fix_and_high_exits_1(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = write(state, RISKY)
    (state / "gateway.token").write_text("x" * 40)
    os.chmod(state / "gateway.token", 0o644)
    result = run_cli(env, "security", "audit", "--json")
    assert result.returncode == 1, result.stderr
    report = json_out(result)
    assert report["ok"] is False
    found = {f["check"]: f for f in report["findings"]}
    expected_high = {
        "session.shared_main",
        "channels.dm_open",
        "channels.stranger_tools_unsandboxed",
        "mcp.unsandboxed_for_strangers",
        "tools.exec_full_unsandboxed",
        "gateway.exposed",
        "fs.loose_mode",
    }
    assert expected_high <= {c for c, f in found.items() if f["severity"] == "high"}
    assert all(f["fix"] for f in report["findings"])
    assert SHARED not in result.stdout  # the audit names settings, never their secret values
    text = run_cli(env, "security", "audit")
    assert text.returncode == 1 and "fix: remove session.shareMainWithNonOwners" in text.stdout


@pytest.mark.parametrize(
    ("config", "check", "severity"),
    [
        ({"hooks": {"enabled": True, "token": "short-token-1234567"}}, "hooks.token_short", "medium"),
        ({"gateway": {"auth": {"token": "short-token"}}}, "gateway.token_short", "medium"),
        ({"gateway": {"auth": {"mode": "none"}}}, "gateway.auth_none", "medium"),
        ({"channels": {"telegram": {"allowFrom": ["1", "2"], "dmPolicy": "allowlist"}}}, "channels.no_owner", "low"),
    ],
)
def test_single_findings(tmp_path: Path, config: dict[str, Any], check: str, severity: str) -> None:
    findings = audit_config(HomarusConfig.model_validate(config), tmp_path)
    assert {(f.check, f.severity) for f in findings} >= {(check, severity)}


def test_strangers_in_a_sandbox_of_their_own_are_not_flagged(tmp_path: Path) -> None:
    config = {
        "agents": {"defaults": {"sandbox": {"mode": "non-main", "scope": "session", "workspaceAccess": "none"}}},
        "channels": {"telegram": {"strangerTools": ["exec"]}},
        "commands": {"ownerAllowFrom": ["telegram:1"]},
    }
    assert audit_config(HomarusConfig.model_validate(config), tmp_path) == []


def test_the_gateway_logs_high_findings_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "homarus.gateway")
    config = {"tools": {"exec": {"security": "full"}}}
    with run_gateway(tmp_path, config=config):
        pass
    messages = [r.getMessage() for r in caplog.records if r.name == "homarus.gateway"]
    assert any(m.startswith("security: the model runs any command on this machine") for m in messages)
