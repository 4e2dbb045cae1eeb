"""`read` may open files inside the skill dirs a run lists, and nothing else outside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from homarus.errors import InvalidRequest
from homarus.tools.base import ToolContext, ToolServices
from homarus.tools.files import read, write
from tests.skills.support import write_skill


def _ctx(ws: Path, roots: frozenset[str] | None) -> ToolContext:
    return ToolContext("agent:main:main", "main", "r", "c", ws, services=ToolServices(skills=roots))


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    skill = write_skill(tmp_path / "skills", "demo", body="# demo\nDo the demo.")
    (skill / "notes.txt").write_text("extra notes")
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    return ws, skill.resolve(), secret


async def test_read_skill_md_and_neighbours_by_absolute_path(layout: tuple[Path, Path, Path]) -> None:
    ws, skill, _ = layout
    ctx = _ctx(ws, frozenset({str(skill)}))
    out = await read(ctx, str(skill / "SKILL.md"))
    assert "Do the demo." in out.content[0].text  # type: ignore[union-attr]
    out = await read(ctx, str(skill / "notes.txt"))
    assert "extra notes" in out.content[0].text  # type: ignore[union-attr]


async def test_other_absolute_paths_and_escapes_stay_refused(layout: tuple[Path, Path, Path]) -> None:
    ws, skill, secret = layout
    ctx = _ctx(ws, frozenset({str(skill)}))
    for path in (str(secret), f"{skill}/../../secret.txt", f"{skill}/./../../secret.txt", f"{skill}x/SKILL.md"):
        with pytest.raises(InvalidRequest):
            await read(ctx, path)
    os.symlink(secret, skill / "link.txt")
    with pytest.raises(InvalidRequest, match="escape"):
        await read(ctx, str(skill / "link.txt"))
    os.link(secret, skill / "hard.txt")
    with pytest.raises(InvalidRequest):
        await read(ctx, str(skill / "hard.txt"))


async def test_without_lent_roots_skill_files_are_outside_the_workspace(layout: tuple[Path, Path, Path]) -> None:
    ws, skill, _ = layout
    with pytest.raises(InvalidRequest, match="escapes"):
        await read(_ctx(ws, None), str(skill / "SKILL.md"))


async def test_write_never_uses_the_skill_roots(layout: tuple[Path, Path, Path]) -> None:
    ws, skill, _ = layout
    with pytest.raises(InvalidRequest):
        await write(_ctx(ws, frozenset({str(skill)})), str(skill / "SKILL.md"), "overwritten")
    assert "Do the demo." in (skill / "SKILL.md").read_text()


async def test_a_root_of_slash_opens_nothing(layout: tuple[Path, Path, Path]) -> None:
    ws, _, secret = layout
    with pytest.raises(InvalidRequest, match="escapes"):
        await read(_ctx(ws, frozenset({"/", "relative/dir"})), str(secret))
