"""Every config write keeps the file it replaces (``.bak.1`` newest, five at most); a restore
is validated, brings the old text back byte for byte (comments included) and keeps the current
one; the CLI lists, diffs, asks, and refuses a backup that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from homarus.config.backups import KEEP, list_backups
from homarus.config.loader import StatePaths
from homarus.config.store import ConfigStore
from homarus.errors import ConfigError


def _paths(tmp_path: Path) -> StatePaths:
    return StatePaths(state_dir=tmp_path, config_path=tmp_path / "homarus.json")


def test_writes_keep_five_previous_versions(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.config_path.write_text("// hand-written\n{ gateway: { port: 18000 } }\n")
    store = ConfigStore.open(paths)
    for port in range(18001, 18008):
        store.set_path("gateway.port", port)
    backups = list_backups(paths.config_path)
    assert [b.number for b in backups] == list(range(1, KEEP + 1))
    assert '"port": 18006' in backups[0].path.read_text()  # the newest is the one just replaced
    assert '"port": 18002' in backups[-1].path.read_text()  # older ones fell off
    assert all(oct(b.path.stat().st_mode & 0o777) == "0o600" for b in backups)
    store.set_path("gateway.port", 18007)  # unchanged: nothing written, nothing shifted
    assert '"port": 18006' in list_backups(paths.config_path)[0].path.read_text()


def test_restore_brings_the_text_back_and_keeps_the_current(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    original = "// my notes on why\n{ gateway: { port: 18100 } }\n"
    paths.config_path.write_text(original)
    store = ConfigStore.open(paths)
    store.set_path("gateway.port", 18101)
    result = store.restore(list_backups(paths.config_path)[0].path)
    assert paths.config_path.read_text() == original and result.restart_required == ("gateway.port",)
    assert '"port": 18101' in list_backups(paths.config_path)[0].path.read_text()


def test_an_invalid_backup_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.config_path.write_text("{ gateway: { port: 18200 } }")
    bad = tmp_path / "homarus.json.bak.1"
    bad.write_text('{ gateway: { port: "not a port" } }')
    with pytest.raises(ConfigError):
        ConfigStore.open(paths).restore(bad)
    assert paths.config_path.read_text() == "{ gateway: { port: 18200 } }"
    assert bad.read_text() == '{ gateway: { port: "not a port" } }'  # not shifted away either


def _cli(state: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOMARUS_STATE_DIR": str(state)}
    env.pop("HOMARUS_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "homarus", "config", *args],
        env=env, input=stdin, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_the_cli_lists_diffs_and_restores(tmp_path: Path) -> None:
    assert "no backups" in _cli(tmp_path, "backups").stdout
    (tmp_path / "homarus.json").write_text("{ gateway: { port: 18300 } }\n")
    assert _cli(tmp_path, "set", "gateway.port", "18301").returncode == 0
    listed = _cli(tmp_path, "backups")
    assert listed.stdout.startswith("1  ") and "homarus.json.bak.1" in listed.stdout
    refused = _cli(tmp_path, "restore", "1")  # no terminal to ask: nothing is changed
    assert refused.returncode == 1 and '-    "port": 18301' in refused.stdout.replace("\t", "    ")
    assert '"port": 18301' in (tmp_path / "homarus.json").read_text()
    done = _cli(tmp_path, "restore", "1", "--yes")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "homarus.json").read_text() == "{ gateway: { port: 18300 } }\n"
    missing = _cli(tmp_path, "restore", "4", "--yes")
    assert missing.returncode == 1 and "no backup 4" in missing.stderr
