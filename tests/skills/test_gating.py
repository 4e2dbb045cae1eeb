"""Gating: requirements and config switches hide a skill, and every reason is reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from homarus.config.schema import HomarusConfig
from homarus.skills.catalog import load_view
from homarus.skills.gating import Gate, GateInputs
from tests.skills.support import config, write_skill


def _state(tmp_path: Path, name: str, cfg: HomarusConfig, **inputs: Any) -> Gate:
    gi = GateInputs(cfg, **inputs)
    view = load_view(cfg, workspace=tmp_path / "ws", state_dir=tmp_path / "state", gate_inputs=gi)
    st = view.get(name)
    assert st is not None
    return st.gate


def test_missing_bins_env_config_and_os_hide_the_skill_with_every_reason(tmp_path: Path) -> None:
    req = (
        "requires:\n  bins: [definitely-not-a-binary-xyz, sh]\n  env: [SK_TOKEN]\n"
        "  config: [tools.web.x]\n  os: [darwin]\n"
    )
    write_skill(tmp_path / "ws" / "skills", "needy", extra=req)
    gate = _state(tmp_path, "needy", config(), env={}, platform="linux")
    assert gate.eligible is False
    missing = gate.missing
    assert missing == {
        "bins": ["definitely-not-a-binary-xyz"],
        "env": ["SK_TOKEN"],
        "config": ["tools.web.x"],
        "os": ["darwin"],
    }
    reasons = " | ".join(gate.reasons)
    assert "binaries not on PATH" in reasons and "SK_TOKEN" in reasons and "needs OS darwin" in reasons


def test_requirements_met_by_environment_config_entry_and_platform(tmp_path: Path) -> None:
    req = (
        "requires:\n  bins: [sh]\n  env: [SK_TOKEN, OTHER]\n"
        "  config: [apiBase, session.mainKey]\n  os: [linux, macos]\n"
    )
    write_skill(tmp_path / "ws" / "skills", "needy", extra=req)
    cfg = config(entries={"needy": {"env": {"OTHER": "v"}, "config": {"apiBase": "https://x"}}})
    gate = _state(tmp_path, "needy", cfg, env={"SK_TOKEN": "t"}, platform="linux")
    assert gate.eligible is True, gate.reasons


def test_disabled_entry_allow_bundled_and_agent_allowlist(tmp_path: Path) -> None:
    write_skill(tmp_path / "ws" / "skills", "mine")
    cfg = HomarusConfig.model_validate(
        {
            "skills": {"entries": {"mine": {"enabled": False}}, "allowBundled": ["summarize-url"]},
            "agents": {"list": [{"id": "main", "skills": ["summarize-url", "cron-scheduling"]}]},
        }
    )
    assert "disabled in config" in _state(tmp_path, "mine", cfg, env={}).reasons[0]
    cron = _state(tmp_path, "cron-scheduling", cfg, env={}, agent_id="main")
    assert cron.blocked_by_allowlist and "allowBundled" in cron.reasons[0]
    memory = _state(tmp_path, "daily-memory-note", cfg, env={}, agent_id="main")
    assert any("agents.list[main].skills" in r for r in memory.reasons)
    assert _state(tmp_path, "summarize-url", cfg, env={}, agent_id="main").eligible


def test_bad_requires_values_are_a_front_matter_error(tmp_path: Path) -> None:
    skills = tmp_path / "ws" / "skills"
    write_skill(skills, "pathbin", extra="requires:\n  bins: [/bin/sh -c evil]\n")
    write_skill(skills, "bados", extra="requires:\n  os: [plan9]\n")
    view = load_view(config(), workspace=tmp_path / "ws", state_dir=tmp_path / "state", env={})
    assert view.get("pathbin") is None and view.get("bados") is None
    text = " ".join(p.message for p in view.problems)
    assert "not a program name" in text and "unknown OS" in text
