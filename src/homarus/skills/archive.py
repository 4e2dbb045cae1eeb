"""Unpack a skill bundle (a directory, ``.zip`` or ``.tar.gz``) into a fresh staging directory.

Nothing from the bundle decides where bytes go: every member name is checked (no absolute paths,
drive letters, backslashes, ``..``, NUL or control characters; bounded depth and length) and
joined under the staging directory, which this process just created and where it never makes a
symlink. Only regular files and directories are accepted: links, devices and FIFOs refuse the
whole bundle (a link target decides where a later write lands). Archive bombs are stopped by
counting: members, bytes per file, total bytes, and total size against the compressed size, all
checked on what is actually read, not only on what headers claim. Files are written 0644 with
``O_EXCL | O_NOFOLLOW``: an execute bit in the bundle is reported (``Member.executable``), never
kept. The bundle type is taken from its first bytes, not its name.
"""

from __future__ import annotations

import os
import re
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from homarus.errors import InvalidRequest

__all__ = ["ArchiveLimits", "BundleRefused", "Member", "stage_bundle"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 16
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")
_DRIVE = re.compile(r"^[A-Za-z]:")


class BundleRefused(InvalidRequest):
    """The bundle is not installed; the message says which member and why."""


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_files: int = 500
    max_file_bytes: int = 5 * 1024 * 1024
    max_total_bytes: int = 20 * 1024 * 1024
    #: total uncompressed / compressed size; applied once the total passes ``ratio_floor_bytes``
    max_ratio: float = 100.0
    ratio_floor_bytes: int = 1024 * 1024
    max_depth: int = 12
    max_path_chars: int = 512


@dataclass(frozen=True, slots=True)
class Member:
    path: str
    size: int
    executable: bool


def _check_name(raw: str, limits: ArchiveLimits) -> list[str] | None:
    """The member's path components; None for the archive root itself. BundleRefused when unsafe."""
    shown = raw[:120]
    if len(raw) > limits.max_path_chars:
        raise BundleRefused(f"member path longer than {limits.max_path_chars} characters: {shown!r}")
    if _BAD_CHARS.search(raw):
        raise BundleRefused(f"member path with a backslash or control character: {shown!r}")
    if raw.startswith("/") or _DRIVE.match(raw):
        raise BundleRefused(f"absolute member path (zip-slip): {shown!r}")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise BundleRefused(f"member path with '..' (zip-slip): {shown!r}")
    if len(parts) > limits.max_depth:
        raise BundleRefused(f"member path deeper than {limits.max_depth} levels: {shown!r}")
    return parts or None


class _Writer:
    """Writes members under ``dest`` and keeps the counts the limits apply to."""

    def __init__(self, dest: Path, limits: ArchiveLimits, compressed: int) -> None:
        self.dest = dest
        self.limits = limits
        self.compressed = max(compressed, 1)
        self.total = 0
        self.members: list[Member] = []
        self.count = 0

    def _count(self) -> None:
        self.count += 1
        if self.count > self.limits.max_files:
            raise BundleRefused(f"more than {self.limits.max_files} files in the bundle")

    def directory(self, parts: list[str]) -> None:
        self._count()
        self.dest.joinpath(*parts).mkdir(parents=True, exist_ok=True, mode=0o755)

    def declared(self, name: str, size: int) -> None:
        if size > self.limits.max_file_bytes:
            raise BundleRefused(f"{name}: {size} bytes is over the per-file limit ({self.limits.max_file_bytes})")
        if self.total + size > self.limits.max_total_bytes:
            raise BundleRefused(f"bundle larger than {self.limits.max_total_bytes} bytes uncompressed")

    def file(self, parts: list[str], src: IO[bytes], executable: bool) -> None:
        self._count()
        name = "/".join(parts)
        target = self.dest.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _O_CLOEXEC
        try:
            fd = os.open(target, flags, 0o644)
        except FileExistsError:
            raise BundleRefused(f"{name}: appears twice in the bundle") from None
        size = 0
        with os.fdopen(fd, "wb") as out:
            while chunk := src.read(_CHUNK):
                size += len(chunk)
                self.total += len(chunk)
                if size > self.limits.max_file_bytes:
                    raise BundleRefused(f"{name}: over the per-file limit ({self.limits.max_file_bytes} bytes)")
                if self.total > self.limits.max_total_bytes:
                    raise BundleRefused(f"bundle larger than {self.limits.max_total_bytes} bytes uncompressed")
                if self.total > self.limits.ratio_floor_bytes and self.total / self.compressed > self.limits.max_ratio:
                    raise BundleRefused(
                        f"archive bomb: expands more than {self.limits.max_ratio:g}x its compressed size"
                    )
                out.write(chunk)
        self.members.append(Member(name, size, executable))


def _zip(archive: Path, w: _Writer) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleRefused(f"not a readable zip archive: {exc}") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > w.limits.max_files:
            raise BundleRefused(f"more than {w.limits.max_files} files in the bundle")
        for info in infos:
            parts = _check_name(info.filename, w.limits)
            mode = info.external_attr >> 16
            kind = stat.S_IFMT(mode)
            if info.is_dir():
                if parts:
                    w.directory(parts)
                continue
            if kind not in (0, stat.S_IFREG):
                what = "symlink" if kind == stat.S_IFLNK else "special file"
                raise BundleRefused(f"{info.filename[:120]!r}: {what} in the bundle (only regular files are accepted)")
            if parts is None:
                continue
            w.declared(info.filename, info.file_size)
            try:
                with zf.open(info) as src:
                    w.file(parts, src, bool(mode & 0o111))
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
                raise BundleRefused(f"{info.filename[:120]!r}: cannot be extracted: {exc}") from None


def _tar(archive: Path, w: _Writer) -> None:
    try:
        tf = tarfile.open(archive, mode="r:*")  # noqa: SIM115 - closed below
    except (tarfile.TarError, OSError) as exc:
        raise BundleRefused(f"not a readable tar archive: {exc}") from None
    try:
        for m in _members(tf, w.limits):
            parts = _check_name(m.name, w.limits)
            if m.isdir():
                if parts:
                    w.directory(parts)
                continue
            if not m.isreg():
                what = "symlink" if m.issym() else "hard link" if m.islnk() else "special file"
                raise BundleRefused(f"{m.name[:120]!r}: {what} in the bundle (only regular files are accepted)")
            if parts is None:
                continue
            w.declared(m.name, m.size)
            src = tf.extractfile(m)
            if src is None:
                raise BundleRefused(f"{m.name[:120]!r}: cannot be extracted")
            with src:
                w.file(parts, src, bool(m.mode & 0o111))
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BundleRefused(f"damaged tar archive: {exc}") from None
    finally:
        tf.close()


def _members(tf: tarfile.TarFile, limits: ArchiveLimits) -> Iterator[tarfile.TarInfo]:
    # streamed one header at a time: the member list is never built in full
    seen = 0
    while (m := tf.next()) is not None:
        seen += 1
        if seen > limits.max_files * 2:
            raise BundleRefused(f"more than {limits.max_files} files in the bundle")
        yield m


def _copy_dir(src: Path, w: _Writer) -> None:
    """Copy a directory bundle; symlinks and special files refuse it (they are never followed)."""
    stack: list[tuple[Path, list[str]]] = [(src, [])]
    while stack:
        here, prefix = stack.pop()
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            parts = [*prefix, e.name]
            name = "/".join(parts)
            _check_name(name, w.limits)
            st = e.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                target = os.path.realpath(e.path)
                where = "inside" if target.startswith(os.path.realpath(src) + os.sep) else "outside"
                raise BundleRefused(f"{name}: symlink pointing {where} the bundle (only regular files are accepted)")
            if stat.S_ISDIR(st.st_mode):
                w.directory(parts)
                stack.append((Path(e.path), parts))
            elif stat.S_ISREG(st.st_mode):
                w.declared(name, st.st_size)
                fd = os.open(e.path, os.O_RDONLY | os.O_NOFOLLOW | _O_CLOEXEC)
                with os.fdopen(fd, "rb") as fh:
                    w.file(parts, fh, bool(st.st_mode & 0o111))
            else:
                raise BundleRefused(f"{name}: special file (device, FIFO or socket) in the bundle")


def stage_bundle(source: Path, dest: Path, limits: ArchiveLimits | None = None) -> list[Member]:
    """Copy or extract ``source`` into the empty directory ``dest``; returns the files written."""
    limits = limits or ArchiveLimits()
    try:
        st = os.stat(source)
    except OSError as exc:
        raise BundleRefused(f"cannot read {source}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        w = _Writer(dest, limits, compressed=1 << 62)  # a directory has no compression ratio
        _copy_dir(source, w)
        return w.members
    if not stat.S_ISREG(st.st_mode):
        raise BundleRefused(f"{source} is neither a directory nor an archive file")
    with open(source, "rb") as fh:
        head = fh.read(4)
    w = _Writer(dest, limits, compressed=st.st_size)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        _zip(source, w)
    elif head.startswith(b"\x1f\x8b"):
        _tar(source, w)
    else:
        raise BundleRefused(f"{source.name}: not a directory, .zip or .tar.gz bundle")
    return w.members
