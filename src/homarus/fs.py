"""Crash-safe files shared by every store (config, tokens, sessions, the SQLite journals).

A reader must never see half a file: data goes to a temp file in the same directory,
is fsynced, then renamed over the target, and the directory is fsynced so the rename
itself survives a power cut. Durable SQLite state (the run journal, the channel store) is opened
by :func:`open_durable_sqlite` with the same guarantees.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import tempfile
import time
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_at", "ensure_private_dir", "open_durable_sqlite"]


def open_durable_sqlite(path: Path) -> sqlite3.Connection:
    """A SQLite database for state that must survive anything once committed.

    Created 0600 first (SQLite gives its ``-wal`` and ``-shm`` files the database file's mode);
    WAL mode; ``synchronous=FULL`` (the WAL is fsynced at every commit, so what was acknowledged
    survives a power cut); autocommit (callers ``BEGIN`` their own transactions); shared with
    worker threads (callers serialize access with a lock).
    """
    ensure_private_dir(path.parent)
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA busy_timeout=10000")
    _switch_to_wal(db)
    db.execute("PRAGMA synchronous=FULL")
    return db


def _switch_to_wal(db: sqlite3.Connection, patience_s: float = 10.0) -> None:
    """``journal_mode=WAL``, waiting for others: while another connection converts a new file,
    SQLite answers "database is locked" at once instead of calling the busy handler, so several
    processes (or stores) opening one new database together must retry for themselves."""
    deadline = time.monotonic() + patience_s
    pause = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                db.close()
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


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


def atomic_write_at(dir_fd: int, name: str, data: bytes, *, mode: int = 0o600) -> None:
    """:func:`atomic_write` of the entry ``name`` of an already open directory.

    The temp file (``O_EXCL | O_NOFOLLOW``), the rename and the directory fsync all go through
    ``dir_fd``, so a path component swapped for a symlink after the caller checked it cannot
    redirect the write. ``name`` must be a single path component.
    """
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a single path component: {name!r}")
    stem = name.encode("utf-8", "surrogateescape")[:64].decode("utf-8", "ignore")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for _ in range(16):
        tmp = f".{stem}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"could not create a temp file for {name!r}")
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)
