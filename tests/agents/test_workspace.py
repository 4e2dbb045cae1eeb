from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from homarus.agents.workspace import (
    BOOTSTRAP_FILES,
    STARTER_FILES,
    BootstrapFile,
    ensure_workspace,
    load_bootstrap_files,
)


def by_name(files: list[BootstrapFile]) -> dict[str, BootstrapFile]:
    return {f.name: f for f in files}


def test_starters_cover_the_bootstrap_files() -> None:
    assert tuple(STARTER_FILES) == BOOTSTRAP_FILES
    assert all(text.strip() for text in STARTER_FILES.values())


def test_heartbeat_starter_has_only_headings() -> None:
    lines = [line for line in STARTER_FILES["HEARTBEAT.md"].splitlines() if line.strip()]
    assert lines and all(line.startswith("#") for line in lines)


def test_creates_a_new_workspace_once(tmp_path: Path) -> None:
    ws = tmp_path / "state" / "workspace"
    assert ensure_workspace(ws) is True
    assert stat.S_IMODE(ws.stat().st_mode) == 0o700
    assert sorted(p.name for p in ws.iterdir()) == sorted(BOOTSTRAP_FILES)
    assert (ws / "AGENTS.md").read_text(encoding="utf-8") == STARTER_FILES["AGENTS.md"]
    assert ensure_workspace(ws) is False


def test_empty_directory_counts_as_new(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert ensure_workspace(ws) is True
    assert (ws / "SOUL.md").is_file()


def test_never_overwrites_user_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ensure_workspace(ws)
    (ws / "SOUL.md").write_text("my own soul", encoding="utf-8")
    (ws / "BOOTSTRAP.md").unlink()
    assert ensure_workspace(ws) is False
    assert (ws / "SOUL.md").read_text(encoding="utf-8") == "my own soul"
    assert not (ws / "BOOTSTRAP.md").exists()  # first-run note is not brought back

    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "notes.txt").write_text("mine", encoding="utf-8")
    assert ensure_workspace(existing) is False
    assert [p.name for p in existing.iterdir()] == ["notes.txt"]


def test_loads_starter_files_in_order(tmp_path: Path) -> None:
    ensure_workspace(tmp_path / "ws")
    files = load_bootstrap_files(tmp_path / "ws")
    assert [f.name for f in files] == list(BOOTSTRAP_FILES)
    for f in files:
        assert not f.missing and not f.truncated
        assert f.content == STARTER_FILES[f.name]
        assert f.original_chars == len(STARTER_FILES[f.name])


def test_truncation_keeps_head_and_tail_with_marker(tmp_path: Path) -> None:
    text = "HEAD-" + "m" * 5000 + "-TAIL"
    (tmp_path / "AGENTS.md").write_text(text, encoding="utf-8")
    agents = by_name(load_bootstrap_files(tmp_path, max_chars=1000))["AGENTS.md"]
    assert agents.truncated and not agents.missing
    assert agents.original_chars == len(text)
    assert len(agents.content) <= 1000
    assert agents.content.startswith("HEAD-")
    assert agents.content.endswith("-TAIL")
    assert "AGENTS.md truncated" in agents.content


def test_total_budget_cuts_later_files(tmp_path: Path) -> None:
    for name in ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md"):
        (tmp_path / name).write_text(name[0] * 800, encoding="utf-8")
    files = by_name(load_bootstrap_files(tmp_path, max_chars=1000, total_max_chars=2000))
    assert not files["AGENTS.md"].truncated and not files["SOUL.md"].truncated
    assert files["TOOLS.md"].truncated and 0 < len(files["TOOLS.md"].content) <= 400
    assert files["IDENTITY.md"].omitted and files["IDENTITY.md"].original_chars == 800
    assert sum(len(f.content) for f in files.values()) <= 2000


def test_missing_files_are_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("rules", encoding="utf-8")
    files = by_name(load_bootstrap_files(tmp_path))
    assert files["AGENTS.md"].content == "rules"
    assert files["USER.md"].missing and files["USER.md"].content == ""
    assert "BOOTSTRAP.md" not in files  # gone after the first run: not worth a marker
    nowhere = load_bootstrap_files(tmp_path / "does-not-exist")
    assert all(f.missing for f in nowhere)


def test_subagents_get_only_agents_and_tools(tmp_path: Path) -> None:
    ensure_workspace(tmp_path / "ws")
    files = load_bootstrap_files(tmp_path / "ws", subagent=True)
    assert [f.name for f in files] == ["AGENTS.md", "TOOLS.md"]


def test_memory_is_not_injected(tmp_path: Path) -> None:
    ensure_workspace(tmp_path / "ws")
    (tmp_path / "ws" / "MEMORY.md").write_text("secret memories", encoding="utf-8")
    assert all(f.name != "MEMORY.md" for f in load_bootstrap_files(tmp_path / "ws"))


def test_symlinks_must_stay_inside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("outside secret", encoding="utf-8")
    (ws / "real-rules.md").write_text("inside rules", encoding="utf-8")
    (ws / "AGENTS.md").symlink_to(outside)
    (ws / "TOOLS.md").symlink_to(ws / "real-rules.md")
    (ws / "SOUL.md").symlink_to("../secret.txt")
    files = by_name(load_bootstrap_files(ws))
    assert files["AGENTS.md"].missing and files["AGENTS.md"].content == ""
    assert files["SOUL.md"].missing
    assert files["TOOLS.md"].content == "inside rules"
    assert all("outside secret" not in f.content for f in files.values())


def test_a_cached_file_is_read_again_once_it_changes_and_a_link_swapped_in_is_checked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("version one", encoding="utf-8")
    assert by_name(load_bootstrap_files(ws))["AGENTS.md"].content == "version one"
    (ws / "AGENTS.md").write_text("version two", encoding="utf-8")  # same size: the cache must still see it
    assert by_name(load_bootstrap_files(ws))["AGENTS.md"].content == "version two"
    (tmp_path / "secret.txt").write_text("outside secret", encoding="utf-8")
    (ws / "AGENTS.md").unlink()
    (ws / "AGENTS.md").symlink_to(tmp_path / "secret.txt")  # what was a cached file is now a link out
    assert by_name(load_bootstrap_files(ws))["AGENTS.md"].missing


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_non_regular_files_are_skipped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")
    (tmp_path / "SOUL.md").mkdir()
    files = by_name(load_bootstrap_files(tmp_path))
    assert files["AGENTS.md"].missing and files["SOUL.md"].missing


def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "USER.md").write_bytes(b"\xef\xbb\xbfname: \xff\xfe Ana")
    user = by_name(load_bootstrap_files(tmp_path))["USER.md"]
    assert user.content == "name: \ufffd\ufffd Ana"


def test_huge_file_reads_only_its_ends(tmp_path: Path) -> None:
    (tmp_path / "TOOLS.md").write_bytes(b"start" + b"x" * 3_000_000 + b"end")
    tools = by_name(load_bootstrap_files(tmp_path, max_chars=500))["TOOLS.md"]
    assert tools.truncated and len(tools.content) <= 500
    assert tools.content.startswith("start") and tools.content.endswith("end")
    assert tools.original_chars == 3_000_008
