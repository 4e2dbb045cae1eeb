"""The exec approvals file: defaults, permissions, refusal of links, merging, effective policy."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from homarus.errors import ConfigError
from homarus.security.exec_approvals_file import (
    ExecApprovalsFile,
    ExecPolicySettings,
    UnsafeApprovalsFile,
    add_patterns,
    approvals_path,
    effective_policy,
    load,
    save,
)


def test_missing_file_is_defaults(tmp_path: Path) -> None:
    loaded = load(approvals_path(tmp_path))
    assert loaded == ExecApprovalsFile()
    assert loaded.policy == ExecPolicySettings("full", "off", "deny")


def test_save_and_load_round_trip_with_modes(tmp_path: Path) -> None:
    path = approvals_path(tmp_path / "state")
    data = ExecApprovalsFile(ExecPolicySettings("allowlist", "on-miss", "deny"), ("/usr/bin/ls",), {"/usr/bin/ls": 5})
    save(path, data)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load(path) == data
    raw = json.loads(path.read_text())
    assert raw["security"] == "allowlist" and raw["askFallback"] == "deny"
    assert raw["allowlist"] == [{"pattern": "/usr/bin/ls", "addedAtMs": 5}]


def test_add_patterns_merges_and_dedups(tmp_path: Path) -> None:
    path = approvals_path(tmp_path)
    add_patterns(path, ["/usr/bin/ls"], now_ms=1)
    updated = add_patterns(path, ["/usr/bin/ls", "/usr/bin/git"], now_ms=2)
    assert updated.patterns == ("/usr/bin/ls", "/usr/bin/git")
    assert load(path).added_at_ms == {"/usr/bin/ls": 1, "/usr/bin/git": 2}


def test_refuses_symlinked_file(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    path = approvals_path(tmp_path)
    path.symlink_to(target)
    with pytest.raises(UnsafeApprovalsFile, match="symlink"):
        load(path)
    with pytest.raises(UnsafeApprovalsFile):
        save(path, ExecApprovalsFile())
    assert target.read_text() == "{}"


def test_refuses_hard_link(tmp_path: Path) -> None:
    path = approvals_path(tmp_path)
    save(path, ExecApprovalsFile())
    os.link(path, tmp_path / "other")
    with pytest.raises(UnsafeApprovalsFile, match="hard-linked"):
        load(path)
    with pytest.raises(UnsafeApprovalsFile):
        add_patterns(path, ["/x"])


def test_refuses_symlinked_directory(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "state"
    link.symlink_to(real)
    with pytest.raises(UnsafeApprovalsFile, match="directory"):
        load(approvals_path(link))
    with pytest.raises(UnsafeApprovalsFile):
        save(approvals_path(link), ExecApprovalsFile())


@pytest.mark.parametrize(
    "content", ["not json", "[]", '{"security": "yolo"}', '{"ask": "sometimes"}', '{"allowlist": [1]}']
)
def test_malformed_is_an_error(tmp_path: Path, content: str) -> None:
    path = approvals_path(tmp_path)
    path.write_text(content)
    with pytest.raises(ConfigError):
        load(path)


@pytest.mark.parametrize(
    ("config", "file", "want"),
    [
        (("full", "off", "full"), ("allowlist", "on-miss", "deny"), ("allowlist", "on-miss", "deny")),
        (("deny", "off", "deny"), ("full", "always", "full"), ("deny", "always", "deny")),
        (("allowlist", "always", "allowlist"), ("full", "off", "deny"), ("allowlist", "always", "deny")),
        (("full", "on-miss", "full"), ("full", "off", "full"), ("full", "on-miss", "full")),
    ],
)
def test_effective_policy_is_the_stricter(
    config: tuple[str, str, str], file: tuple[str, str, str], want: tuple[str, str, str]
) -> None:
    got = effective_policy(ExecPolicySettings(*config), ExecPolicySettings(*file))  # type: ignore[arg-type]
    assert (got.security, got.ask, got.ask_fallback) == want
