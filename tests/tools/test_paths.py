"""The workspace path guard below the file tools: resolution, and races between check and use."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from homarus.fs import atomic_write_at
from homarus.tools.paths import (
    PathAliasEscape,
    PathError,
    PathEscape,
    open_file,
    read_bytes,
    remove_file,
    resolve,
    write_bytes,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("top secret\n", encoding="utf-8")
    return path


def test_resolve_reports_the_real_target(ws: Path) -> None:
    (ws / "real" / "deep").mkdir(parents=True)
    (ws / "real" / "deep" / "f.txt").write_text("x", encoding="utf-8")
    (ws / "alias").symlink_to("real/deep")
    wp = resolve(ws, "alias/f.txt")
    assert (wp.parts, wp.shown, wp.exists, wp.dangling) == (("real", "deep", "f.txt"), "alias/f.txt", True, False)
    assert wp.real == str(ws.resolve() / "real/deep/f.txt")
    missing = resolve(ws, "alias/sub/new.txt")
    assert (missing.parts, missing.exists) == (("real", "deep", "sub", "new.txt"), False)
    assert resolve(ws, ".").parts == ()


def test_symlinked_workspace_accepts_both_spellings(ws: Path, tmp_path: Path) -> None:
    link = tmp_path / "ws-link"
    link.symlink_to(ws)
    (ws / "a.txt").write_text("a", encoding="utf-8")
    assert resolve(link, str(link / "a.txt")).parts == ("a.txt",)
    assert resolve(link, str(ws / "a.txt")).parts == ("a.txt",)
    with pytest.raises(PathEscape):
        resolve(link, str(tmp_path / "a.txt"))


def test_symlink_out_and_back_in_is_judged_by_the_final_target(ws: Path, outside: Path) -> None:
    (ws / "inside.txt").write_text("in", encoding="utf-8")
    (outside / "back").symlink_to(ws / "inside.txt")
    (ws / "roundtrip").symlink_to(outside / "back")
    assert resolve(ws, "roundtrip").parts == ("inside.txt",)


def test_link_target_dotdot_cannot_climb_out(ws: Path) -> None:
    (ws / "a").mkdir()
    (ws / "a" / "up").symlink_to("../../..")
    with pytest.raises(PathAliasEscape):
        resolve(ws, "a/up/etc/passwd")


def test_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(PathError, match="does not exist"):
        resolve(tmp_path / "nope", "a.txt")


def test_file_used_as_a_directory(ws: Path) -> None:
    (ws / "f").write_text("x", encoding="utf-8")
    with pytest.raises(PathError, match="not a directory"):
        resolve(ws, "f/g.txt")


def test_directory_swapped_for_symlink_after_the_check(ws: Path, outside: Path) -> None:
    """The CVE-2026-44112/44113 class: the walk after the check must not follow the new link."""
    (ws / "d").mkdir()
    wp = resolve(ws, "d/etc/cron.d/x")
    os.rename(ws / "d", ws / "d.old")
    (ws / "d").symlink_to(outside)
    with pytest.raises(PathAliasEscape, match="replaced by a symlink"):
        write_bytes(wp, b"* * * * * root id\n")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_file_swapped_for_symlink_after_the_check(ws: Path, outside: Path) -> None:
    (ws / "f.txt").write_text("mine\n", encoding="utf-8")
    wp = resolve(ws, "f.txt")
    (ws / "f.txt").unlink()
    (ws / "f.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathAliasEscape):
        read_bytes(wp, 1000)
    with pytest.raises(PathAliasEscape):
        write_bytes(wp, b"pwned")
    with pytest.raises(PathAliasEscape):
        remove_file(wp)
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret\n"


def test_file_swapped_for_hard_link_after_the_check(ws: Path, outside: Path) -> None:
    (ws / "f.txt").write_text("mine\n", encoding="utf-8")
    wp = resolve(ws, "f.txt")
    (ws / "f.txt").unlink()
    os.link(outside / "secret.txt", ws / "f.txt")
    with pytest.raises(PathAliasEscape, match="hard link"), open_file(wp):
        pass


def test_rename_replaces_a_symlink_never_its_target(ws: Path, outside: Path) -> None:
    """Even if the final name became a symlink after every check, the rename swaps the link itself."""
    (ws / "name").symlink_to(outside / "secret.txt")
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        atomic_write_at(fd, "name", b"data", mode=0o640)
    finally:
        os.close(fd)
    assert not (ws / "name").is_symlink()
    assert (ws / "name").read_bytes() == b"data"
    assert stat.S_IMODE((ws / "name").stat().st_mode) == 0o640
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret\n"
    assert sorted(p.name for p in ws.iterdir()) == ["name"]


@pytest.mark.parametrize("name", ["", ".", "..", "a/b"])
def test_atomic_write_at_wants_one_component(ws: Path, name: str) -> None:
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(ValueError, match="single path component"):
            atomic_write_at(fd, name, b"x")
    finally:
        os.close(fd)


def test_read_bytes_limit(ws: Path) -> None:
    (ws / "f.txt").write_bytes(b"x" * 100)
    with pytest.raises(PathError, match="too large"):
        read_bytes(resolve(ws, "f.txt"), 99)
    data, st = read_bytes(resolve(ws, "f.txt"), 100)
    assert (len(data), st.st_size) == (100, 100)
