"""``ls``, ``find`` and ``grep``: looking around the workspace without a shell.

The original offers the same three (``ls`` by default, ``grep``/``find`` in its coding profile);
models and prompts written for it call them by these names with these arguments. Written here
rather than shelling out to ripgrep/fd: the binaries may be absent, and every path must stay
inside the workspace by the same rules as ``read`` (:mod:`homarus.tools.paths`). A directory is
walked with ``scandir`` without following symlinks (a symlink is listed, never entered), ``.git``
and ``node_modules`` are skipped, and the root ``.gitignore``'s plain patterns are honoured
(negations and nested ``.gitignore`` files are not). Every listing is bounded (entries, matches,
bytes, line length, scanned bytes and time).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import re
import time
from collections.abc import Iterator
from typing import Annotated, Final

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function
from homarus.tools.files import file_root
from homarus.tools.paths import resolve

__all__ = ["search_tools"]

LS_LIMIT: Final = 500
FIND_LIMIT: Final = 1000
GREP_LIMIT: Final = 100
MAX_OUTPUT_BYTES: Final = 50 * 1024
MAX_LINE_CHARS: Final = 500
#: a file larger than this is not searched (logs, dumps: read them with offsets instead)
MAX_GREP_FILE_BYTES: Final = 10 * 1024 * 1024
MAX_SCANNED_BYTES: Final = 200 * 1024 * 1024
MAX_WALKED: Final = 200_000
DEADLINE_S: Final = 20.0
SKIPPED_DIRS: Final = frozenset({".git", "node_modules"})


def _directory(ctx: ToolContext, path: str | None) -> tuple[str, str]:
    """(real path of the directory or file to search, how to name it) inside this call's root."""
    root, rel = file_root(ctx, path or ".", write=False)
    wp = resolve(root, rel or ".")
    if not wp.exists:
        raise InvalidRequest(f"Path not found: {wp.shown}")
    return wp.real, wp.shown


def _ignored_patterns(base: str) -> list[str]:
    try:
        with open(os.path.join(base, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            lines = [ln.strip() for ln in fh.read(64 * 1024).splitlines()]
    except OSError:
        return []
    return [ln for ln in lines if ln and not ln.startswith(("#", "!"))]


def _is_ignored(rel: str, name: str, is_dir: bool, patterns: list[str]) -> bool:
    for pattern in patterns:
        dir_only = pattern.endswith("/")
        pat = pattern.strip("/")
        if dir_only and not is_dir:
            continue
        target = rel if "/" in pat else name
        if fnmatch.fnmatchcase(target, pat):
            return True
    return False


def _walk(base: str, deadline: float) -> Iterator[tuple[str, str, bool]]:
    """(real path, path relative to ``base``, is a directory) of everything below ``base``, in
    name order, depth first; symlinks are reported as files and never entered."""
    patterns = _ignored_patterns(base)
    stack: list[tuple[str, str]] = [(base, "")]
    walked = 0
    while stack:
        real_dir, rel_dir = stack.pop()
        try:
            with os.scandir(real_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[tuple[str, str]] = []
        for entry in entries:
            walked += 1
            if walked > MAX_WALKED or time.monotonic() > deadline:
                return
            is_dir = entry.is_dir(follow_symlinks=False)
            rel = f"{rel_dir}{entry.name}"
            if (is_dir and entry.name in SKIPPED_DIRS) or _is_ignored(rel, entry.name, is_dir, patterns):
                continue
            yield entry.path, rel, is_dir
            if is_dir:
                subdirs.append((entry.path, rel + "/"))
        stack.extend(reversed(subdirs))


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex over ``/``-separated paths: ``**`` spans directories, ``*`` and ``?`` do not."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append(f"[{'^' + body[1:] if body.startswith('!') else body}]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _bounded(lines: list[str], notices: list[str]) -> str:
    out: list[str] = []
    size = 0
    for line in lines:
        size += len(line.encode("utf-8", "replace")) + 1
        if size > MAX_OUTPUT_BYTES:
            notices.append(f"{MAX_OUTPUT_BYTES // 1024}KB limit reached")
            break
        out.append(line)
    text = "\n".join(out)
    return text + (f"\n\n[{'. '.join(notices)}]" if notices else "")


# -- ls ------------------------------------------------------------------------------------------
def _ls_sync(real: str, limit: int, after: str | None) -> ToolResult:
    if not os.path.isdir(real) or os.path.islink(real):
        raise InvalidRequest("Not a directory")
    with os.scandir(real) as it:
        entries = sorted(((e.name, e.is_dir(follow_symlinks=False)) for e in it), key=lambda e: os.fsencode(e[0]))
    if after is not None:
        entries = [e for e in entries if os.fsencode(e[0]) > os.fsencode(after)]
    if not entries:
        return ToolResult.text("(empty directory)")
    lines: list[str] = []
    size = 0
    for name, is_dir in entries[:limit]:
        line = json.dumps(name + ("/" if is_dir else ""), ensure_ascii=False)
        size += len(line.encode()) + 1
        if size > MAX_OUTPUT_BYTES:
            break
        lines.append(line)
    text = "\n".join(lines)
    if len(lines) < len(entries):
        nxt = entries[len(lines) - 1][0]
        text += f"\n\n[More entries. Continue with the same path and after={json.dumps(nxt, ensure_ascii=False)}.]"
        return ToolResult.text(text, details={"nextAfter": nxt})
    return ToolResult.text(text)


async def ls(
    ctx: ToolContext,
    path: str | None = None,
    limit: Annotated[int, Field(ge=1)] | None = None,
    after: str | None = None,
) -> ToolResult:
    """List directory entries in binary filename order, including dotfiles and links. Names are
    JSON-quoted; / marks actual directories. Pass the returned after cursor with the same path to
    continue. path: directory (default: the workspace); limit: max entries (default 500)."""
    real, _shown = _directory(ctx, path)
    return await asyncio.to_thread(_ls_sync, real, min(limit or LS_LIMIT, LS_LIMIT * 20), after)


# -- find ----------------------------------------------------------------------------------------
def _find_sync(real: str, pattern: str, limit: int) -> ToolResult:
    if not os.path.isdir(real):
        raise InvalidRequest("Not a directory")
    matcher = _glob_regex(pattern)
    by_path = "/" in pattern
    found: list[str] = []
    for _path, rel, is_dir in _walk(real, time.monotonic() + DEADLINE_S):
        target = rel if by_path else rel.rsplit("/", 1)[-1]
        if matcher.match(target):
            found.append(rel + ("/" if is_dir else ""))
            if len(found) > limit:
                break
    if not found:
        return ToolResult.text("No files found matching pattern")
    notices = [f"{limit} results limit reached"] if len(found) > limit else []
    return ToolResult.text(_bounded(found[:limit], notices))


async def find(
    ctx: ToolContext,
    pattern: Annotated[str, Field(min_length=1, max_length=500)],
    path: str | None = None,
    limit: Annotated[int, Field(ge=1)] | None = None,
) -> ToolResult:
    """Find files by glob (e.g. **/*.py; a pattern without / matches file names at any depth);
    paths relative to the search dir. Respects .gitignore. Caps 1000 results/50KB.
    path: search dir (default: the workspace); limit: max results."""
    real, _shown = _directory(ctx, path)
    return await asyncio.to_thread(_find_sync, real, pattern, min(limit or FIND_LIMIT, FIND_LIMIT * 10))


# -- grep ----------------------------------------------------------------------------------------
def _files(real: str, glob: str | None, deadline: float) -> Iterator[tuple[str, str]]:
    if os.path.isfile(real):
        yield real, os.path.basename(real)
        return
    matcher = _glob_regex(glob) if glob else None
    for path, rel, is_dir in _walk(real, deadline):
        if is_dir or os.path.islink(path):
            continue
        if matcher is not None and not matcher.match(rel if "/" in (glob or "") else rel.rsplit("/", 1)[-1]):
            continue
        yield path, rel


def _grep_sync(real: str, regex: re.Pattern[str], glob: str | None, context: int, limit: int) -> ToolResult:
    deadline = time.monotonic() + DEADLINE_S
    out: list[str] = []
    matches = 0
    scanned = 0
    truncated_lines = False
    for path, rel in _files(real, glob, deadline):
        if matches > limit or scanned > MAX_SCANNED_BYTES or time.monotonic() > deadline:
            break
        try:
            with open(path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size > MAX_GREP_FILE_BYTES:
                    continue
                data = fh.read(MAX_GREP_FILE_BYTES)
        except OSError:
            continue
        scanned += len(data)
        if b"\0" in data[:8192]:
            continue  # binary
        lines = data.decode("utf-8", "replace").splitlines()
        shown_until = -1
        for i, line in enumerate(lines):
            if not regex.search(line[:10_000]):
                continue
            matches += 1
            if matches > limit:
                break
            for j in range(max(i - context, shown_until + 1), min(i + context, len(lines) - 1) + 1):
                text = lines[j]
                if len(text) > MAX_LINE_CHARS:
                    text, truncated_lines = text[:MAX_LINE_CHARS] + "…", True
                sep = ":" if j == i else "-"
                out.append(f"{rel}{sep}{j + 1}{sep} {text}")
                shown_until = j
    if not out:
        return ToolResult.text("No matches found")
    notices = []
    if matches > limit:
        notices.append(f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern")
    if truncated_lines:
        notices.append(f"Some lines truncated to {MAX_LINE_CHARS} chars")
    return ToolResult.text(_bounded(out, notices))


async def grep(
    ctx: ToolContext,
    pattern: Annotated[str, Field(min_length=1, max_length=1000)],
    path: str | None = None,
    glob: str | None = None,
    ignoreCase: bool = False,
    literal: bool = False,
    context: Annotated[int, Field(ge=0, le=20)] = 0,
    limit: Annotated[int, Field(ge=1)] | None = None,
) -> ToolResult:
    """Search file contents; returns path:line: text matches (context lines as path-line- text).
    Respects .gitignore. Caps 100 matches/50KB; lines cap 500 chars. pattern: a regex (or literal
    text with literal=true); path: file or dir (default: the workspace); glob: file filter, e.g. *.py."""
    real, _shown = _directory(ctx, path)
    flags = re.IGNORECASE if ignoreCase else 0
    try:
        regex = re.compile(re.escape(pattern) if literal else pattern, flags)
    except re.error as exc:
        raise InvalidRequest(f"invalid regex: {exc}") from None
    return await asyncio.to_thread(_grep_sync, real, regex, glob, context, min(limit or GREP_LIMIT, GREP_LIMIT * 10))


def search_tools() -> list[Tool]:
    """``ls``, ``find``, ``grep``: read-only views of the workspace."""
    import inspect

    return [
        tool_from_function(fn, description=inspect.getdoc(fn), tags=frozenset({"fs"}), summary=summary)
        for fn, summary in (
            (ls, "List directory entries"),
            (find, "Find files by glob"),
            (grep, "Search file contents"),
        )
    ]
