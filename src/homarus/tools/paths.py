"""Workspace-bounded paths for the file tools (`read`, `write`, `edit`, `apply_patch`).

Two steps, so a check cannot be raced into a different file:

1. :func:`resolve` turns the model's path into the *real* path of the target, relative to the
   real workspace root: input clean-up (NUL, control characters, length, Unicode spaces, ``@``,
   ``~``, ``file://``, drive letters, backslashes), the lexical check (``..``, absolute paths),
   then every symlink followed by hand (at most 40 hops, so a loop is an error, not a hang) and
   the real path checked to still be inside the workspace.
2. The operations then walk that real path from an open root directory, one component at a
   time, with ``O_NOFOLLOW`` (:func:`open_parent`): a component swapped for a symlink after the
   check makes the open fail instead of following it. The final file is opened with
   ``O_NOFOLLOW`` and its identity (dev, inode, type, link count) re-checked on the descriptor;
   writes go to a temp file in the pinned directory and are renamed into place
   (:func:`homarus.fs.atomic_write_at`), which replaces a directory entry and never writes
   through a symlink.

Refused: paths that leave the workspace (``PathEscape``), symlinks whose target is outside it,
symlink loops, hard-linked files (``st_nlink > 1``: the other name may be outside) and paths
that change while in use (``PathAliasEscape``), and anything that is not a regular file
(directories, FIFOs, sockets, devices). The messages keep the upstream wording ("Path escapes
sandbox root", "Symlink escapes sandbox root / path alias escape blocked").
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import unicodedata
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from homarus.errors import InvalidRequest
from homarus.fs import atomic_write_at

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_SYMLINK_HOPS",
    "PathAliasEscape",
    "PathError",
    "PathEscape",
    "WorkspacePath",
    "ensure_writable",
    "in_mount",
    "open_file",
    "open_parent",
    "read_bytes",
    "remove_file",
    "resolve",
    "write_bytes",
]

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
MAX_SYMLINK_HOPS = 40
#: mode of files the tools create (an existing file keeps its own permission bits)
NEW_FILE_MODE = 0o644

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC
_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:(?:[\\/]|$)")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_ENCODED = re.compile(r"%(?:2e|2f|5c|00)", re.IGNORECASE)
_ENCODED_SEP = re.compile(r"%(?:2f|5c|00)", re.IGNORECASE)


class PathError(InvalidRequest):
    """A path the file tools refuse: malformed, missing, not a regular file."""


class PathEscape(PathError):
    """The path leaves the workspace."""


class PathAliasEscape(PathEscape):
    """A symlink or hard link reaches outside the workspace, or the path changed while in use."""


@dataclass(frozen=True, slots=True)
class WorkspacePath:
    """A checked target: its real location and how to name it to the model."""

    #: real path of the workspace root
    root: str
    #: components of the target's real path below ``root``; ``()`` is the root itself
    parts: tuple[str, ...]
    #: the requested path relative to the workspace, for messages
    shown: str
    exists: bool
    #: reached through a symlink whose target does not exist (never written through)
    dangling: bool = False

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else ""

    @property
    def real(self) -> str:
        return os.path.join(self.root, *self.parts)

    @property
    def real_shown(self) -> str:
        return "/".join(self.parts) or "."


def _show(raw: str) -> str:
    text = raw if raw.isprintable() else repr(raw)
    return text if len(text) <= 200 else text[:200] + "…"


def _escape(root: str, raw: str, why: str = "") -> PathEscape:
    reason = f" ({why})" if why else ""
    return PathEscape(
        f"Path escapes sandbox root ({root}): {_show(raw)}{reason}. Use a path inside the workspace instead."
    )


def _alias(reason: str, raw: str) -> PathAliasEscape:
    return PathAliasEscape(f"Symlink escapes sandbox root / path alias escape blocked: {reason} ({_show(raw)})")


def _inside(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def _workspace_root(workspace: Path) -> tuple[str, str]:
    given = os.path.normpath(os.path.abspath(workspace))
    real = os.path.realpath(given)
    if not os.path.isdir(real):
        raise PathError(f"the workspace {given} does not exist or is not a directory")
    return given, real


def _clean(raw: object, root: str) -> str:
    """The model's path in canonical text form; refuses what no file name should contain."""
    if not isinstance(raw, str):
        raise PathError("path must be a string")
    if not raw:
        raise PathError("path must not be empty")
    if "\x00" in raw:
        raise PathError(f"path contains a NUL byte: {_show(raw)}")
    if _CONTROL.search(raw):
        raise PathError(f"path contains control characters: {_show(raw)}")
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError:
        raise PathError(f"path is not valid Unicode: {_show(raw)}") from None
    if size > MAX_PATH_BYTES:
        raise PathError(f"path is too long ({size} bytes; the limit is {MAX_PATH_BYTES})")
    text = _UNICODE_SPACES.sub(" ", raw)
    if text.startswith("@"):  # "@file" mentions
        text = text[1:]
    if text[:5].lower() == "file:":
        return _file_url(text, root, raw)
    if _URL.match(text) or text[:5].lower() == "data:":
        raise _escape(root, raw, "a URL is not a workspace path")
    if _DRIVE.match(text) or text.startswith("\\\\"):
        raise _escape(root, raw, "Windows drive and UNC paths are outside the workspace")
    if _ENCODED.search(text):
        raise _escape(root, raw, "percent-encoded dots or separators are not allowed")
    text = text.replace("\\", "/")
    if text.startswith("~"):
        text = os.path.expanduser(text)
    return text


def _file_url(text: str, root: str, raw: str) -> str:
    url = urlsplit(text)
    if url.netloc not in ("", "localhost"):
        raise _escape(root, raw, "a file URL with a host")
    if _ENCODED_SEP.search(url.path) or url.query or url.fragment:
        raise _escape(root, raw, "file URLs with encoded separators, queries or fragments are refused")
    path = unquote(url.path)
    if not path.startswith("/") or _CONTROL.search(path):
        raise _escape(root, raw, "not an absolute file URL")
    return path


def _lexical(text: str, raw: str, bases: tuple[str, str]) -> list[str]:
    """Components below the workspace after ``..`` folding; refuses what leaves it."""
    forms = [text]
    folded = unicodedata.normalize("NFKC", text)
    if folded != text:  # fullwidth dots and slashes fold to ".." and "/"
        forms.append(folded)
    parts: list[str] | None = None
    for form in forms:
        norm = os.path.normpath(form)
        found: list[str] | None = None
        if os.path.isabs(norm):
            for base in bases:
                if norm == base:
                    found = []
                elif norm.startswith(base.rstrip("/") + "/"):
                    found = norm[len(base.rstrip("/")) + 1 :].split("/")
                if found is not None:
                    break
        elif norm == ".":
            found = []
        elif norm != ".." and not norm.startswith("../"):
            found = norm.split("/")
        if found is None:
            raise _escape(bases[1], raw)
        if parts is None:
            parts = found
    assert parts is not None
    for part in parts:
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise PathError(f"a path component is too long (more than {MAX_NAME_BYTES} bytes): {_show(raw)}")
    return parts


def _follow(root: str, parts: list[str], raw: str) -> tuple[str, bool, bool, bool]:
    """Follow symlinks by hand: (real path, exists, dangling, followed a symlink)."""
    cur = root
    pending: deque[tuple[str, bool]] = deque((p, False) for p in parts)
    hops = 0
    followed = False
    while pending:
        name, from_link = pending.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            cur = os.path.dirname(cur)
            continue
        nxt = os.path.join(cur, name)
        try:
            st = os.lstat(nxt)
        except FileNotFoundError:
            rest = [n for n, _ in pending]
            return os.path.normpath(os.path.join(nxt, *rest)), False, from_link, followed
        except OSError as exc:
            if followed and not _inside(nxt, root):
                raise _alias("a symlink leads outside the workspace", raw) from None
            if exc.errno == errno.ENOTDIR:
                raise PathError(f"a parent of {_show(raw)} is not a directory") from None
            raise PathError(f"cannot access {_show(raw)}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise _alias("symlink loop (too many levels of symbolic links)", raw)
            target = os.readlink(nxt)
            followed = True
            if target.startswith("/"):
                cur = "/"
            pending.extendleft((p, True) for p in reversed(target.split("/")))
            continue
        if not stat.S_ISDIR(st.st_mode) and any(n not in ("", ".") for n, _ in pending):
            if followed and not _inside(nxt, root):
                raise _alias("a symlink leads outside the workspace", raw)
            raise PathError(f"a parent of {_show(raw)} is not a directory")
        cur = nxt
    return cur, True, False, followed


def resolve(workspace: Path, raw: str) -> WorkspacePath:
    """Check ``raw`` (relative to ``workspace``, or absolute inside it) and find its real target."""
    given, root = _workspace_root(workspace)
    text = _clean(raw, root)
    parts = _lexical(text, raw, (given, root))
    real, exists, dangling, followed = _follow(root, parts, raw)
    if not _inside(real, root):
        if followed:
            raise _alias("a symlink points outside the workspace", raw)
        raise _escape(root, raw)
    rel = () if real == root else tuple(real[len(root.rstrip("/")) + 1 :].split("/"))
    return WorkspacePath(root, rel, "/".join(parts) or ".", exists, dangling)


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((label for test, label in kinds if test(mode)), "not a regular file")


def _check_regular(st: os.stat_result, wp: WorkspacePath) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise _alias("the file was replaced by a symlink while in use", wp.shown)
    if stat.S_ISDIR(st.st_mode):
        raise PathError(f"{wp.shown} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise PathError(
            f"{wp.shown} is {_kind(st.st_mode)}; only regular files can be read or written "
            "(devices, FIFOs and sockets are refused)"
        )
    if st.st_nlink > 1:
        raise _alias(
            f"the file is a hard link ({st.st_nlink} names) and may alias a file outside the workspace", wp.shown
        )


def _open_failure(exc: OSError, dir_fd: int, name: str, wp: WorkspacePath) -> PathError:
    st = _lstat_at(dir_fd, name)
    if exc.errno == errno.ELOOP or (st is not None and stat.S_ISLNK(st.st_mode)):
        return _alias("a path component was replaced by a symlink while in use", wp.shown)
    if exc.errno == errno.ENOTDIR:
        return PathError(f"a parent of {wp.shown} is not a directory")
    if exc.errno == errno.ENXIO:
        return PathError(f"{wp.shown} is not a regular file")
    return PathError(f"cannot open {wp.shown}: {exc.strerror}")


def _adopt(dir_fd: int, name: str, root: str) -> None:
    """Give an entry the gateway just created to the workspace's owner.

    Only matters for a gateway running as root over a workspace owned by someone else — a
    sandbox's ``/workspace`` belongs to the sandbox user — so files the file tools write stay
    writable by the commands that run there.
    """
    if os.geteuid() != 0:
        return
    st = os.stat(root)
    if st.st_uid != 0:
        os.chown(name, st.st_uid, st.st_gid, dir_fd=dir_fd, follow_symlinks=False)


def _open_dir_at(dir_fd: int, name: str, wp: WorkspacePath, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise PathError(f"File not found: {wp.shown}") from None
    except OSError as exc:
        raise _open_failure(exc, dir_fd, name, wp) from None
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=dir_fd)  # the umask applies
        _adopt(dir_fd, name, wp.root)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _open_failure(exc, dir_fd, name, wp) from None


@contextmanager
def open_parent(wp: WorkspacePath, *, create: bool = False) -> Iterator[int]:
    """The target's directory, reached from the root without following any symlink."""
    if not wp.parts:
        raise PathError(f"{wp.shown} is the workspace directory, not a file")
    fd = os.open(wp.root, os.O_RDONLY | os.O_DIRECTORY | _O_CLOEXEC)
    try:
        for name in wp.parts[:-1]:
            nxt = _open_dir_at(fd, name, wp, create)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


@contextmanager
def open_file(wp: WorkspacePath) -> Iterator[tuple[int, os.stat_result]]:
    """An open descriptor of the regular file ``wp`` and its ``fstat``, identity re-checked."""
    if not wp.exists:
        raise PathError(f"File not found: {wp.shown}")
    with open_parent(wp) as dir_fd:
        before = _lstat_at(dir_fd, wp.name)
        if before is None:
            raise PathError(f"File not found: {wp.shown}")
        _check_regular(before, wp)  # before opening: opening a device or FIFO can have effects
        try:
            fd = os.open(wp.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            raise _open_failure(exc, dir_fd, wp.name, wp) from None
        try:
            st = os.fstat(fd)
            _check_regular(st, wp)
            if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
                raise _alias("the file was replaced while in use", wp.shown)
            yield fd, st
        finally:
            os.close(fd)


def read_bytes(wp: WorkspacePath, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """The whole file, refused when larger than ``max_bytes``."""
    with open_file(wp) as (fd, st):
        if st.st_size > max_bytes:
            raise PathError(f"{wp.shown} is too large ({st.st_size:,} bytes; the limit is {max_bytes:,})")
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > max_bytes:
                raise PathError(f"{wp.shown} grew past {max_bytes:,} bytes while being read")
            chunks.append(chunk)
        return b"".join(chunks), st


def ensure_writable(wp: WorkspacePath) -> None:
    """Refuse, before anything is written, targets no write may go to (checked again on writing)."""
    if wp.dangling:
        raise _alias("the path is a dangling symlink; refusing to write through it", wp.shown)
    if not wp.parts:
        raise PathError(f"{wp.shown} is the workspace directory, not a file")


def write_bytes(wp: WorkspacePath, data: bytes, *, mode: int | None = None) -> bool:
    """Atomically replace (or create, with parent directories) the file; True if it was created.

    An existing file keeps its permission bits unless ``mode`` is given.
    """
    ensure_writable(wp)
    with open_parent(wp, create=True) as dir_fd:
        st = _lstat_at(dir_fd, wp.name)
        if st is not None:
            _check_regular(st, wp)
        keep = stat.S_IMODE(st.st_mode) & 0o777 if st is not None else NEW_FILE_MODE
        atomic_write_at(dir_fd, wp.name, data, mode=keep if mode is None else mode)
        _adopt(dir_fd, wp.name, wp.root)
        return st is None


def remove_file(wp: WorkspacePath) -> None:
    """Unlink the regular file ``wp`` (never a directory, link target or special file)."""
    with open_parent(wp) as dir_fd:
        st = _lstat_at(dir_fd, wp.name)
        if st is None:
            raise PathError(f"File not found: {wp.shown}")
        _check_regular(st, wp)
        os.unlink(wp.name, dir_fd=dir_fd)


def in_mount(raw: str, mount: str | None) -> str:
    """``raw`` relative to the workspace when it names a path under ``mount`` (the sandbox's
    ``/workspace``, where the model sees its files); otherwise ``raw`` unchanged."""
    if mount and isinstance(raw, str):
        text = raw.strip()
        if text == mount or text.startswith(mount + "/"):
            return text[len(mount) :].lstrip("/") or "."
    return raw
