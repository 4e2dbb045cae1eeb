"""``apply_patch``: the "*** Begin Patch" format coding agents use, applied all-or-nothing.

    *** Begin Patch
    *** Add File: path          then its lines, each prefixed "+"
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       optional, right after Update File
    @@ optional context line    hunks: " " context, "-" removed, "+" added lines
    *** End of File             optional: the hunk must match at the end of the file
    *** End Patch

Every operation is parsed, path-checked and computed against the current files (and against the
earlier operations of the same patch) before anything is written; a failure names the file and
the hunk, and nothing changes. Writes then go through :mod:`homarus.tools.paths`; if one fails
half way, the files already written are restored. Hunks are located as the reference agent
does: in order, from where the previous hunk ended, exact first, then ignoring trailing
whitespace, then surrounding whitespace, then typographic punctuation.
"""

from __future__ import annotations

import asyncio
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homarus.errors import HomarusError, InvalidRequest
from homarus.tools.base import ToolContext, ToolResult
from homarus.tools.paths import (
    PathError,
    WorkspacePath,
    ensure_writable,
    in_mount,
    read_bytes,
    remove_file,
    resolve,
    write_bytes,
)

__all__ = ["MAX_PATCH_BYTES", "MAX_PATCH_FILES", "FileOp", "Hunk", "PatchError", "apply_patch", "parse_patch"]

MAX_PATCH_BYTES = 5 * 1024 * 1024
MAX_PATCH_FILES = 200
MAX_FILE_BYTES = 5 * 1024 * 1024
_NOTHING = "No files were changed."
_BEGIN, _END, _EOF = "*** Begin Patch", "*** End Patch", "*** End of File"
_ADD, _DELETE, _UPDATE, _MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
_HEADERS = {_ADD: "add", _DELETE: "delete", _UPDATE: "update"}
_UNIFIED_RANGE = re.compile(r"^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?")
_PUNCT = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    }
)


class PatchError(InvalidRequest):
    """The patch is malformed or does not apply; nothing was changed."""


@dataclass(slots=True)
class Hunk:
    context: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    end_of_file: bool = False
    #: line of the patch the hunk starts on (1-based)
    line: int = 0
    added: int = 0
    removed: int = 0

    def label(self, number: int) -> str:
        where = f" '@@ {self.context}'" if self.context else ""
        return f"hunk {number}{where} (patch line {self.line})"


@dataclass(slots=True)
class FileOp:
    kind: str  # "add" | "delete" | "update"
    path: str
    line: int
    lines: list[str] = field(default_factory=list)  # added file's content
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


def _parse_error(line: int, message: str) -> PatchError:
    return PatchError(f"apply_patch: invalid patch at line {line}: {message}. {_NOTHING}")


def _unwrap(lines: list[str]) -> list[str]:
    """Drop a shell heredoc wrapper (``<<'EOF'`` ... ``EOF``) some models send around the patch."""
    if len(lines) >= 3 and lines[0].strip().startswith("<<"):
        marker = lines[0].strip()[2:].strip("'\" -")
        if marker and lines[-1].strip() == marker:
            return lines[1:-1]
    return lines


def parse_patch(text: str) -> list[FileOp]:
    lines = _unwrap([ln.removesuffix("\r") for ln in text.strip().split("\n")])
    if not lines or lines[0].strip() != _BEGIN:
        raise _parse_error(1, f"the first line must be '{_BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != _END:
        raise _parse_error(len(lines), f"the last line must be '{_END}'")
    ops: list[FileOp] = []
    i, end = 1, len(lines) - 1
    while i < end:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        prefix = next((p for p in _HEADERS if line.startswith(p)), None)
        if prefix is None:
            raise _parse_error(
                i + 1, f"expected '*** Add File:', '*** Delete File:' or '*** Update File:', got {line!r}"
            )
        path = line[len(prefix) :].strip()
        if not path:
            raise _parse_error(i + 1, "missing file path")
        kind = _HEADERS[prefix]
        op = FileOp(kind, path, i + 1)
        i += 1
        if kind == "add":
            while i < end and lines[i].startswith("+"):
                op.lines.append(lines[i][1:])
                i += 1
        elif kind == "update":
            if i < end and lines[i].startswith(_MOVE):
                op.move_to = lines[i][len(_MOVE) :].strip() or None
                if op.move_to is None:
                    raise _parse_error(i + 1, "missing path after '*** Move to:'")
                i += 1
            i = _parse_hunks(lines, i, end, op)
        ops.append(op)
    if not ops:
        raise _parse_error(1, "the patch contains no file operations")
    return ops


def _parse_hunks(lines: list[str], i: int, end: int, op: FileOp) -> int:
    while i < end and not lines[i].startswith((_ADD, _DELETE, _UPDATE)):
        line = lines[i]
        if line.startswith("@@"):
            context = _UNIFIED_RANGE.sub("", line[2:].strip()).strip() or None
            i += 1
        elif op.hunks:
            raise _parse_error(i + 1, f"unexpected line in {op.path}: {line!r} (a new hunk starts with '@@')")
        else:
            context = None  # the first hunk may omit its "@@"
        hunk = Hunk(context, line=i)
        while i < end:
            body = lines[i]
            if body == _EOF:
                hunk.end_of_file = True
                i += 1
                break
            if body.startswith(("@@", "*** ")):
                break
            tag, rest = (body[0], body[1:]) if body else (" ", "")
            if tag not in " -+":
                raise _parse_error(
                    i + 1,
                    f"unexpected line in hunk {len(op.hunks) + 1} of {op.path}: {body!r} "
                    "(hunk lines start with ' ', '-' or '+')",
                )
            if tag != "+":
                hunk.old.append(rest)
            if tag != "-":
                hunk.new.append(rest)
            hunk.added += tag == "+"
            hunk.removed += tag == "-"
            i += 1
        if not hunk.old and not hunk.new:
            raise _parse_error(hunk.line, f"hunk {len(op.hunks) + 1} of {op.path} is empty")
        op.hunks.append(hunk)
    if not op.hunks:
        raise _parse_error(op.line, f"'*** Update File: {op.path}' has no hunks")
    return i


_LEVELS: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    str.rstrip,
    str.strip,
    lambda s: s.strip().translate(_PUNCT),
)


def _seek(lines: list[str], pattern: list[str], start: int, end_of_file: bool) -> int | None:
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if end_of_file else start
    for norm in _LEVELS:
        want = [norm(p) for p in pattern]
        for at in range(max(first, 0), len(lines) - len(pattern) + 1):
            if all(norm(lines[at + k]) == want[k] for k in range(len(pattern))):
                return at
    return None


def apply_hunks(text: str, hunks: list[Hunk], shown: str) -> str:
    """``text`` with every hunk applied, or PatchError naming the first hunk that does not match."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    crlf = text.count("\r\n")
    eol = "\r\n" if crlf and crlf == text.count("\n") else "\n"
    body = text[len(bom) :].replace("\r\n", "\n") if eol == "\r\n" else text[len(bom) :]
    lines = body.split("\n")
    trailing_newline = lines[-1] == ""
    if trailing_newline:
        lines.pop()
    edits: list[tuple[int, int, list[str]]] = []
    at = 0
    for number, hunk in enumerate(hunks, 1):
        if hunk.context is not None:
            found = _seek(lines, [hunk.context], at, False)
            if found is None:
                raise PatchError(
                    f"apply_patch: {shown}: {hunk.label(number)} failed: context line {hunk.context!r} "
                    f"was not found. {_NOTHING}"
                )
            at = found + 1
        old, new = hunk.old, hunk.new
        if not old:  # only additions: after the context line if there is one, else at the end
            edits.append((at if hunk.context is not None else len(lines), 0, new))
            continue
        found = _seek(lines, old, at, hunk.end_of_file)
        while found is None and old and old[-1] == "":  # blank separator lines are often not real context
            old, new = old[:-1], new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, old, at, hunk.end_of_file) if old else None
        if found is None:
            expected = "\n".join(hunk.old)
            if len(expected) > 2000:
                expected = expected[:2000] + "\n[...]"
            raise PatchError(
                f"apply_patch: {shown}: {hunk.label(number)} failed: these lines were not found"
                f"{' at the end of the file' if hunk.end_of_file else ''} (after line {at}):\n{expected}\n"
                f"Read the file again and regenerate the hunk. {_NOTHING}"
            )
        edits.append((found, len(old), new))
        at = found + len(old)
    order = sorted(range(len(edits)), key=lambda k: (edits[k][0], k), reverse=True)
    for k in order:
        start, length, new = edits[k]
        lines[start : start + length] = new
    result = "\n".join(lines) + ("\n" if lines and (trailing_newline or not body) else "")
    return bom + (result.replace("\n", "\r\n") if eol == "\r\n" else result)


@dataclass(slots=True)
class _File:
    wp: WorkspacePath
    original: bytes | None
    mode: int | None
    current: bytes | None
    new_mode: int | None = None


class _Plan:
    """The files of one patch, as they are on disk and as the patch leaves them."""

    def __init__(self, workspace: Path, mount: str | None = None) -> None:
        self.workspace = workspace
        self.mount = mount
        self.files: dict[tuple[str, ...], _File] = {}
        self.summary: list[dict[str, Any]] = []

    def load(self, path: str, *, for_write: bool) -> _File:
        wp = resolve(self.workspace, in_mount(path, self.mount))
        if for_write:
            ensure_writable(wp)
        if wp.parts in self.files:
            return self.files[wp.parts]
        if wp.exists:
            data, st = read_bytes(wp, MAX_FILE_BYTES)
            entry = _File(wp, data, stat.S_IMODE(st.st_mode) & 0o777, data)
        else:
            entry = _File(wp, None, None, None)
        self.files[wp.parts] = entry
        return entry

    def add(self, op: FileOp) -> None:
        entry = self.load(op.path, for_write=True)
        content = "".join(f"{line}\n" for line in op.lines)
        entry.current = content.encode("utf-8")
        self.summary.append({"op": "A", "path": entry.wp.shown, "added": len(op.lines), "removed": 0})

    def delete(self, op: FileOp) -> None:
        entry = self.load(op.path, for_write=True)
        if entry.current is None:
            raise PathError(f"cannot delete {entry.wp.shown}: file not found")
        removed = entry.current.count(b"\n")
        entry.current = None
        self.summary.append({"op": "D", "path": entry.wp.shown, "added": 0, "removed": removed})

    def update(self, op: FileOp) -> None:
        entry = self.load(op.path, for_write=True)
        if entry.current is None:
            raise PathError(f"cannot update {entry.wp.shown}: file not found")
        try:
            text = entry.current.decode("utf-8")
        except UnicodeDecodeError:
            raise PatchError(f"apply_patch: {entry.wp.shown} is not UTF-8 text. {_NOTHING}") from None
        data = apply_hunks(text, op.hunks, entry.wp.shown).encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise PatchError(f"apply_patch: {entry.wp.shown} would exceed {MAX_FILE_BYTES:,} bytes. {_NOTHING}")
        row: dict[str, Any] = {
            "op": "M",
            "path": entry.wp.shown,
            "added": sum(h.added for h in op.hunks),
            "removed": sum(h.removed for h in op.hunks),
        }
        target = entry
        if op.move_to is not None:
            target = self.load(op.move_to, for_write=True)
            if target is not entry:
                target.new_mode = entry.mode
                entry.current = None
                row["from"] = entry.wp.shown
                row["path"] = target.wp.shown
        target.current = data
        self.summary.append(row)

    def commit(self) -> int:
        """Write every changed file (writes before deletes); restore all on a failure."""
        changed = [f for f in self.files.values() if f.current != f.original]
        changed.sort(key=lambda f: f.current is None)
        done: list[_File] = []
        for entry in changed:
            try:
                if entry.current is None:
                    remove_file(entry.wp)
                else:
                    write_bytes(entry.wp, entry.current, mode=entry.mode if entry.mode is not None else entry.new_mode)
            except (OSError, HomarusError) as exc:
                failed = _rollback(done)
                note = f"; could not restore: {', '.join(failed)}" if failed else ""
                message = exc.message if isinstance(exc, HomarusError) else str(exc)
                raise PatchError(
                    f"apply_patch: writing {entry.wp.shown} failed: {message}. "
                    f"{len(done)} file(s) already written were restored{note}."
                ) from None
            done.append(entry)
        return len(done)


def _rollback(done: list[_File]) -> list[str]:
    failed: list[str] = []
    for entry in reversed(done):
        try:
            if entry.original is None:
                remove_file(entry.wp)
            else:
                write_bytes(entry.wp, entry.original, mode=entry.mode)
        except (OSError, HomarusError):
            failed.append(entry.wp.shown)
    return failed


def _apply_sync(workspace: Path, patch: str, mount: str | None = None) -> ToolResult:
    if len(patch.encode("utf-8", "surrogatepass")) > MAX_PATCH_BYTES:
        raise PatchError(f"apply_patch: the patch is larger than {MAX_PATCH_BYTES:,} bytes. {_NOTHING}")
    ops = parse_patch(patch)
    if len(ops) > MAX_PATCH_FILES:
        raise PatchError(f"apply_patch: at most {MAX_PATCH_FILES} file operations per patch. {_NOTHING}")
    plan = _Plan(workspace, mount)
    for op in ops:
        try:
            {"add": plan.add, "delete": plan.delete, "update": plan.update}[op.kind](op)
        except PatchError:
            raise
        except PathError as exc:  # keep the class (PathEscape, PathAliasEscape) for callers
            raise type(exc)(f"apply_patch: {exc.message} {_NOTHING}") from None
    written = plan.commit()
    names = {"A": "added", "M": "updated", "D": "deleted"}
    lines = [
        f"{row['op']} {row['path']}" + (f" (moved from {row['from']})" if "from" in row else "") for row in plan.summary
    ]
    text = f"Success. {written} file(s) changed:\n" + "\n".join(lines)
    details = {"files": plan.summary[:100], "changed": written, "ops": [names[r["op"]] for r in plan.summary[:100]]}
    return ToolResult.text(text, details=details)


async def apply_patch(ctx: ToolContext, patch: str) -> ToolResult:
    """Apply a multi-file patch in the workspace, all or nothing.

    Format (paths relative to the workspace):
    *** Begin Patch
    *** Add File: <path>  (then its lines, each starting with "+")
    *** Delete File: <path>
    *** Update File: <path>
    *** Move to: <new path>  (optional rename)
    @@ <a line above the change, optional>
     context line (starts with a space)
    -removed line
    +added line
    *** End Patch
    About 3 context lines per change, hunks in file order. If a hunk does not match, nothing
    changes and the error names it.
    """
    view = ctx.sandbox
    if view is not None and not view.files_writable:
        raise PatchError(f"apply_patch: file writes are disabled in this sandbox (workspaceAccess ro). {_NOTHING}")
    root, mount = (view.root, "/workspace") if view is not None else (ctx.workspace, None)
    try:
        return await asyncio.to_thread(_apply_sync, root, patch, mount)
    except OSError as exc:  # while reading the files; writes are wrapped (and rolled back) by commit
        raise PatchError(f"apply_patch: file operation failed: {exc.strerror or exc}. {_NOTHING}") from None
