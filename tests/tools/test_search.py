"""``ls``, ``find`` and ``grep`` on a real workspace: the original's argument names and output
shapes, paging, limits, .gitignore, symlinks never followed out, paths never leaving the workspace."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from homarus.errors import InvalidRequest
from homarus.messages import TextContent
from homarus.tools.base import ToolContext, ToolResult
from homarus.tools.search import search_tools

TOOLS = {t.name: t for t in search_tools()}


async def call(ws: Path, tool: str, **args: Any) -> str:
    result: ToolResult = await TOOLS[tool].execute(ToolContext("agent:main:main", "main", "r", "c", ws), args)
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "core.py").write_text("def alpha():\n    return 1\n\ndef Beta():\n    return 2\n")
    (root / "src" / "main.py").write_text("import pkg\nprint('hello world')\n")
    (root / "README.md").write_text("# Project\nhello there\n")
    (root / ".hidden").write_text("secret-ish\n")
    (root / "node_modules" / "lib").mkdir(parents=True)
    (root / "node_modules" / "lib" / "x.py").write_text("def alpha(): pass\n")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("def alpha(): pass\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "debug.log").write_text("alpha\n")
    (root / "blob.bin").write_bytes(b"alpha\0\x01\x02")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "loot.py").write_text("def alpha(): pass\n")
    os.symlink(outside, root / "link")
    return root


async def test_ls_lists_names_quoted_dirs_marked_links_not_entered(ws: Path) -> None:
    out = await call(ws, "ls")
    assert out.splitlines() == [
        '".gitignore"',
        '".hidden"',
        '"README.md"',
        '"blob.bin"',
        '"build/"',
        '"debug.log"',
        '"link"',
        '"node_modules/"',
        '"src/"',
    ]
    assert await call(ws, "ls", path="src") == '"main.py"\n"pkg/"'
    (ws / "empty").mkdir()
    assert await call(ws, "ls", path="empty") == "(empty directory)"


async def test_ls_pages_with_the_after_cursor(ws: Path) -> None:
    first = await call(ws, "ls", limit=2)
    assert first.startswith('".gitignore"\n".hidden"') and 'after=".hidden"' in first
    rest = await call(ws, "ls", limit=100, after=".hidden")
    assert rest.splitlines()[0] == '"README.md"'


async def test_find_by_name_or_path_glob_respecting_gitignore(ws: Path) -> None:
    assert await call(ws, "find", pattern="*.py") == "src/main.py\nsrc/pkg/core.py"
    assert await call(ws, "find", pattern="src/**/*.py") == "src/main.py\nsrc/pkg/core.py"
    assert await call(ws, "find", pattern="pkg") == "src/pkg/"
    assert await call(ws, "find", pattern="*.nothing") == "No files found matching pattern"
    capped = await call(ws, "find", pattern="*", limit=2)
    assert capped.endswith("[2 results limit reached]")


async def test_grep_matches_with_context_case_literal_and_glob(ws: Path) -> None:
    assert await call(ws, "grep", pattern="def alpha") == "src/pkg/core.py:1: def alpha():"
    ctx = await call(ws, "grep", pattern="Beta", context=1)
    assert ctx.splitlines() == [
        "src/pkg/core.py-3- ",
        "src/pkg/core.py:4: def Beta():",
        "src/pkg/core.py-5-     return 2",
    ]
    assert await call(ws, "grep", pattern="beta", ignoreCase=True) == "src/pkg/core.py:4: def Beta():"
    assert await call(ws, "grep", pattern="print(", literal=True) == "src/main.py:2: print('hello world')"
    assert await call(ws, "grep", pattern="hello", glob="*.md") == "README.md:2: hello there"
    assert await call(ws, "grep", pattern="hello", path="src/main.py") == "main.py:2: print('hello world')"
    assert await call(ws, "grep", pattern="zzz") == "No matches found"
    many = await call(ws, "grep", pattern="return|def|hello", limit=2)
    assert "2 matches limit reached" in many


async def test_nothing_outside_the_workspace_is_read(ws: Path) -> None:
    assert "loot" not in await call(ws, "grep", pattern="alpha")  # the symlinked dir is never entered
    assert "loot" not in await call(ws, "find", pattern="*.py")
    with pytest.raises(InvalidRequest):
        await call(ws, "ls", path="../outside")
    with pytest.raises(InvalidRequest):
        await call(ws, "ls", path="link")  # the link leads outside
    with pytest.raises(InvalidRequest, match="invalid regex"):
        await call(ws, "grep", pattern="(unclosed")
    with pytest.raises(InvalidRequest, match="not found"):
        await call(ws, "ls", path="missing")
