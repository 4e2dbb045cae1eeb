"""Per-session JSONL transcripts: a version-3 header line, then entries linked by id/parentId.

Appends are validated first (shape, and a tool result must answer a tool call already in the
file), then written as one ``write`` of whole lines and fsynced (or, asked so, left for the next
synced append or :meth:`Transcript.sync`: a run's own message, synced with its reply), under the
file's own ``flock``
(other processes append too: a CLI, a second gateway on the same state; a transcript is never
replaced, so the lock can sit on the file itself, and a holder that dies drops it). A
crash can leave at most a torn last line; readers ignore it and the next append moves it to a
``.torn.<ts>`` sidecar before writing, so no acknowledged line is ever lost or glued to garbage.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from homarus.errors import InvalidRequest, RuntimeFailure
from homarus.fs import ensure_private_dir
from homarus.locking import fd_lock
from homarus.sessions.transcript_rules import AppendState, iso_now, new_header, prepare, track

__all__ = ["CachedTranscript", "Transcript", "TranscriptView", "TranscriptWriteError", "iso_now", "parse_jsonl"]


class TranscriptWriteError(RuntimeFailure):
    """The disk refused the write (full, read-only...); the file is left as it was."""


@dataclass(slots=True)
class TranscriptView:
    header: dict[str, Any] | None
    entries: list[dict[str, Any]]
    #: bytes after the last newline (a write cut short by a crash), if any
    torn_tail: bytes = b""
    #: 1-based numbers of complete lines that did not parse (should never happen)
    bad_lines: list[int] = field(default_factory=list)


class CachedTranscript:
    """What every transcript handle keeps between calls, whatever stores it: the last view read
    (with how far it reached and its size in stored bytes), what readers derived from it, and the
    append state. ``_view`` is (position, bytes, view): a file's inode and size, or a table's
    entry count, then the bytes the view was parsed from."""

    def __init__(self, path: Path, lock_timeout: float) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self._state: AppendState | None = None
        self._view: tuple[int, int, TranscriptView] | None = None
        #: what readers derived from the cached view, by a key of each reader's (see :attr:`derived`)
        self._derived: dict[str, Any] = {}
        #: an append with ``synced=False`` wrote entries nothing has made durable yet (see ``sync``)
        self.unsynced = False

    @property
    def cached_bytes(self) -> int:
        """About what this handle keeps in memory, in stored bytes: those its cached view was parsed
        from (parsed, ~4x that), and a quarter more for each reader that derived something from it
        (the model history's messages take about as much memory as the file itself, measured with
        tracemalloc; a provider's wire form of them somewhat less)."""
        size = self._view[1] if self._view is not None else 0
        return size + size // 4 * len(self._derived)

    def forget_cache(self) -> None:
        """Drop the cached view and append state (the next read or append rebuilds them)."""
        self._view = None
        self._state = None
        self._derived = {}

    @property
    def derived(self) -> dict[str, Any]:
        """What readers derived from the cached view, by a key of each reader's (the model history,
        ``agents/history.py``): kept as long as that view, so a reader extends its value with the
        entries added since instead of going over the whole transcript again. Entries are never
        changed once written (transcripts are append-only); whatever replaces the view (another
        file at the path, a torn line re-read, :meth:`forget_cache`) empties it."""
        return self._derived


class Transcript(CachedTranscript):
    """One ``<sessionId>.jsonl``. Methods block on file I/O: call them from a worker thread."""

    def __init__(self, path: Path, *, lock_timeout: float = 10.0) -> None:
        super().__init__(path, lock_timeout)

    # -- reading ------------------------------------------------------------------------
    def read(self) -> TranscriptView:
        """The whole transcript. Append-only files are re-read incrementally: only new bytes are parsed."""
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                cached = self._view
                if (
                    cached is not None
                    and cached[0] == st.st_ino
                    and cached[1] <= st.st_size
                    and not cached[2].torn_tail
                ):
                    if cached[1] == st.st_size:
                        return _copy(cached[2])
                    f.seek(cached[1])
                    more = parse_jsonl(f.read(), first_line=False)
                    view = TranscriptView(
                        cached[2].header,
                        [*cached[2].entries, *more.entries],
                        more.torn_tail,
                        [*cached[2].bad_lines, *more.bad_lines],
                    )
                    size = st.st_size - len(more.torn_tail)
                else:
                    data = f.read()
                    view = parse_jsonl(data)
                    size = len(data) - len(view.torn_tail)
                    self._derived = {}  # a new reading of the file: nothing derived before may apply
        except FileNotFoundError:
            self._view = None
            self._derived = {}
            return TranscriptView(None, [])
        # cache up to the last complete line; a torn tail forces a full re-read next time
        self._view = (st.st_ino, size, view) if not view.torn_tail else None
        return _copy(view)

    def exists(self) -> bool:
        return self.path.exists()

    def stamp(self) -> tuple[int, int] | None:
        """Changes when the transcript does (None: there is none): the file's inode and size."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_size

    # -- writing ------------------------------------------------------------------------
    def create(self, session_id: str, *, cwd: str | None = None, parent_session: str | None = None) -> None:
        """Write the header line; an existing file is left alone."""
        header = new_header(session_id, cwd=cwd, parent_session=parent_session)
        ensure_private_dir(self.path.parent)
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return
        try:
            _write_all(fd, orjson.dumps(header) + b"\n")
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            raise TranscriptWriteError(f"cannot create transcript {self.path.name}: {exc.strerror}") from None
        os.close(fd)

    def append(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Validate and durably append one entry; returns it with id, parentId and timestamp set."""
        return self.append_many([entry])[0]

    def append_many(self, entries: list[dict[str, Any]], *, synced: bool = True) -> list[dict[str, Any]]:
        """Append several entries in one write (all or none). ``synced=False`` leaves out the fsync:
        the lines are in the file for every reader and survive the process dying, but a power cut
        may lose them until the next synced append or :meth:`sync` (one fsync covers the file)."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:
            raise InvalidRequest(f"transcript {self.path.name} does not exist; create it first") from None
        try:
            with fd_lock(fd, str(self.path), timeout=self.lock_timeout):
                state = self._load_state(os.fstat(fd).st_size)
                if state.size == 0:
                    raise InvalidRequest(f"transcript {self.path.name} does not exist; create it first")
                try:
                    staged = [prepare(e, state) for e in entries]
                    blob = b"".join(orjson.dumps(e) + b"\n" for e in staged)
                    if state.clean_size < state.size:  # only once the new lines are known to be valid
                        self._set_aside_torn_tail(state)
                    self._write(fd, blob, state, synced)
                except BaseException:
                    self._state = None  # staging touched the cache; rebuild it from the file next time
                    raise
                state.size += len(blob)
                state.clean_size = state.size
                self.unsynced = not synced
                return staged
        finally:
            os.close(fd)

    def sync(self) -> None:
        """Make durable what appends with ``synced=False`` wrote (nothing to do after a synced one)."""
        if not self.unsynced:
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        except OSError as exc:
            raise TranscriptWriteError(f"cannot sync transcript {self.path.name}: {exc.strerror}") from None
        finally:
            os.close(fd)
        self.unsynced = False

    def _write(self, fd: int, blob: bytes, state: AppendState, synced: bool = True) -> None:
        try:
            _write_all(fd, blob)
            if synced:
                os.fsync(fd)
        except OSError as exc:
            # leave the file exactly as it was: cut whatever part of this write landed
            with contextlib.suppress(OSError):
                os.ftruncate(fd, state.size)
            self._state = None
            raise TranscriptWriteError(f"cannot append to transcript {self.path.name}: {exc.strerror}") from None

    def _set_aside_torn_tail(self, state: AppendState) -> None:
        with open(self.path, "rb+") as f:
            f.seek(state.clean_size)
            tail = f.read()
            sidecar = self.path.with_name(f"{self.path.name}.torn.{int(time.time() * 1000)}")
            fd = os.open(sidecar, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            try:
                _write_all(fd, tail)
                os.fsync(fd)
            finally:
                os.close(fd)
            f.truncate(state.clean_size)
            f.flush()
            os.fsync(f.fileno())
        state.size = state.clean_size

    def _load_state(self, size: int) -> AppendState:
        if size == 0:
            return AppendState(0, 0)
        if self._state is not None and self._state.size == size:
            return self._state
        view = parse_jsonl(self.path.read_bytes())
        state = AppendState(size, size - len(view.torn_tail))
        for entry in view.entries:
            track(state, entry)
        self._state = state
        return state


def _copy(view: TranscriptView) -> TranscriptView:
    return TranscriptView(view.header, list(view.entries), view.torn_tail, list(view.bad_lines))


def parse_jsonl(data: bytes, *, first_line: bool = True) -> TranscriptView:
    cut = data.rfind(b"\n") + 1
    body, tail = data[:cut], data[cut:]
    header: dict[str, Any] | None = None
    entries: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad.append(number)
            continue
        if not isinstance(obj, dict):
            bad.append(number)
        elif first_line and number == 1 and obj.get("type") == "session":
            header = obj
        else:
            entries.append(obj)
    return TranscriptView(header, entries, tail, bad)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
