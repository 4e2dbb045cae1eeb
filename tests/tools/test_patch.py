"""``apply_patch``: parsing, add/update/delete/move, all-or-nothing, workspace bounds."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from homarus.errors import InvalidRequest
from homarus.tools import patch as patch_mod
from homarus.tools.base import ToolContext, ToolResult
from homarus.tools.files import file_tools
from homarus.tools.patch import PatchError, parse_patch
from homarus.tools.paths import PathAliasEscape, PathEscape, write_bytes

APPLY = {t.name: t for t in file_tools()}["apply_patch"]


async def apply(ws: Path, patch: str, **extra: Any) -> ToolResult:
    ctx = ToolContext("agent:main:main", "main", "run-1", "call-1", ws)
    return await APPLY.execute(ctx, {"patch": patch, **extra} if "input" not in extra else extra)


def text_of(result: ToolResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def wrap(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text(
        "import os\n\n\ndef main():\n    print('hello')\n    return 0\n\n\ndef other():\n    return 1\n",
        encoding="utf-8",
    )
    (path / "notes.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    return path


async def test_add_update_delete_in_one_patch(ws: Path) -> None:
    result = await apply(
        ws,
        wrap(
            "*** Add File: docs/new.md",
            "+# Title",
            "+",
            "+body",
            "*** Update File: src/app.py",
            "@@ def main():",
            "-    print('hello')",
            "+    print('bye')",
            "     return 0",
            "*** Delete File: notes.txt",
        ),
    )
    assert (ws / "docs/new.md").read_text(encoding="utf-8") == "# Title\n\nbody\n"
    assert "print('bye')" in (ws / "src/app.py").read_text(encoding="utf-8")
    assert not (ws / "notes.txt").exists()
    assert text_of(result) == "Success. 3 file(s) changed:\nA docs/new.md\nM src/app.py\nD notes.txt"
    assert result.details["files"][1] == {"op": "M", "path": "src/app.py", "added": 1, "removed": 1}


async def test_update_with_several_hunks_and_first_hunk_without_header(ws: Path) -> None:
    await apply(
        ws,
        wrap(
            "*** Update File: src/app.py",
            "-import os",
            "+import sys",
            "@@ def other():",
            "-    return 1",
            "+    return 2",
        ),
    )
    text = (ws / "src/app.py").read_text(encoding="utf-8")
    assert text.startswith("import sys\n")
    assert text.endswith("def other():\n    return 2\n")


async def test_move_to_keeps_mode(ws: Path) -> None:
    (ws / "notes.txt").chmod(0o640)
    result = await apply(
        ws,
        wrap("*** Update File: notes.txt", "*** Move to: archive/notes.txt", "@@", " alpha", "-beta", "+BETA"),
    )
    assert not (ws / "notes.txt").exists()
    moved = ws / "archive/notes.txt"
    assert moved.read_text(encoding="utf-8") == "alpha\nBETA\ngamma\n"
    assert stat.S_IMODE(moved.stat().st_mode) == 0o640
    assert "M archive/notes.txt (moved from notes.txt)" in text_of(result)


async def test_end_of_file_anchor_and_pure_insertions(ws: Path) -> None:
    await apply(
        ws,
        wrap("*** Update File: notes.txt", "@@ alpha", "+after-alpha", "@@", " gamma", "+delta", "*** End of File"),
    )
    assert (ws / "notes.txt").read_text(encoding="utf-8") == "alpha\nafter-alpha\nbeta\ngamma\ndelta\n"


async def test_whitespace_and_punctuation_fuzz(ws: Path) -> None:
    (ws / "q.txt").write_text("say \u201chi\u201d   \nend\n", encoding="utf-8")
    await apply(ws, wrap("*** Update File: q.txt", '-say "hi"', "+say bye"))
    assert (ws / "q.txt").read_text(encoding="utf-8") == "say bye\nend\n"


async def test_unified_diff_style_header_is_tolerated(ws: Path) -> None:
    await apply(ws, wrap("*** Update File: notes.txt", "@@ -1,3 +1,3 @@", " alpha", "-beta", "+b"))
    assert (ws / "notes.txt").read_text(encoding="utf-8") == "alpha\nb\ngamma\n"


async def test_crlf_file_stays_crlf_and_no_trailing_newline_is_kept(ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (ws / "nonl.txt").write_bytes(b"a\nb")
    patch = wrap("*** Update File: win.txt", " one", "-two", "+2", "*** Update File: nonl.txt", "-b", "+B")
    await apply(ws, patch.replace("\n", "\r\n"))  # a CRLF patch too
    assert (ws / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"
    assert (ws / "nonl.txt").read_bytes() == b"a\nB"


async def test_heredoc_wrapper_and_input_alias(ws: Path) -> None:
    patch = "<<'EOF'\n" + wrap("*** Add File: x.txt", "+x") + "EOF\n"
    await apply(ws, "", input=patch)
    assert (ws / "x.txt").read_text(encoding="utf-8") == "x\n"


async def test_one_bad_hunk_changes_nothing(ws: Path) -> None:
    before = tree(ws)
    patch = wrap(
        "*** Add File: created.txt",
        "+new",
        "*** Delete File: notes.txt",
        "*** Update File: src/app.py",
        "@@ def main():",
        "-    print('hello')",
        "+    print('bye')",
        "@@ def other():",
        "-    return 42",
        "+    return 43",
    )
    with pytest.raises(PatchError) as info:
        await apply(ws, patch)
    message = info.value.message
    assert "src/app.py" in message
    assert "hunk 2 '@@ def other():'" in message
    assert "return 42" in message
    assert message.endswith("No files were changed.") or "No files were changed." in message
    assert tree(ws) == before


async def test_missing_context_line_names_the_hunk(ws: Path) -> None:
    with pytest.raises(PatchError, match=r"notes.txt: hunk 1 '@@ nope' .*context line 'nope' was not found"):
        await apply(ws, wrap("*** Update File: notes.txt", "@@ nope", "-beta", "+b"))


async def test_hunks_apply_in_order_to_later_operations(ws: Path) -> None:
    patch = wrap(
        "*** Add File: f.txt",
        "+one",
        "*** Update File: f.txt",
        "-one",
        "+two",
    )
    await apply(ws, patch)
    assert (ws / "f.txt").read_text(encoding="utf-8") == "two\n"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("*** Update File: a\n@@\n-x\n+y\n*** End Patch", "first line must be"),
        ("*** Begin Patch\n*** Add File: a\n+x\n", "last line must be"),
        ("*** Begin Patch\n*** End Patch", "no file operations"),
        ("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch", "expected '\\*\\*\\* Add File:'"),
        ("*** Begin Patch\n*** Update File: notes.txt\n*** End Patch", "has no hunks"),
        ("*** Begin Patch\n*** Update File: notes.txt\n@@\n?beta\n*** End Patch", "unexpected line in hunk 1"),
        ("*** Begin Patch\n*** Add File: \n+x\n*** End Patch", "missing file path"),
    ],
)
async def test_parse_errors(ws: Path, patch: str, message: str) -> None:
    before = tree(ws)
    with pytest.raises(PatchError, match=message):
        await apply(ws, patch)
    assert tree(ws) == before


async def test_missing_files(ws: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"cannot update nope\.txt: file not found"):
        await apply(ws, wrap("*** Update File: nope.txt", "-a", "+b"))
    with pytest.raises(InvalidRequest, match=r"cannot delete nope\.txt: file not found"):
        await apply(ws, wrap("*** Delete File: nope.txt"))


@pytest.mark.parametrize(
    "body",
    [
        ("*** Add File: ../escaped.txt", "+x"),
        ("*** Delete File: ../outside/secret.txt",),
        ("*** Update File: notes.txt", "*** Move to: ../moved.txt", "-beta", "+b"),
        ("*** Update File: /etc/hosts", "-127.0.0.1 localhost", "+1.2.3.4 localhost"),
    ],
)
async def test_escapes_change_nothing(ws: Path, tmp_path: Path, body: tuple[str, ...]) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s\n", encoding="utf-8")
    before, outside_before = tree(ws), tree(tmp_path / "outside")
    with pytest.raises(PathEscape, match="escapes"):
        await apply(ws, wrap("*** Add File: first.txt", "+ok", *body))
    assert tree(ws) == before
    assert tree(tmp_path / "outside") == outside_before
    assert not (tmp_path / "escaped.txt").exists()


async def test_symlinks_out_are_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s\n", encoding="utf-8")
    (ws / "out").symlink_to(outside)
    (ws / "dangling").symlink_to("nowhere.txt")
    for body in (
        ("*** Add File: out/planted.txt", "+x"),
        ("*** Update File: out/secret.txt", "-s", "+x"),
        ("*** Add File: dangling", "+x"),
    ):
        with pytest.raises(PathAliasEscape):
            await apply(ws, wrap(*body))
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (ws / "nowhere.txt").exists()


async def test_failed_write_rolls_back_earlier_files(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = tree(ws)
    real_write = write_bytes

    def flaky_write(wp: Any, data: bytes, *, mode: int | None = None) -> bool:
        if wp.shown == "zz-last.txt":
            raise OSError(28, "No space left on device")
        return real_write(wp, data, mode=mode)

    monkeypatch.setattr(patch_mod, "write_bytes", flaky_write)
    patch = wrap(
        "*** Update File: notes.txt",
        "-beta",
        "+b",
        "*** Add File: brand/new.txt",
        "+n",
        "*** Add File: zz-last.txt",
        "+z",
    )
    with pytest.raises(PatchError, match=r"writing zz-last.txt failed.*2 file\(s\) already written were restored"):
        await apply(ws, patch)
    assert tree(ws) == before


def test_parse_patch_structure() -> None:
    ops = parse_patch(
        wrap("*** Update File: a.py", "*** Move to: b.py", "@@ class A:", " x", "-y", "+z", "*** End of File")
    )
    assert len(ops) == 1
    op = ops[0]
    assert (op.kind, op.path, op.move_to) == ("update", "a.py", "b.py")
    hunk = op.hunks[0]
    assert (hunk.context, hunk.old, hunk.new, hunk.end_of_file) == ("class A:", ["x", "y"], ["x", "z"], True)
    assert (hunk.added, hunk.removed) == (1, 1)
