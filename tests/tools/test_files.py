"""The file tools: every ``"target": "fs"`` red-team row, then read / write / edit behaviour."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from homarus.errors import InvalidRequest
from homarus.messages import ImageContent, TextContent
from homarus.tools import files as files_mod
from homarus.tools import patch as patch_mod
from homarus.tools.base import ToolContext, ToolResult
from homarus.tools.files import MAX_READ_CHARS, MAX_READ_LINES, MAX_WRITE_BYTES, file_tools
from homarus.tools.paths import PathAliasEscape, PathEscape, resolve

REDTEAM = Path(__file__).resolve().parents[3] / "shared/reference/redteam-public.jsonl"
TOOLS = {t.name: t for t in file_tools()}


def _fs_rows() -> list[dict[str, Any]]:
    if not REDTEAM.exists():
        return []
    rows = [json.loads(line) for line in REDTEAM.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("target") == "fs"]


FS_ROWS = _fs_rows()


def make_ctx(ws: Path) -> ToolContext:
    return ToolContext("agent:main:main", "main", "run-1", "call-1", ws)


async def call(ws: Path, tool: str, **args: Any) -> ToolResult:
    return await TOOLS[tool].execute(make_ctx(ws), args)


def text_of(result: ToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: file bytes, or the link target / "dir"."""
    seen: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            key = str(p.relative_to(root))
            if p.is_symlink():
                seen[key] = "-> " + os.readlink(p)
            elif p.is_dir():
                seen[key] = "dir"
            else:
                seen[key] = p.read_bytes()
    return seen


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


# ---------------------------------------------------------------- red-team rows


class Layout:
    """Builds a row's ``setup`` inside tmp_path: <WS> is the workspace, other absolute paths live
    under a fake root (``outside``), so nothing outside tmp_path is ever touched."""

    def __init__(self, ws: Path, fake_root: Path) -> None:
        self.ws = ws
        self.fake_root = fake_root
        self.race: Callable[[], None] | None = None

    def path(self, word: str) -> Path:
        if word.startswith("<WS>"):
            return self.ws / word[len("<WS>") :].lstrip("/")
        assert word.startswith("/"), f"setup path {word!r} is neither <WS> nor absolute"
        return self.fake_root / word.lstrip("/")

    def source(self, word: str) -> Path:
        """A link source: outside files are created with secret content so a leak would show."""
        p = self.path(word)
        if not word.startswith("<WS>") and not p.exists():
            if word.endswith("/") or word == "/":
                p.mkdir(parents=True, exist_ok=True)
            else:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text("outside secret\n", encoding="utf-8")
        return p

    def build(self, setup: str) -> None:
        setup = re.sub(r"\((?!race\))[^)]*\)", "", setup)  # drop remarks like "(hard link, same fs)"
        for step in (s.strip() for s in re.split(r"&&|;", setup)):
            if not step:
                continue
            if m := re.fullmatch(r"\(race\) replace (\S+) with symlink to (\S+) between check and open", step):
                victim, target = self.path(m[1]), self.source(m[2])
                self.race = lambda v=victim, t=target: _swap_for_symlink(v, t)
            elif m := re.fullmatch(r"ln -s (\S+) (\S+)", step):
                src = self.source(m[1]) if not m[1].startswith("<WS>") else self.path(m[1])
                self.path(m[2]).symlink_to(src)
            elif m := re.fullmatch(r"ln (\S+) (\S+)", step):
                os.link(self.source(m[1]), self.path(m[2]))
            elif m := re.fullmatch(r"mkdir (?:-p )?(\S+)", step):
                self.path(m[1]).mkdir(parents=True, exist_ok=True)
            elif m := re.fullmatch(r"mkfifo (\S+)", step):
                os.mkfifo(self.path(m[1]))
            elif m := re.fullmatch(r"echo (.+?) > (\S+)", step):
                self.path(m[2]).write_text(m[1] + "\n", encoding="utf-8")
            else:
                raise AssertionError(f"unknown setup step {step!r}")


def _swap_for_symlink(victim: Path, target: Path) -> None:
    if victim.is_dir() and not victim.is_symlink():
        os.rename(victim, victim.with_name(victim.name + ".moved"))
    else:
        victim.unlink()
    victim.symlink_to(target)


def _alternatives(expected: str) -> list[str]:
    return [part.strip().lower() for part in expected.split(" / ") if part.strip()]


@pytest.mark.skipif(not FS_ROWS, reason="shared/reference/redteam-public.jsonl not present")
@pytest.mark.parametrize("row", FS_ROWS, ids=[r["id"] for r in FS_ROWS])
async def test_redteam_fs_row(row: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_root = tmp_path / "fakeroot"
    fake_root.mkdir()
    (ws / "sub").mkdir()
    args = dict(row["input"])
    layout = Layout(ws, fake_root)
    layout.build(args.pop("setup", ""))
    tool = args.pop("tool")
    tool = "read" if tool == "image" else tool  # the image tool loads files through the same guard as read
    if layout.race is not None:
        race, real_resolve = layout.race, resolve

        def racing_resolve(workspace: Path, raw: str) -> Any:
            checked = real_resolve(workspace, raw)
            race()  # the swap lands between the check and the open
            return checked

        monkeypatch.setattr(files_mod, "resolve", racing_resolve)
        monkeypatch.setattr(patch_mod, "resolve", racing_resolve)
    before = snapshot(fake_root)
    expect = row["expect"]
    if expect["result"] == "block":
        with pytest.raises(InvalidRequest) as info:
            await call(ws, tool, **args)
        message = info.value.message.lower()
        wanted = _alternatives(expect.get("error", ""))
        assert not wanted or any(w in message for w in wanted), (info.value.message, expect)
        assert isinstance(info.value, PathEscape)
    else:
        result = await call(ws, tool, **args)
        assert not result.is_error
    assert snapshot(fake_root) == before  # nothing outside was created or changed


def test_redteam_fs_rows_are_all_collected() -> None:
    if not FS_ROWS:
        pytest.skip("shared/reference/redteam-public.jsonl not present")
    assert len(FS_ROWS) >= 10


# ---------------------------------------------------------------- read


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


async def test_read_whole_small_file(ws: Path) -> None:
    (ws / "a.txt").write_text("hello\nworld\n", encoding="utf-8")
    result = await call(ws, "read", path="a.txt")
    assert text_of(result) == "[File: a.txt, lines 1-2 of 2, 12 bytes]\nhello\nworld\n"
    assert result.details == {
        "path": "a.txt",
        "bytes": 12,
        "offset": 1,
        "lines": 2,
        "totalLines": 2,
        "truncated": False,
    }


async def test_read_offset_and_limit_with_continue_note(ws: Path) -> None:
    (ws / "n.txt").write_text(numbered(10), encoding="utf-8")
    text = text_of(await call(ws, "read", path="n.txt", offset=3, limit=4))
    assert text.splitlines()[0] == "[File: n.txt, lines 3-6 of 10, 71 bytes]"
    assert text.splitlines()[1:5] == ["line 3", "line 4", "line 5", "line 6"]
    assert text.endswith("[Showing lines 3-6 of 10. Use offset=7 to continue.]")
    rest = text_of(await call(ws, "read", path="n.txt", offset=7))
    assert rest.splitlines()[1:] == ["line 7", "line 8", "line 9", "line 10"]
    assert "continue" not in rest


async def test_read_no_trailing_newline_and_offset_zero(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo", encoding="utf-8")
    text = text_of(await call(ws, "read", path="a.txt", offset=0))
    assert text == "[File: a.txt, lines 1-2 of 2, 7 bytes]\none\ntwo\n"


async def test_read_caps_lines(ws: Path) -> None:
    (ws / "big.txt").write_text(numbered(MAX_READ_LINES + 500), encoding="utf-8")
    result = await call(ws, "read", path="big.txt", limit=10_000)
    text = text_of(result)
    assert text.count("\n") == MAX_READ_LINES + 1  # header + lines, note without a newline
    assert text.endswith(f"Use offset={MAX_READ_LINES + 1} to continue.]")
    assert result.details["truncated"] is True
    assert result.details["totalLines"] == MAX_READ_LINES + 500


async def test_read_caps_bytes_below_the_loop_result_limit(ws: Path) -> None:
    line = "x" * 999 + "\n"
    (ws / "wide.txt").write_text(line * 300, encoding="utf-8")
    text = text_of(await call(ws, "read", path="wide.txt"))
    shown = text.count("x" * 999)
    assert 0 < shown < 300
    assert len(text) < 100_000
    assert f"Use offset={shown + 1} to continue." in text


async def test_read_single_huge_line_is_cut(ws: Path) -> None:
    (ws / "min.js").write_text("a" * 500_000 + "\nnext\n", encoding="utf-8")
    text = text_of(await call(ws, "read", path="min.js"))
    assert len(text) <= MAX_READ_CHARS + 500
    assert "[Line 1 is too long to show in full" in text
    assert "Use offset=2 to continue." in text


async def test_read_offset_beyond_end(ws: Path) -> None:
    (ws / "a.txt").write_text("x\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match=r"beyond the end of a\.txt"):
        await call(ws, "read", path="a.txt", offset=5)
    with pytest.raises(InvalidRequest, match="limit must be"):
        await call(ws, "read", path="a.txt", limit=0)


async def test_read_empty_file(ws: Path) -> None:
    (ws / "e.txt").write_bytes(b"")
    assert text_of(await call(ws, "read", path="e.txt")) == "[File: e.txt is empty]"


@pytest.mark.parametrize(
    ("name", "data", "mime"),
    [
        ("blob.bin", b"\x00\x01\x02" * 100, "application/octet-stream"),
        ("latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"), "text/plain"),
        ("doc.pdf", b"%PDF-1.7\n" + bytes(range(256)), "application/pdf"),
    ],
)
async def test_read_binary_is_described_not_dumped(ws: Path, name: str, data: bytes, mime: str) -> None:
    (ws / name).write_bytes(data)
    result = await call(ws, "read", path=name)
    text = text_of(result)
    assert text.startswith(f"[Binary file: {name}, {mime}, {len(data):,} bytes")
    assert len(result.content) == 1
    assert result.details["binary"] is True


PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def test_read_small_image_returns_image_content(ws: Path) -> None:
    (ws / "dot.png").write_bytes(PNG_1PX)
    result = await call(ws, "read", path="dot.png")
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG_1PX


async def test_read_large_image_is_only_described(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files_mod, "MAX_IMAGE_BYTES", 10)
    (ws / "dot.png").write_bytes(PNG_1PX)
    result = await call(ws, "read", path="dot.png")
    assert len(result.content) == 1
    assert "Binary file: dot.png, image/png" in text_of(result)


async def test_read_missing_and_directory(ws: Path) -> None:
    (ws / "d").mkdir()
    with pytest.raises(InvalidRequest, match=r"File not found: nope\.txt"):
        await call(ws, "read", path="nope.txt")
    with pytest.raises(InvalidRequest, match="d is a directory"):
        await call(ws, "read", path="d")


async def test_read_through_symlinks_inside_the_workspace(ws: Path) -> None:
    (ws / "real").mkdir()
    (ws / "real" / "f.txt").write_text("inside\n", encoding="utf-8")
    (ws / "dirlink").symlink_to("real")
    (ws / "filelink").symlink_to(ws / "real" / "f.txt")  # absolute target inside
    assert "inside" in text_of(await call(ws, "read", path="dirlink/f.txt"))
    assert "inside" in text_of(await call(ws, "read", path="filelink"))


async def test_read_absolute_path_inside_workspace(ws: Path) -> None:
    (ws / "a.txt").write_text("abs\n", encoding="utf-8")
    result = await call(ws, "read", path=str(ws / "a.txt"))
    assert result.details["path"] == "a.txt"


# ---------------------------------------------------------------- write


async def test_write_creates_parent_dirs(ws: Path) -> None:
    result = await call(ws, "write", path="a/b/c.txt", content="hi\nthere\n")
    assert (ws / "a/b/c.txt").read_text(encoding="utf-8") == "hi\nthere\n"
    assert text_of(result) == "Created a/b/c.txt (9 bytes, 2 lines)."
    assert result.details == {"path": "a/b/c.txt", "bytes": 9, "lines": 2, "created": True}
    assert stat.S_IMODE((ws / "a/b/c.txt").stat().st_mode) == 0o644


async def test_write_overwrite_keeps_mode_and_leaves_no_temp_files(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("old\n", encoding="utf-8")
    script.chmod(0o750)
    result = await call(ws, "write", path="run.sh", content="#!/bin/sh\necho new\n")
    assert result.details["created"] is False
    assert text_of(result).startswith("Overwrote run.sh")
    assert script.read_text(encoding="utf-8") == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert sorted(p.name for p in ws.iterdir()) == ["run.sh"]


async def test_write_through_inside_symlink_updates_target(ws: Path) -> None:
    (ws / "target.txt").write_text("old\n", encoding="utf-8")
    (ws / "link.txt").symlink_to("target.txt")
    await call(ws, "write", path="link.txt", content="new\n")
    assert (ws / "link.txt").is_symlink()
    assert (ws / "target.txt").read_text(encoding="utf-8") == "new\n"


async def test_write_size_limit_and_directory_targets(ws: Path) -> None:
    with pytest.raises(InvalidRequest, match="too large"):
        await call(ws, "write", path="big.txt", content="x" * (MAX_WRITE_BYTES + 1))
    assert not (ws / "big.txt").exists()
    (ws / "d").mkdir()
    with pytest.raises(InvalidRequest, match="is a directory"):
        await call(ws, "write", path="d", content="x")
    with pytest.raises(InvalidRequest, match="names a directory"):
        await call(ws, "write", path="new/", content="x")
    with pytest.raises(InvalidRequest, match="workspace directory"):
        await call(ws, "write", path=".", content="x")


async def test_write_accepts_upstream_argument_names(ws: Path) -> None:
    await call(ws, "write", file_path="x.txt", content="y")
    assert (ws / "x.txt").read_text(encoding="utf-8") == "y"
    with pytest.raises(InvalidRequest, match="invalid arguments for write"):
        await call(ws, "write", path="x.txt", content="y", mode="0777")


async def test_os_errors_become_model_visible_errors(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(*args: Any, **kwargs: Any) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files_mod, "write_bytes", disk_full)
    with pytest.raises(InvalidRequest, match="file operation failed: No space left on device"):
        await call(ws, "write", path="a.txt", content="x")


# ---------------------------------------------------------------- edit


async def test_edit_unique_match(ws: Path) -> None:
    (ws / "a.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    result = await call(ws, "edit", path="a.py", old_text="return 1", new_text="return 2")
    assert (ws / "a.py").read_text(encoding="utf-8") == "def f():\n    return 2\n"
    assert text_of(result) == "Edited a.py: replaced 1 occurrence at line 2."
    assert result.details["firstChangedLine"] == 2
    assert "-    return 1" in result.details["diff"]
    assert "+    return 2" in result.details["diff"]


async def test_edit_ambiguous_without_replace_all(ws: Path) -> None:
    (ws / "a.txt").write_text("x = 1\ny = 2\nx = 1\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match=r"occurs 2 times in a.txt \(at lines 1, 3\).*replace_all"):
        await call(ws, "edit", path="a.txt", old_text="x = 1", new_text="x = 9")
    assert (ws / "a.txt").read_text(encoding="utf-8") == "x = 1\ny = 2\nx = 1\n"


async def test_edit_overlapping_matches_are_ambiguous(ws: Path) -> None:
    (ws / "a.txt").write_text("aaa\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match="occurs 2 times"):
        await call(ws, "edit", path="a.txt", old_text="aa", new_text="b")


async def test_edit_replace_all(ws: Path) -> None:
    (ws / "a.txt").write_text("x = 1\ny = 2\nx = 1\n", encoding="utf-8")
    result = await call(ws, "edit", path="a.txt", old_text="x = 1", new_text="x = 9", replace_all=True)
    assert (ws / "a.txt").read_text(encoding="utf-8") == "x = 9\ny = 2\nx = 9\n"
    assert result.details["replacements"] == 2
    assert text_of(result) == "Edited a.txt: replaced 2 occurrences."


async def test_edit_missing_text(ws: Path) -> None:
    (ws / "a.txt").write_text("    indented\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match=r"old_text was not found in a\.txt"):
        await call(ws, "edit", path="a.txt", old_text="absent", new_text="y")
    with pytest.raises(InvalidRequest, match="different leading/trailing whitespace"):
        await call(ws, "edit", path="a.txt", old_text="indented  ", new_text="y")


async def test_edit_refusals(ws: Path) -> None:
    (ws / "a.txt").write_text("abc\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match="must not be empty"):
        await call(ws, "edit", path="a.txt", old_text="", new_text="y")
    with pytest.raises(InvalidRequest, match="identical"):
        await call(ws, "edit", path="a.txt", old_text="abc", new_text="abc")
    (ws / "bin.dat").write_bytes(b"\xff\xfeabc")
    with pytest.raises(InvalidRequest, match="not UTF-8 text"):
        await call(ws, "edit", path="bin.dat", old_text="abc", new_text="y")
    with pytest.raises(InvalidRequest, match="File not found"):
        await call(ws, "edit", path="none.txt", old_text="abc", new_text="y")


async def test_edit_preserves_crlf_and_bom(ws: Path) -> None:
    path = ws / "win.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    await call(ws, "edit", path="win.txt", old_text="one\ntwo", new_text="uno\ndos\nextra")
    assert path.read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\nextra\r\nthree\r\n"
    await call(ws, "edit", path="win.txt", old_text="dos\r\nextra", new_text="dos")
    assert path.read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\nthree\r\n"


async def test_edit_keeps_lf_file_lf_and_mode(ws: Path) -> None:
    path = ws / "unix.sh"
    path.write_bytes(b"a\nb\n")
    path.chmod(0o700)
    await call(ws, "edit", path="unix.sh", oldText="a\r\nb", newText="c\r\nd")  # upstream names, CRLF text
    assert path.read_bytes() == b"c\nd\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


async def test_edit_mixed_line_endings_match_exactly(ws: Path) -> None:
    path = ws / "mixed.txt"
    path.write_bytes(b"a\r\nb\nc\n")
    await call(ws, "edit", path="mixed.txt", old_text="b\nc", new_text="B\nC")
    assert path.read_bytes() == b"a\r\nB\nC\n"


# ---------------------------------------------------------------- bounds shared by all tools


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "..\\outside\\secret.txt",
        "/etc/passwd",
        "file:///etc/passwd",
        "file://evil.example/etc/passwd",
        "C:/Windows/win.ini",
        "\\\\server\\share\\x",
        "%2e%2e/outside/secret.txt",
        "\uff0e\uff0e/outside/secret.txt",
        "~/.ssh/id_ed25519",
        "http://example.com/x",
        "data:text/plain,hello",
    ],
)
@pytest.mark.parametrize("tool", ["read", "write", "edit"])
async def test_escapes_are_refused(ws: Path, outside: Path, tool: str, path: str) -> None:
    before = snapshot(outside)
    args: dict[str, Any] = {"path": path}
    if tool == "write":
        args["content"] = "pwned"
    if tool == "edit":
        args.update(old_text="top secret", new_text="pwned")
    with pytest.raises(PathEscape, match="escapes"):
        await call(ws, tool, **args)
    assert snapshot(outside) == before


@pytest.mark.parametrize("tool", ["read", "write", "edit"])
async def test_symlinks_out_of_the_workspace_are_refused(ws: Path, outside: Path, tool: str) -> None:
    (ws / "file_link").symlink_to(outside / "secret.txt")
    (ws / "dir_link").symlink_to(outside)
    (ws / "rel_link").symlink_to("../outside/secret.txt")
    (ws / "chain").symlink_to("dir_link")
    before = snapshot(outside)
    for path in ("file_link", "dir_link/secret.txt", "dir_link/new.txt", "rel_link", "chain/secret.txt"):
        args: dict[str, Any] = {"path": path}
        if tool == "write":
            args["content"] = "pwned"
        if tool == "edit":
            args.update(old_text="top secret", new_text="pwned")
        with pytest.raises(PathAliasEscape, match="path alias escape blocked"):
            await call(ws, tool, **args)
    assert snapshot(outside) == before


async def test_dangling_symlinks_are_not_written_through(ws: Path, outside: Path) -> None:
    (ws / "dangling_in").symlink_to("not-yet.txt")
    (ws / "dangling_out").symlink_to(outside / "planted.txt")
    (ws / "dangling_dir").symlink_to("missing_dir")
    with pytest.raises(PathAliasEscape, match="dangling symlink"):
        await call(ws, "write", path="dangling_in", content="x")
    with pytest.raises(PathAliasEscape, match="dangling symlink"):
        await call(ws, "write", path="dangling_dir/f.txt", content="x")
    with pytest.raises(PathAliasEscape):
        await call(ws, "write", path="dangling_out", content="x")
    assert not (ws / "not-yet.txt").exists()
    assert not (ws / "missing_dir").exists()
    assert not (outside / "planted.txt").exists()
    with pytest.raises(InvalidRequest, match="File not found"):
        await call(ws, "read", path="dangling_in")


async def test_symlink_loop_fails_fast(ws: Path) -> None:
    (ws / "a").symlink_to("b")
    (ws / "b").symlink_to("a")
    (ws / "self").symlink_to("self/x")
    for path in ("a", "self", "a/x"):
        with pytest.raises(PathAliasEscape, match="symlink loop"):
            await call(ws, "read", path=path)


async def test_hard_link_to_outside_file_is_refused(ws: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", ws / "alias.txt")
    with pytest.raises(PathAliasEscape, match="hard link"):
        await call(ws, "read", path="alias.txt")
    with pytest.raises(PathAliasEscape, match="hard link"):
        await call(ws, "write", path="alias.txt", content="pwned")
    with pytest.raises(PathAliasEscape, match="hard link"):
        await call(ws, "edit", path="alias.txt", old_text="top", new_text="pwned")
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret\n"


@pytest.mark.timeout(10)
async def test_fifo_is_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(InvalidRequest, match="is a FIFO"):
        await call(ws, "read", path="pipe")
    with pytest.raises(InvalidRequest, match="is a FIFO"):
        await call(ws, "write", path="pipe", content="x")
    with pytest.raises(InvalidRequest, match="is a FIFO"):
        await call(ws, "edit", path="pipe", old_text="a", new_text="b")
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


async def test_socket_and_device_are_refused(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        monkeypatch.chdir(ws)  # a relative bind keeps the socket path short
        sock.bind("s.sock")
        with pytest.raises(InvalidRequest, match="is a socket"):
            await call(ws, "read", path="s.sock")
    finally:
        sock.close()
    if Path("/dev/null").exists():
        with pytest.raises(InvalidRequest, match="is a character device"):
            await call(Path("/dev"), "read", path="null")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("a\x00b.txt", "NUL byte"),
        ("a\nb.txt", "control characters"),
        ("", "must not be empty"),
        ("x" * 300, "component is too long"),
        ("a/" * 2100 + "f", "path is too long"),
        ("bad\udc80.txt", "not valid Unicode"),
    ],
)
async def test_malformed_paths(ws: Path, path: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        await call(ws, "write", path=path, content="x")
    assert list(ws.iterdir()) == []


async def test_input_conveniences(ws: Path) -> None:
    (ws / "my file.txt").write_text("ok\n", encoding="utf-8")
    assert "ok" in text_of(await call(ws, "read", path="@my file.txt"))
    assert "ok" in text_of(await call(ws, "read", path="my\u00a0file.txt"))
    assert "ok" in text_of(await call(ws, "read", path=(ws / "my file.txt").as_uri()))
    assert "ok" in text_of(await call(ws, "read", path="sub/../my file.txt"))
