"""Tests for cross-process file locks: lock file contents, stale-lock breaking, timeouts, FIFO."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from homarus.errors import Unavailable
from homarus.locking import LockInfo, LockTimeout, file_lock, process_start_time, read_lock_info

HOLDER_SCRIPT = """
import sys, time
from pathlib import Path
from homarus.locking import file_lock
with file_lock(Path(sys.argv[1]), timeout=5):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _lock_path(target: Path) -> Path:
    return target.with_name(target.name + ".lock")


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    pid = proc.pid
    assert not Path(f"/proc/{pid}").exists()
    return pid


def _write_lock(target: Path, body: Mapping[str, object] | bytes, *, age: float = 0.0) -> Path:
    lock = _lock_path(target)
    lock.write_bytes(body if isinstance(body, bytes) else json.dumps(body).encode())
    if age:
        past = time.time() - age
        os.utime(lock, (past, past))
    return lock


@contextlib.contextmanager
def _holder(target: Path, hold_s: float) -> Iterator[subprocess.Popen[bytes]]:
    """Another process holding ``file_lock(target)`` for ``hold_s`` seconds."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER_SCRIPT, str(target), str(hold_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"locked\n"
            yield proc
        finally:
            proc.kill()
            proc.wait()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


# -- basic acquire/release ----------------------------------------------------------------------


def test_lock_file_holds_owner_and_is_removed_after(tmp_path: Path) -> None:
    target = tmp_path / "sessions.json"
    lock = _lock_path(target)
    before = time.time()
    with file_lock(target, timeout=1):
        assert lock.exists()
        raw = json.loads(lock.read_text())
        assert set(raw) == {"pid", "starttime", "host", "createdAt"}
        assert raw["pid"] == os.getpid()
        assert raw["starttime"] == process_start_time(os.getpid())
        assert raw["host"] == socket.gethostname()
        assert before - 1 <= raw["createdAt"] <= time.time() + 1
        assert lock.stat().st_mode & 0o777 == 0o600
        info = read_lock_info(lock)
        assert info is not None
        assert info.pid == os.getpid()
        assert info.owner_alive()
    assert not lock.exists()
    assert not target.exists()  # the lock never creates the target itself


def test_lock_is_released_when_the_body_raises(tmp_path: Path) -> None:
    target = tmp_path / "x"
    with pytest.raises(RuntimeError, match="boom"), file_lock(target, timeout=1):
        raise RuntimeError("boom")
    assert not _lock_path(target).exists()
    with file_lock(target, timeout=0.2):  # can be taken again at once
        pass


def test_lock_is_reacquirable_sequentially(tmp_path: Path) -> None:
    target = tmp_path / "x"
    for _ in range(5):
        with file_lock(target, timeout=0.2):
            assert _lock_path(target).exists()
    assert not _lock_path(target).exists()


def test_process_start_time() -> None:
    mine = process_start_time(os.getpid())
    assert isinstance(mine, int)
    assert mine > 0
    assert process_start_time(os.getpid()) == mine
    assert process_start_time(_dead_pid()) is None


def test_read_lock_info_garbage_and_missing(tmp_path: Path) -> None:
    assert read_lock_info(tmp_path / "missing.lock") is None
    bad = tmp_path / "bad.lock"
    for body in (b"", b"not json", b"[]", b'{"pid": "x", "createdAt": 1}', b'{"createdAt": 1}'):
        bad.write_bytes(body)
        assert read_lock_info(bad) is None, body


def test_lock_timeout_is_unavailable_and_retryable(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    target = tmp_path / "x"
    start = process_start_time(sleeper.pid)
    body = {"pid": sleeper.pid, "starttime": start, "host": socket.gethostname(), "createdAt": time.time()}
    _write_lock(target, body)
    with pytest.raises(LockTimeout) as info, file_lock(target, timeout=0.1):
        pass
    assert isinstance(info.value, Unavailable)
    assert info.value.retryable is True
    assert f"(held by pid {sleeper.pid})" in info.value.message


# -- stale locks --------------------------------------------------------------------------------


def test_lock_of_dead_process_is_broken(tmp_path: Path) -> None:
    target = tmp_path / "x"
    pid = _dead_pid()
    lock = _write_lock(target, {"pid": pid, "starttime": 1, "host": socket.gethostname(), "createdAt": time.time()})
    t0 = time.monotonic()
    with file_lock(target, timeout=2):
        info = read_lock_info(lock)
        assert info is not None
        assert info.pid == os.getpid()
    assert time.monotonic() - t0 < 1.0
    assert not lock.exists()


def test_lock_of_recycled_pid_is_broken(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    target = tmp_path / "x"
    real_start = process_start_time(sleeper.pid)
    assert real_start is not None
    body = {"pid": sleeper.pid, "starttime": real_start - 1, "host": socket.gethostname(), "createdAt": time.time()}
    lock = _write_lock(target, body)
    stale = read_lock_info(lock)
    assert stale is not None
    assert not stale.owner_alive()
    with file_lock(target, timeout=2):
        info = read_lock_info(lock)
        assert info is not None
        assert info.pid == os.getpid()
    assert sleeper.poll() is None  # the live process was not touched


def test_lock_of_live_process_with_matching_starttime_is_kept(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    target = tmp_path / "x"
    body = {
        "pid": sleeper.pid,
        "starttime": process_start_time(sleeper.pid),
        "host": socket.gethostname(),
        "createdAt": time.time() - 3600,  # old but alive: still held
    }
    lock = _write_lock(target, body, age=3600)
    with pytest.raises(LockTimeout, match=f"held by pid {sleeper.pid}"), file_lock(target, timeout=0.2):
        pass
    assert json.loads(lock.read_text()) == body


def test_lock_of_live_process_without_starttime_is_kept(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    target = tmp_path / "x"
    body = {"pid": sleeper.pid, "starttime": None, "host": socket.gethostname(), "createdAt": time.time()}
    _write_lock(target, body)
    with pytest.raises(LockTimeout), file_lock(target, timeout=0.1):
        pass


@pytest.mark.parametrize("garbage", [b"", b"{not json", b'{"pid": 1}'])
def test_fresh_unreadable_lock_is_not_broken(tmp_path: Path, garbage: bytes) -> None:
    target = tmp_path / "x"
    lock = _write_lock(target, garbage)
    t0 = time.monotonic()
    with (
        pytest.raises(LockTimeout, match="timed out waiting for lock") as info,
        file_lock(target, timeout=0.2, stale_after=30),
    ):
        pass
    assert time.monotonic() - t0 >= 0.2
    assert "held by pid" not in info.value.message
    assert lock.read_bytes() == garbage


@pytest.mark.parametrize("garbage", [b"", b"{not json"])
def test_old_unreadable_lock_is_broken(tmp_path: Path, garbage: bytes) -> None:
    target = tmp_path / "x"
    lock = _write_lock(target, garbage, age=60)
    with file_lock(target, timeout=1, stale_after=30):
        info = read_lock_info(lock)
        assert info is not None
        assert info.pid == os.getpid()
    assert not lock.exists()


def test_lock_from_another_host_is_kept_while_fresh(tmp_path: Path) -> None:
    target = tmp_path / "x"
    body = {"pid": _dead_pid(), "starttime": 1, "host": "some-other-host", "createdAt": time.time()}
    lock = _write_lock(target, body)
    info = read_lock_info(lock)
    assert info is not None
    assert info.owner_alive()  # cannot judge another machine's process
    with pytest.raises(LockTimeout), file_lock(target, timeout=0.1, stale_after=30):
        pass
    assert lock.exists()


def test_lock_from_another_host_is_broken_once_stale(tmp_path: Path) -> None:
    target = tmp_path / "x"
    body = {"pid": _dead_pid(), "starttime": 1, "host": "some-other-host", "createdAt": time.time() - 120}
    lock = _write_lock(target, body, age=120)
    with file_lock(target, timeout=1, stale_after=30):
        info = read_lock_info(lock)
        assert info is not None
        assert info.host == socket.gethostname()
    assert not lock.exists()


def test_lock_info_owner_alive_for_self() -> None:
    info = LockInfo(os.getpid(), None, socket.gethostname(), time.time())
    assert info.owner_alive()
    assert not LockInfo(_dead_pid(), None, socket.gethostname(), time.time()).owner_alive()


# -- another live process -----------------------------------------------------------------------


def test_lock_held_by_other_process_times_out_then_frees(tmp_path: Path) -> None:
    target = tmp_path / "x"
    with _holder(target, 30) as proc:
        t0 = time.monotonic()
        with pytest.raises(LockTimeout) as info, file_lock(target, timeout=0.25):
            pass
        waited = time.monotonic() - t0
        assert 0.25 <= waited < 2.0
        assert f"held by pid {proc.pid}" in info.value.message
        assert str(_lock_path(target)) in info.value.message
        proc.kill()
        proc.wait()
    # killed without releasing: its lock is left behind, and broken because the pid is dead
    assert _lock_path(target).exists()
    with file_lock(target, timeout=2):
        info2 = read_lock_info(_lock_path(target))
        assert info2 is not None
        assert info2.pid == os.getpid()


def test_waiter_gets_lock_when_other_process_releases(tmp_path: Path) -> None:
    target = tmp_path / "x"
    with _holder(target, 0.3) as proc:
        t0 = time.monotonic()
        with file_lock(target, timeout=5):
            waited = time.monotonic() - t0
            info = read_lock_info(_lock_path(target))
            assert info is not None
            assert info.pid == os.getpid()
        assert proc.wait(5) == 0  # it released the lock itself and exited cleanly
    assert 0.1 <= waited < 4.0


# -- in-process ---------------------------------------------------------------------------------


def test_threads_are_served_fifo(tmp_path: Path) -> None:
    target = tmp_path / "x"
    order: list[int] = []
    inside = 0
    max_inside = 0
    counter_lock = threading.Lock()
    holder_in = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with file_lock(target, timeout=5):
            holder_in.set()
            release.wait(5)

    def worker(i: int) -> None:
        nonlocal inside, max_inside
        with file_lock(target, timeout=5):
            with counter_lock:
                inside += 1
                max_inside = max(max_inside, inside)
            order.append(i)
            time.sleep(0.002)
            with counter_lock:
                inside -= 1

    first = threading.Thread(target=holder)
    first.start()
    assert holder_in.wait(5)
    threads = []
    for i in range(8):
        t = threading.Thread(target=worker, args=(i,))
        t.start()
        threads.append(t)
        time.sleep(0.02)  # make the arrival order deterministic
    release.set()
    first.join(5)
    for t in threads:
        t.join(5)
    assert order == list(range(8))
    assert max_inside == 1
    assert not _lock_path(target).exists()


def test_in_process_waiter_times_out(tmp_path: Path) -> None:
    target = tmp_path / "x"
    holder_in = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with file_lock(target, timeout=5):
            holder_in.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert holder_in.wait(5)
        t0 = time.monotonic()
        with pytest.raises(LockTimeout, match="timed out"), file_lock(target, timeout=0.1):
            pass
        assert time.monotonic() - t0 >= 0.1
    finally:
        release.set()
        t.join(5)
    # the timed-out waiter left no ticket behind: the lock is free again
    with file_lock(target, timeout=0.2):
        pass


def test_different_paths_do_not_block_each_other(tmp_path: Path) -> None:
    with file_lock(tmp_path / "a", timeout=0.2), file_lock(tmp_path / "b", timeout=0.2):
        assert _lock_path(tmp_path / "a").exists()
        assert _lock_path(tmp_path / "b").exists()
