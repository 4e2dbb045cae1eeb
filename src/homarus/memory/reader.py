"""``memory_get``: reading lines of a memory file, and nothing else.

Allowed: ``MEMORY.md`` / ``memory.md`` at the workspace root, ``.md`` files under ``memory/``, and
``.md`` files inside (or equal to) a configured extra path. The path is checked lexically first
(no ``..`` escapes, no absolute paths outside an extra path), then every existing component is
``lstat``-ed so no symlink is followed anywhere on the way, and the file is opened with
``O_NOFOLLOW`` so a symlink swapped in after the check is refused too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from homarus.errors import Forbidden, InvalidRequest
from homarus.memory.chunking import split_lines
from homarus.memory.sources import resolve_extra_path

__all__ = ["ReadResult", "read_memory_file"]

MAX_READ_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReadResult:
    path: str
    text: str
    from_line: int
    lines: int
    total_lines: int
    missing: bool = False

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "text": self.text}
        if self.missing:
            out["missing"] = True
        return out


def _allowed_root(target: Path, workspace: Path, extras: Sequence[Path]) -> Path | None:
    """The directory whose tree ``target`` must stay in, or None when it is not a memory file."""
    try:
        rel = PurePosixPath(target.relative_to(workspace).as_posix())
    except ValueError:
        rel = None
    if rel is not None and (str(rel) in ("MEMORY.md", "memory.md") or (rel.parts and rel.parts[0] == "memory")):
        return workspace
    for extra in extras:
        if target == extra or extra in target.parents:
            return extra.parent if target == extra else extra
    return None


def _check_no_symlinks(target: Path, root: Path, workspace: Path) -> None:
    # the workspace itself may be reached through a symlink (that is the user's choice of path);
    # an extra path that is a symlink is not indexed, so it is not readable either
    current = root
    if root != workspace and current.is_symlink():
        raise Forbidden(f"{root} is a symlink")
    for part in target.relative_to(root).parts:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise Forbidden("memory files are never read through symlinks")


def read_memory_file(
    raw: str,
    *,
    workspace: Path,
    extra_paths: Sequence[str],
    from_line: int | None = None,
    lines: int | None = None,
) -> ReadResult:
    if not raw or not raw.strip() or "\x00" in raw:
        raise InvalidRequest("path required: a memory file such as MEMORY.md or memory/2026-01-05.md")
    workspace = Path(os.path.abspath(workspace))
    given = Path(os.path.expanduser(raw.strip()))
    target = Path(os.path.normpath(given if given.is_absolute() else workspace / given))
    extras = [resolve_extra_path(p, workspace) for p in extra_paths]
    root = _allowed_root(target, workspace, extras)
    if root is None:
        raise Forbidden(f"{raw!r} is not a memory file (MEMORY.md, memory/**/*.md or a configured extra path)")
    if not target.name.lower().endswith(".md"):
        raise Forbidden(f"{raw!r} is not a Markdown (.md) file")
    _check_no_symlinks(target, root, workspace)
    shown = target.relative_to(workspace).as_posix() if workspace in target.parents else target.as_posix()
    start = 1 if from_line is None else from_line
    if start < 1:
        raise InvalidRequest("from must be 1 or more")
    if lines is not None and lines < 1:
        raise InvalidRequest("lines must be 1 or more")
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return ReadResult(shown, "", start, 0, 0, missing=True)
    except OSError as exc:
        raise Forbidden(f"cannot open {shown}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise Forbidden(f"{shown} is not a regular file")
        data = fh.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise InvalidRequest(f"{shown} is larger than {MAX_READ_BYTES // (1024 * 1024)} MB, too large to read")
    all_lines = split_lines(data.decode("utf-8", errors="replace"))
    picked = all_lines[start - 1 : (start - 1 + lines) if lines is not None else None]
    return ReadResult(shown, "\n".join(picked), start, len(picked), len(all_lines))
