"""Crash-safe file writes shared by every store (config, tokens, sessions).

A reader must never see half a file: data goes to a temp file in the same directory,
is fsynced, then renamed over the target, and the directory is fsynced so the rename
itself survives a power cut.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "ensure_private_dir"]


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 if missing; return it."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def atomic_write(path: Path, data: bytes | str, *, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` atomically; the file ends up with ``mode``."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        view = memoryview(raw)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
