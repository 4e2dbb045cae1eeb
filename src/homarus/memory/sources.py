"""Which files are memory: listing them for a full scan, classifying one path for the watcher.

Memory files are ``MEMORY.md`` and ``memory.md`` at the workspace root, ``memory/**/*.md``, and the
configured extra paths (directories searched recursively for ``*.md``, or single ``.md`` files).
Symlinks are never listed nor followed, files or directories, so the index cannot be pointed
outside the places the user named; directories such as ``.git`` and ``node_modules`` are skipped;
duplicates (an extra path that repeats ``memory/``) are dropped by real path.

Paths are shown workspace-relative with ``/`` (absolute for extra paths outside the workspace);
that is the ``path`` of the index rows, search results and ``memory_get``.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IGNORED_DIRS", "SourceFile", "classify_paths", "list_memory_files", "resolve_extra_path"]

IGNORED_DIRS = frozenset({".git", "node_modules", ".pnpm-store", ".venv", "venv", ".tox", "__pycache__"})
ROOT_FILES = ("MEMORY.md", "memory.md")


@dataclass(frozen=True, slots=True)
class SourceFile:
    #: workspace-relative with ``/`` (absolute for extra paths outside the workspace)
    path: str
    abs_path: str
    size: int
    mtime_ns: int
    source: str = "memory"


def _is_md(name: str) -> bool:
    return name.lower().endswith(".md")


def _walk(root: Path) -> list[tuple[str, os.stat_result]]:
    """``*.md`` under ``root`` with their ``lstat``, never following symlinks."""
    found: list[tuple[str, os.stat_result]] = []
    stack = [str(root)]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in IGNORED_DIRS:
                    subdirs.append(entry.path)
            elif _is_md(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):  # gone since the directory was read
                    found.append((entry.path, entry.stat(follow_symlinks=False)))
        stack.extend(reversed(subdirs))
    return found


def _single(p: Path) -> list[tuple[str, os.stat_result]]:
    try:
        st = os.lstat(p)
    except OSError:
        return []
    return [(str(p), st)] if stat.S_ISREG(st.st_mode) else []


def resolve_extra_path(raw: str, workspace: Path) -> Path:
    p = Path(os.path.expanduser(raw))
    return Path(os.path.normpath(p if p.is_absolute() else workspace / p))


def list_memory_files(workspace: Path, extra_paths: Sequence[str] = ()) -> list[SourceFile]:
    """Every memory file with its ``lstat`` (symlinks are never listed nor followed)."""
    workspace = Path(os.path.abspath(workspace))
    # (file, stat, the directory it was found under): symlinks are never followed below such a
    # directory, so a file's real path is the directory's real path plus the rest of its name
    found: list[tuple[str, os.stat_result, Path]] = []
    roots = [f for n in ("MEMORY.md", "memory.md") for f in _single(workspace / n)]
    if len(roots) == 2 and os.path.samestat(roots[0][1], roots[1][1]):  # a case-insensitive file system
        roots = roots[:1]
    found.extend((p, st, workspace) for p, st in roots)
    mem_dir = workspace / "memory"
    if mem_dir.is_dir() and not mem_dir.is_symlink():
        found.extend((p, st, mem_dir) for p, st in _walk(mem_dir))
    for raw in extra_paths:
        extra = resolve_extra_path(raw, workspace)
        if extra.is_symlink():
            continue
        if extra.is_dir():
            found.extend((p, st, extra) for p, st in _walk(extra))
        elif _is_md(extra.name):
            found.extend((p, st, extra.parent) for p, st in _single(extra))
    real_roots: dict[Path, str] = {}
    ws_prefix = str(workspace) + os.sep
    seen: set[str] = set()
    out: list[SourceFile] = []
    for text, st, base in found:
        if base not in real_roots:
            real_roots[base] = os.path.realpath(base)
        real = real_roots[base] + text[len(str(base)) :]
        if real in seen:  # e.g. an extra path that repeats memory/
            continue
        seen.add(real)
        shown = text[len(ws_prefix) :] if text.startswith(ws_prefix) else text
        out.append(SourceFile(shown.replace(os.sep, "/"), text, st.st_size, st.st_mtime_ns))
    return out


def _no_symlink_between(root: Path, target: Path) -> bool:
    current = root
    for part in target.relative_to(root).parts:
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return False
        except OSError:
            return True  # the rest does not exist: nothing to follow
    return True


def classify_paths(
    paths: Iterable[str], workspace: Path, extra_paths: Sequence[str] = ()
) -> tuple[list[SourceFile], list[str]]:
    """Changed paths (from the watcher) → (memory files that exist, shown paths/prefixes now gone).

    A gone entry ending in ``/`` is a directory prefix: every indexed file under it is gone.
    Paths that are not memory files are ignored, exactly as a full listing would leave them out.
    """
    workspace = Path(os.path.abspath(workspace))
    extras = [resolve_extra_path(p, workspace) for p in extra_paths]
    files: list[SourceFile] = []
    gone: list[str] = []
    for raw in dict.fromkeys(paths):
        p = Path(os.path.normpath(os.path.abspath(raw)))
        root: Path | None = None
        shown: str | None = None
        try:
            rel = p.relative_to(workspace)
        except ValueError:
            rel = None
        if rel is not None and (str(rel) in ROOT_FILES or (rel.parts[:1] == ("memory",))):
            if any(part in IGNORED_DIRS for part in rel.parts):
                continue
            root, shown = workspace, rel.as_posix()
        else:
            for extra in extras:
                if p == extra or extra in p.parents:
                    root, shown = (extra.parent if p == extra else extra), p.as_posix()
                    break
        if root is None or shown is None or not _no_symlink_between(root, p):
            continue
        try:
            st = os.lstat(p)
        except OSError:
            gone += [shown, shown.rstrip("/") + "/"]  # a file, or a directory that held files
            continue
        if stat.S_ISDIR(st.st_mode):
            # a directory event (created, moved in): list its files
            for f, fst in _walk(p):
                files.append(SourceFile(_shown(f, workspace), f, fst.st_size, fst.st_mtime_ns))
        elif stat.S_ISREG(st.st_mode) and _is_md(p.name):
            files.append(SourceFile(shown, str(p), st.st_size, st.st_mtime_ns))
    return files, gone


def _shown(text: str, workspace: Path) -> str:
    prefix = str(workspace) + os.sep
    return (text[len(prefix) :] if text.startswith(prefix) else text).replace(os.sep, "/")
