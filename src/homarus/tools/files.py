"""The workspace file tools: ``read``, ``write``, ``edit`` (and ``apply_patch`` from :mod:`.patch`).

Every path is bounded to ``ToolContext.workspace`` by :mod:`homarus.tools.paths`; refusals
and misuse raise :class:`~homarus.errors.InvalidRequest` subclasses, which the agent loop turns
into error results the model can read. Blocking file I/O runs in a worker thread.

``read`` returns plain text under a one-line header (``[File: a.py, lines 1-120 of 120, ...]``)
and ends with ``Use offset=N to continue`` when it stops early: at most 2,000 lines and
256 KiB per call, and never more characters than the agent loop passes to the model, so the
note is not cut off. Binary files come back as a description (size and type); small PNG, JPEG,
GIF and WebP images as an image block.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import dataclasses
import difflib
import inspect
import mimetypes
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from homarus.errors import InvalidRequest
from homarus.messages import ImageContent, TextContent
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function
from homarus.tools.patch import apply_patch
from homarus.tools.paths import PathError, in_mount, open_file, read_bytes, resolve, write_bytes

__all__ = [
    "MAX_IMAGE_BYTES",
    "MAX_READ_BYTES",
    "MAX_READ_LINES",
    "MAX_WRITE_BYTES",
    "edit",
    "file_tools",
    "read",
    "write",
]

MAX_READ_LINES = 2000
MAX_READ_BYTES = 256 * 1024
#: below the agent loop's cap on one tool result (100,000 characters), so the continue note survives
MAX_READ_CHARS = 90_000
MAX_WRITE_BYTES = 5 * 1024 * 1024
MAX_IMAGE_BYTES = 3 * 1024 * 1024
#: after the shown lines, how far ``read`` keeps counting lines to report the total
MAX_COUNT_BYTES = 32 * 1024 * 1024
MAX_DIFF_CHARS = 8000
_SNIFF_BYTES = 8192

_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"%PDF-", 0, "application/pdf"),
    (b"PK\x03\x04", 0, "application/zip"),
    (b"\x1f\x8b", 0, "application/gzip"),
    (b"\x7fELF", 0, "application/x-executable"),
    (b"SQLite format 3\x00", 0, "application/vnd.sqlite3"),
)
_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

#: other spellings models use for these parameters (upstream camelCase, other agents' names)
_ALIASES: dict[str, dict[str, str]] = {
    "read": {"file_path": "path", "filePath": "path"},
    "write": {"file_path": "path", "filePath": "path"},
    "edit": {
        "file_path": "path",
        "filePath": "path",
        "oldText": "old_text",
        "old_string": "old_text",
        "newText": "new_text",
        "new_string": "new_text",
        "replaceAll": "replace_all",
    },
    "apply_patch": {"input": "patch"},
}


def _binary_type(head: bytes, name: str) -> str | None:
    """The MIME type of a binary file, or None when ``head`` looks like UTF-8 text."""
    for magic, at, mime in _MAGIC:
        if head[at : at + len(magic)] == magic and (mime != "image/webp" or head[:4] == b"RIFF"):
            return mime
    if b"\x00" in head:
        return mimetypes.guess_type(name)[0] or "application/octet-stream"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < _SNIFF_BYTES)
    except UnicodeDecodeError:
        return mimetypes.guess_type(name)[0] or "application/octet-stream"
    return None


def _iter_lines(fd: int, cap: int) -> Iterator[tuple[bytes, int]]:
    """(at most ``cap`` leading bytes of each line, the line's full length), newline included."""
    kept = bytearray()
    size = 0
    while chunk := os.read(fd, 1 << 16):
        start = 0
        while start < len(chunk):
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl + 1
            if len(kept) < cap:
                kept += chunk[start : min(end, start + cap - len(kept))]
            size += end - start
            start = end
            if nl >= 0:
                yield bytes(kept), size
                kept = bytearray()
                size = 0
    if size:
        yield bytes(kept), size


def _read_sync(workspace: Path, path: str, offset: int | None, limit: int | None) -> ToolResult:
    if offset is not None and offset < 0:
        raise InvalidRequest("offset is a 1-based line number and must be >= 1")
    if limit is not None and limit < 1:
        raise InvalidRequest("limit must be >= 1")
    first = max(offset or 1, 1)
    max_lines = min(limit or MAX_READ_LINES, MAX_READ_LINES)
    wp = resolve(workspace, path)
    with open_file(wp) as (fd, st):
        head = os.pread(fd, _SNIFF_BYTES, 0)
        mime = _binary_type(head, wp.name)
        if mime is not None:
            return _binary_result(fd, st.st_size, mime, wp.shown)
        out: list[str] = []
        used_bytes = used_chars = 0
        lineno = last = 0
        stopped = False  # past the shown lines: only counting the rest
        cut_line = False
        counted = 0
        for raw, full in _iter_lines(fd, MAX_READ_BYTES):
            lineno += 1
            if lineno < first:
                continue
            if not stopped and len(out) < max_lines:
                text = raw.decode("utf-8", "replace")
                fits = used_bytes + len(raw) <= MAX_READ_BYTES and used_chars + len(text) <= MAX_READ_CHARS
                if fits and full == len(raw):
                    out.append(text)
                    used_bytes += len(raw)
                    used_chars += len(text)
                    last = lineno
                    continue
                if not out:  # one line too long for a call: show its beginning, then move on
                    out.append(text[: MAX_READ_CHARS - 200].rstrip("\n") + "\n")
                    last = lineno
                    cut_line = True
                    stopped = True
                    continue
            stopped = True
            counted += full
            if counted > MAX_COUNT_BYTES:
                break
        total = lineno
        complete = counted <= MAX_COUNT_BYTES
    if st.st_size == 0:
        return ToolResult.text(f"[File: {wp.shown} is empty]", details={"path": wp.shown, "bytes": 0, "lines": 0})
    if first > total:
        raise InvalidRequest(f"offset {first} is beyond the end of {wp.shown} ({total} lines)")
    of_total = f"{total}" if complete else f"at least {total}"
    body = "".join(out)
    if not body.endswith("\n"):
        body += "\n"
    header = f"[File: {wp.shown}, lines {first}-{last} of {of_total}, {st.st_size:,} bytes]\n"
    notes: list[str] = []
    if cut_line:
        notes.append(f"[Line {last} is too long to show in full; only its beginning is shown.]")
    if last < total or not complete:
        notes.append(f"[Showing lines {first}-{last} of {of_total}. Use offset={last + 1} to continue.]")
    details: dict[str, Any] = {
        "path": wp.shown,
        "bytes": st.st_size,
        "offset": first,
        "lines": last - first + 1,
        "totalLines": total if complete else None,
        "truncated": bool(notes),
    }
    return ToolResult.text(header + body + "\n".join(notes), details=details)


def _binary_result(fd: int, size: int, mime: str, shown: str) -> ToolResult:
    details: dict[str, Any] = {"path": shown, "bytes": size, "mimeType": mime, "binary": True}
    if mime in _IMAGES and size <= MAX_IMAGE_BYTES:
        data = os.pread(fd, size, 0)
        header = TextContent(f"[Image: {shown}, {mime}, {size:,} bytes]")
        return ToolResult([header, ImageContent(base64.b64encode(data).decode("ascii"), mime)], details)
    extra = f" (images larger than {MAX_IMAGE_BYTES:,} bytes are not attached)" if mime in _IMAGES else ""
    return ToolResult.text(
        f"[Binary file: {shown}, {mime}, {size:,} bytes. Its content is not shown as text{extra}.]",
        details=details,
    )


def _write_sync(workspace: Path, path: str, content: str) -> ToolResult:
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest("content is not valid Unicode text") from None
    if len(data) > MAX_WRITE_BYTES:
        raise InvalidRequest(f"content is too large ({len(data):,} bytes; the limit is {MAX_WRITE_BYTES:,})")
    if path.endswith(("/", "\\")):
        raise PathError(f"{path} names a directory; give a file path")
    wp = resolve(workspace, path)
    created = write_bytes(wp, data)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Created" if created else "Overwrote"
    return ToolResult.text(
        f"{verb} {wp.shown} ({len(data):,} bytes, {lines} line{'' if lines == 1 else 's'}).",
        details={"path": wp.shown, "bytes": len(data), "lines": lines, "created": created},
    )


def _line_endings(text: str) -> str:
    """``"\\r\\n"`` when every line break of ``text`` is CRLF, else ``"\\n"``."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf == text.count("\n") else "\n"


def _positions(text: str, needle: str, limit: int) -> list[int]:
    found: list[int] = []
    at = text.find(needle)
    while at >= 0 and len(found) < limit:
        found.append(at)
        at = text.find(needle, at + 1)  # overlapping matches count as ambiguity too
    return found


def _bounded_diff(before: str, after: str, shown: str) -> str:
    if len(before) + len(after) > 1_000_000:
        return ""
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{shown}", f"b/{shown}", n=2
        )
    )
    return diff if len(diff) <= MAX_DIFF_CHARS else diff[:MAX_DIFF_CHARS] + "\n[... diff truncated]\n"


def _edit_sync(workspace: Path, path: str, old_text: str, new_text: str, replace_all: bool) -> ToolResult:
    if not old_text:
        raise InvalidRequest("old_text must not be empty; use write to create or replace a whole file")
    wp = resolve(workspace, path)
    raw, _ = read_bytes(wp, MAX_WRITE_BYTES)
    try:
        original = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest(f"{wp.shown} is not UTF-8 text; edit only works on text files") from None
    bom = "\ufeff" if original.startswith("\ufeff") else ""
    eol = _line_endings(original)
    text = original[len(bom) :].replace("\r\n", "\n") if eol == "\r\n" else original[len(bom) :]
    if eol == "\r\n" or "\r\n" not in text:  # the model's line breaks follow the file's convention
        old_text, new_text = old_text.replace("\r\n", "\n"), new_text.replace("\r\n", "\n")
    if old_text == new_text:
        raise InvalidRequest("old_text and new_text are identical; nothing to change")
    hits = _positions(text, old_text, 1000)
    if not hits:
        hint = " (it does occur with different leading/trailing whitespace)" if old_text.strip() in text else ""
        raise InvalidRequest(
            f"old_text was not found in {wp.shown}{hint}. It must match the file exactly, including whitespace, "
            "indentation and line breaks; read the file again and copy the text."
        )
    if len(hits) > 1 and not replace_all:
        where = ", ".join(str(text.count("\n", 0, h) + 1) for h in hits[:10])
        raise InvalidRequest(
            f"old_text occurs {len(hits)}{'+' if len(hits) == 1000 else ''} times in {wp.shown} (at lines {where}); "
            "include more surrounding lines to make it unique, or set replace_all=true."
        )
    count = text.count(old_text) if replace_all else 1
    updated = text.replace(old_text, new_text) if replace_all else text.replace(old_text, new_text, 1)
    result = bom + (updated.replace("\n", "\r\n") if eol == "\r\n" else updated)
    data = result.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise InvalidRequest(f"the edited file would be too large ({len(data):,} bytes; limit {MAX_WRITE_BYTES:,})")
    write_bytes(wp, data)
    line = text.count("\n", 0, hits[0]) + 1
    removed, added = old_text.count("\n") + 1, new_text.count("\n") + 1
    details: dict[str, Any] = {
        "path": wp.shown,
        "bytes": len(data),
        "replacements": count,
        "firstChangedLine": line,
        "linesRemoved": removed * count,
        "linesAdded": added * count,
        "diff": _bounded_diff(text, updated, wp.shown),
    }
    what = f"{count} occurrences" if count > 1 else f"1 occurrence at line {line}"
    return ToolResult.text(f"Edited {wp.shown}: replaced {what}.", details=details)


async def _in_thread(fn: Callable[..., ToolResult], *args: Any) -> ToolResult:
    """Run blocking file work off the event loop; OS failures become model-visible errors."""
    try:
        return await asyncio.to_thread(fn, *args)
    except OSError as exc:
        raise InvalidRequest(f"file operation failed: {exc.strerror or exc}") from None


SANDBOX_MOUNT = "/workspace"
AGENT_MOUNT = "/agent"
READ_ONLY_SANDBOX = (
    "file writes are disabled in this sandbox (agents.defaults.sandbox.workspaceAccess is ro); "
    "/agent is read-only and nothing was changed"
)


def file_root(ctx: ToolContext, path: str, *, write: bool) -> tuple[Path, str]:
    """(the directory ``path`` is resolved in, ``path`` relative to it) for this call.

    Unsandboxed: the agent workspace. Sandboxed: ``/workspace/...`` and relative paths name the
    sandbox's workspace, ``/agent/...`` the read-only agent workspace (``workspaceAccess: ro``),
    where writes are refused.
    """
    view = ctx.sandbox
    if view is None:
        return ctx.workspace, path
    if write and not view.files_writable:
        raise InvalidRequest(READ_ONLY_SANDBOX)
    if view.agent_root is not None and in_mount(path, AGENT_MOUNT) != path:
        return view.agent_root, in_mount(path, AGENT_MOUNT)
    return view.root, in_mount(path, SANDBOX_MOUNT)


def skill_root(ctx: ToolContext, path: str) -> tuple[Path, str] | None:
    """(skill dir, path inside it) when ``path`` is an absolute path into a skill this run lists.

    The runtime lends the real directories of the skills in the prompt as ``services.skills``.
    Only an absolute path whose normalised form is inside one of them matches (``..`` cannot climb
    out: it is collapsed before the check); the file is then opened with the skill dir as the
    root, so the usual checks refuse symlinks or hard links that lead out of the skill. Read only:
    ``write``/``edit`` never consult this.
    """
    roots = ctx.services.skills
    if not roots or not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        return None
    target = os.path.normpath(path)
    for root in roots:
        base = root.rstrip("/") if isinstance(root, str) and root.startswith("/") else ""
        if base and target.startswith(base + "/"):  # never "/" itself: that would open everything
            return Path(base), os.path.relpath(target, base)
    return None


async def read(ctx: ToolContext, path: str, offset: int | None = None, limit: int | None = None) -> ToolResult:
    """Read a text file (path relative to the workspace).

    At most 2000 lines / 256 KB per call; output cut short ends with the offset to continue from.
    offset: 1-based first line; limit: number of lines. Binary files are described; small images
    are returned as images.
    """
    return await _in_thread(_read_sync, *(skill_root(ctx, path) or file_root(ctx, path, write=False)), offset, limit)


async def write(ctx: ToolContext, path: str, content: str) -> ToolResult:
    """Create or overwrite a workspace file with UTF-8 content (max 5 MB).

    Creates parent directories; replaces the file atomically. Prefer edit for small changes.
    """
    return await _in_thread(_write_sync, *file_root(ctx, path, write=True), content)


async def edit(ctx: ToolContext, path: str, old_text: str, new_text: str, replace_all: bool = False) -> ToolResult:
    """Replace old_text with new_text in a workspace text file.

    old_text must match exactly (whitespace and line breaks included) and occur once unless
    replace_all; include enough context to make it unique. Line endings are kept.
    """
    return await _in_thread(_edit_sync, *file_root(ctx, path, write=True), old_text, new_text, replace_all)


def _with_aliases(tool: Tool) -> Tool:
    aliases = _ALIASES.get(tool.name, {})
    inner = tool.execute

    async def execute(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        fixed = {(aliases[k] if k in aliases and aliases[k] not in args else k): v for k, v in args.items()}
        return await inner(ctx, fixed)

    return dataclasses.replace(tool, execute=execute)


def file_tools() -> list[Tool]:
    """``read``, ``write``, ``edit`` and ``apply_patch``, bounded to each call's workspace."""
    tools = [
        tool_from_function(
            fn,
            description=inspect.getdoc(fn),
            tags=frozenset({"fs", "writes"} if writes else {"fs"}),
            summary=summary,
        )
        for fn, writes, summary in (
            (read, False, "Read files"),
            (write, True, "Create or overwrite files"),
            (edit, True, "Exact edits in files"),
            (apply_patch, True, "Multi-file patches"),
        )
    ]
    return [_with_aliases(t) for t in tools]
