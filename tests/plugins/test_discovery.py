"""Discovery sources, precedence and duplicate ids, safety gates, allow/deny/enabled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from homarus.plugins.discovery import BUNDLED_PLUGINS, check_safety
from tests.plugins.helpers import load, make_plugin

MARK = "def register(api):\n    api.logger.info('loaded from {origin}')\nORIGIN = {origin!r}\n"


def origin_code(origin: str) -> str:
    return MARK.format(origin=origin)


def test_precedence_config_global_workspace_path(tmp_path: Path) -> None:
    state, ws = tmp_path / "state", tmp_path / "ws"
    pinned = make_plugin(tmp_path / "pinned", "dup", origin_code("config"))
    make_plugin(state / "extensions", "dup", origin_code("global"))
    make_plugin(ws / ".homarus" / "extensions", "dup", origin_code("workspace"))
    make_plugin(tmp_path / "extra", "dup", origin_code("path"))
    make_plugin(ws / ".homarus" / "extensions", "ws-only")
    make_plugin(tmp_path / "extra", "path-only")
    base = {"load": {"paths": [str(tmp_path / "extra")]}, "workspace": {"enabled": True}}

    loaded = load(state, {**base, "entries": {"dup": {"path": str(pinned)}}}, workspace=ws)
    rec = loaded.registry.get("dup")
    assert rec is not None and (rec.origin, rec.source, rec.status) == ("config", str(pinned), "loaded")
    dropped = loaded.messages("dup", "warn")
    assert len(dropped) == 3
    assert all("duplicate plugin id 'dup'" in m and "config" in m for m in dropped)
    assert {"global", "workspace", "path"} == {m.split(": ")[1].split(" ")[0] for m in dropped}
    assert {r.id: r.origin for r in loaded.registry.records.values()} == {
        "dup": "config",
        "ws-only": "workspace",
        "path-only": "path",
    }

    without_pin = load(state, base, workspace=ws)
    rec = without_pin.registry.get("dup")
    assert rec is not None and rec.origin == "global"
    without_global = load(tmp_path / "empty-state", base, workspace=ws)
    rec = without_global.registry.get("dup")
    assert rec is not None and rec.origin == "workspace"


def test_workspace_source_is_off_by_default(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    make_plugin(ws / ".homarus" / "extensions", "from-ws")
    assert load(tmp_path, {}, workspace=ws).registry.get("from-ws") is None
    assert load(tmp_path, {"workspace": {"enabled": True}}, workspace=ws).status("from-ws") == "loaded"


def test_bundled_cannot_be_shadowed_by_loose_directories(tmp_path: Path) -> None:
    make_plugin(tmp_path / "extensions", "builtin-tools", "raise SystemExit('must not run')\n")
    loaded = load(tmp_path, {}, bundled=BUNDLED_PLUGINS)
    rec = loaded.registry.get("builtin-tools")
    assert rec is not None and (rec.origin, rec.status) == ("bundled", "loaded")
    assert loaded.tools.names() == ["current_time", "message", "session_status"]
    assert rec.registrations.tools == ["current_time", "session_status"]
    assert any("duplicate plugin id 'builtin-tools'" in m for m in loaded.messages("builtin-tools", "warn"))


def test_plugins_disabled_skips_discovery_but_keeps_bundled(tmp_path: Path) -> None:
    make_plugin(tmp_path / "extensions", "g")
    loaded = load(tmp_path, {"enabled": False}, bundled=BUNDLED_PLUGINS)
    assert list(loaded.registry.records) == ["builtin-tools", "channels", "telegram", "discord", "slack", "whatsapp"]


def test_pinned_path_errors(tmp_path: Path) -> None:
    other = make_plugin(tmp_path / "src", "other-id")
    loaded = load(tmp_path, {"entries": {"mine": {"path": str(other)}, "gone": {"path": str(tmp_path / "missing")}}})
    assert loaded.status("mine") == "error"
    assert loaded.messages("mine", "error") == ["manifest id 'other-id' does not match plugins.entries.mine.path"]
    assert loaded.status("gone") == "error"
    assert loaded.messages("gone", "error") == ["plugins.entries.gone.path: not a directory"]


def test_relative_paths_are_relative_to_the_state_dir(tmp_path: Path) -> None:
    make_plugin(tmp_path / "mine", "rel")
    assert load(tmp_path, {"load": {"paths": ["mine"]}}).status("rel") == "loaded"
    assert load(tmp_path, {"entries": {"rel": {"path": "mine/rel"}}}).registry.records["rel"].origin == "config"


def test_missing_load_path_and_dir_without_manifest_warn(tmp_path: Path) -> None:
    (tmp_path / "extensions" / "stray").mkdir(parents=True)
    loaded = load(tmp_path, {"load": {"paths": [str(tmp_path / "nowhere")]}})
    msgs = loaded.messages(None, "warn")
    assert any("does not exist" in m for m in msgs)
    assert any("no homarus.plugin.json in" in m and "stray" in m for m in msgs)


# -- enablement -------------------------------------------------------------------------------------
def test_allow_deny_and_entry_enabled(tmp_path: Path) -> None:
    for pid in ("a", "b", "c", "d"):
        make_plugin(tmp_path / "extensions", pid)
    loaded = load(
        tmp_path,
        {"allow": ["a", "b", "c"], "deny": ["b"], "entries": {"c": {"enabled": False}}},
        bundled=BUNDLED_PLUGINS,
    )
    assert {i: r.status for i, r in loaded.registry.records.items()} == {
        "builtin-tools": "loaded",  # bundled features are exempt from the allow list
        "channels": "loaded",
        "telegram": "loaded",
        "discord": "loaded",
        "slack": "loaded",
        "whatsapp": "loaded",
        "a": "loaded",
        "b": "disabled",
        "c": "disabled",
        "d": "disabled",
    }
    reasons = {i: r.reason for i, r in loaded.registry.records.items()}
    assert reasons["b"] == "listed in plugins.deny"  # deny wins over allow
    assert reasons["c"] == "plugins.entries.c.enabled is false"
    assert reasons["d"] == "not listed in plugins.allow"
    assert loaded.registry.errors == []

    denied_bundled = load(tmp_path, {"deny": ["builtin-tools"]}, bundled=BUNDLED_PLUGINS)
    assert denied_bundled.status("builtin-tools") == "disabled"
    assert denied_bundled.tools.names() == ["message"]  # the channels plugin's tool remains


def test_stale_config_entries_warn(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        {"allow": ["ghost"], "entries": {"phantom": {"hooks": {"timeouts": {"no_such_hook": 5}}}}},
    )
    msgs = loaded.messages(None, "warn")
    assert "stale config entry ignored: plugins.allow names 'ghost', no such plugin" in msgs
    assert "stale config entry ignored: plugins.entries.phantom names 'phantom', no such plugin" in msgs
    assert "plugins.entries.phantom.hooks.timeouts: unknown hook 'no_such_hook' ignored" in msgs
    assert loaded.registry.errors == []


# -- safety gates ------------------------------------------------------------------------------------
def never_runs(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').close()\ndef register(api):\n    pass\n"


def test_world_writable_dir_is_blocked(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    d = make_plugin(tmp_path / "extensions", "open-dir", never_runs(marker))
    d.chmod(0o777)
    make_plugin(tmp_path / "extensions", "fine")
    loaded = load(tmp_path, {})
    assert loaded.status("open-dir") == "blocked"
    (msg,) = loaded.messages("open-dir", "error")
    assert msg.startswith("plugin blocked: ") and "world-writable" in msg
    assert not marker.exists()
    assert loaded.status("fine") == "loaded"


def test_world_writable_entry_file_is_blocked(tmp_path: Path) -> None:
    d = make_plugin(tmp_path / "extensions", "open-file")
    (d / "plugin.py").chmod(0o666)
    assert load(tmp_path, {}).status("open-file") == "blocked"


def test_symlinked_entry_escaping_the_root_is_blocked(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    outside = tmp_path / "elsewhere.py"
    outside.write_text(never_runs(marker), encoding="utf-8")
    d = make_plugin(tmp_path / "extensions", "escape")
    (d / "plugin.py").unlink()
    (d / "plugin.py").symlink_to(outside)
    loaded = load(tmp_path, {})
    assert loaded.status("escape") == "blocked"
    (msg,) = loaded.messages("escape", "error")
    assert "outside the plugin root" in msg
    assert not marker.exists()


def test_entry_path_with_dotdot_is_blocked(tmp_path: Path) -> None:
    (tmp_path / "extensions").mkdir()
    (tmp_path / "extensions" / "evil.py").write_text("raise SystemExit(1)\n", encoding="utf-8")
    make_plugin(tmp_path / "extensions", "dotdot", entry="ok.py", manifest=None)
    manifest = tmp_path / "extensions" / "dotdot" / "homarus.plugin.json"
    manifest.write_text('{"id": "dotdot", "configSchema": {}, "entry": "../evil.py"}', encoding="utf-8")
    assert load(tmp_path, {}).status("dotdot") == "blocked"


def test_symlinked_plugin_dir_inside_is_fine(tmp_path: Path) -> None:
    real = make_plugin(tmp_path / "dev", "linked")
    (tmp_path / "extensions").mkdir()
    (tmp_path / "extensions" / "linked").symlink_to(real, target_is_directory=True)
    assert load(tmp_path, {}).status("linked") == "loaded"


def test_foreign_owner_is_blocked(tmp_path: Path) -> None:
    d = make_plugin(tmp_path / "extensions", "foreign")
    if os.getuid() == 0:
        os.chown(d, 4243, 4243)  # neither the current user (root) nor root
        loaded = load(tmp_path, {})
    else:  # our files, but pretend to be someone else
        loaded = load(tmp_path, {}, uid=os.getuid() + 1)
    assert loaded.status("foreign") == "blocked"
    assert "owned by uid" in loaded.messages("foreign", "error")[0]


def test_missing_entry_file_is_an_error(tmp_path: Path) -> None:
    d = make_plugin(tmp_path / "extensions", "no-entry")
    (d / "plugin.py").unlink()
    loaded = load(tmp_path, {})
    assert loaded.status("no-entry") == "error"
    assert "not found" in loaded.messages("no-entry", "error")[0]


def test_check_safety_directly(tmp_path: Path) -> None:
    d = make_plugin(tmp_path, "x")
    assert check_safety(d, d / "plugin.py", uid=os.getuid()) == (None, None)
    blocked, problem = check_safety(d, tmp_path / "x" / ".." / "x" / ".." / "other.py", uid=os.getuid())
    assert blocked is not None and "escapes" in blocked and problem is None


@pytest.mark.parametrize("denied", [True, False])
def test_a_denied_blocked_plugin_is_just_disabled(tmp_path: Path, denied: bool) -> None:
    d = make_plugin(tmp_path / "extensions", "wild")
    d.chmod(0o777)
    loaded = load(tmp_path, {"deny": ["wild"]} if denied else {})
    assert loaded.status("wild") == ("disabled" if denied else "blocked")
    assert bool(loaded.registry.errors) is not denied
