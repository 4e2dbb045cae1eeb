"""Cross-process file locks that survive their owner's death.

A lock on ``X`` is the file ``X.lock``, created with ``O_CREAT|O_EXCL`` and holding the owner's
pid, process start time and host. A waiter that finds the lock held checks whether the owner
is still the same live process (a recycled pid has another start time); if not, or if the file
is older than ``stale_after`` and unreadable, the lock is broken. Breaking happens under a
kernel ``flock`` on ``X.lock.guard`` so two waiters cannot both break and then steal each
other's fresh lock. In-process callers queue FIFO per path before touching the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from homarus.errors import Unavailable

__all__ = ["LockInfo", "LockTimeout", "fd_lock", "file_lock", "process_start_time", "read_lock_info"]

_HOST = socket.gethostname()


class LockTimeout(Unavailable):
    """The lock stayed held by a live process for longer than the caller would wait."""


@dataclass(frozen=True, slots=True)
class LockInfo:
    pid: int
    starttime: int | None
    host: str
    created_at: float

    def owner_alive(self) -> bool:
        if self.host != _HOST:
            return True  # cannot judge another machine's process: treat as alive until stale
        if self.pid == os.getpid():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        current = process_start_time(self.pid)
        return self.starttime is None or current is None or current == self.starttime


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (Linux), None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ')'
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


_MY_START = process_start_time(os.getpid())


def read_lock_info(lock_path: Path) -> LockInfo | None:
    try:
        raw = json.loads(lock_path.read_text(encoding="utf-8"))
        return LockInfo(int(raw["pid"]), raw.get("starttime"), str(raw.get("host", _HOST)), float(raw["createdAt"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class _Gate:
    """FIFO admission for threads of this process wanting the same path."""

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.busy = False
        self.waiters: deque[threading.Event] = deque()
        self.users = 0


_gates: dict[str, _Gate] = {}
_gates_mutex = threading.Lock()


@contextlib.contextmanager
def _in_process(key: str, timeout: float) -> Iterator[None]:
    with _gates_mutex:
        gate = _gates.setdefault(key, _Gate())
        gate.users += 1
    try:
        with gate.mutex:
            if gate.busy:
                ticket = threading.Event()
                gate.waiters.append(ticket)
            else:
                gate.busy = True
                ticket = None
        if ticket is not None and not ticket.wait(timeout):
            with gate.mutex:
                if ticket in gate.waiters:
                    gate.waiters.remove(ticket)
                    raise LockTimeout(f"timed out after {timeout:.1f}s waiting for {key}", retryable=True)
            # handed over just as we timed out: we own it now
        try:
            yield
        finally:
            with gate.mutex:
                if gate.waiters:
                    gate.waiters.popleft().set()  # hand over directly: FIFO, no barging
                else:
                    gate.busy = False
    finally:
        with _gates_mutex:
            gate.users -= 1
            if gate.users == 0 and not gate.busy:
                _gates.pop(key, None)


@contextlib.contextmanager
def file_lock(path: Path, *, timeout: float = 10.0, stale_after: float = 30.0) -> Iterator[None]:
    """Hold the cross-process lock for ``path`` (its ``.lock`` file) for the duration."""
    lock_path = path.with_name(path.name + ".lock")
    deadline = time.monotonic() + timeout
    with _in_process(str(lock_path), timeout):
        _acquire(lock_path, deadline, stale_after)
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock_path)


@contextlib.contextmanager
def fd_lock(fd: int, key: str, *, timeout: float = 10.0) -> Iterator[None]:
    """Hold the kernel's exclusive ``flock`` on the open file ``fd`` (threads of this process
    queue FIFO per ``key`` first).

    For files that are never replaced, only appended to or cut in place: the lock is on the file
    itself, so it costs one system call instead of a lock file's seven, and the kernel drops it
    when its holder dies (nothing stale to detect or break)."""
    deadline = time.monotonic() + timeout
    with _in_process(key, timeout):
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"timed out after {timeout:.1f}s waiting for {key}", retryable=True) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _acquire(lock_path: Path, deadline: float, stale_after: float) -> None:
    body = json.dumps({"pid": os.getpid(), "starttime": _MY_START, "host": _HOST, "createdAt": time.time()}).encode()
    # The lock appears with its content in one step (write a private temp file, then link(2) it to
    # the lock name, which fails if the name exists): a writer killed mid-way never leaves an
    # empty lock that waiters would have to treat as "maybe still being written".
    tmp = lock_path.with_name(f"{lock_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    try:
        os.write(fd, body)
    finally:
        os.close(fd)
    try:
        _link_loop(tmp, lock_path, deadline, stale_after)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _link_loop(tmp: Path, lock_path: Path, deadline: float, stale_after: float) -> None:
    delay = 0.001
    while True:
        try:
            os.link(tmp, lock_path)
        except FileExistsError:
            if _break_if_stale(lock_path, stale_after):
                continue
            if time.monotonic() >= deadline:
                holder = read_lock_info(lock_path)
                who = f" (held by pid {holder.pid})" if holder else ""
                raise LockTimeout(f"timed out waiting for lock {lock_path}{who}", retryable=True) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
            continue
        return


def _break_if_stale(lock_path: Path, stale_after: float) -> bool:
    """Remove the lock if its owner is gone; True when removed (or already gone)."""
    info = read_lock_info(lock_path)
    # another host's owner cannot be checked: it counts as alive only until the lock is stale
    if info is not None and info.owner_alive() and (info.host == _HOST or time.time() - info.created_at < stale_after):
        return False
    if info is None:
        try:
            age = time.time() - lock_path.stat().st_mtime
        except FileNotFoundError:
            return True
        if age < stale_after:
            return False  # probably being written right now
    guard_path = lock_path.with_name(lock_path.name + ".guard")
    fd = os.open(guard_path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # re-check under the guard: someone may have broken it and taken a fresh lock already
        again = read_lock_info(lock_path)
        if again != info:
            return again is None and not lock_path.exists()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock_path)
        if info is not None and not info.owner_alive():
            # the dead owner may also have left the temp file it was linking from
            for leftover in lock_path.parent.glob(f"{lock_path.name}.{info.pid}.*.tmp"):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()
        return True
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
