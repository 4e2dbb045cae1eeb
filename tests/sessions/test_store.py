"""Tests for SessionStore: whole-file atomic rewrites under the lock, corruption, maintenance."""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from homarus.sessions import store as store_mod
from homarus.sessions.entry import SessionEntry
from homarus.sessions.store import Entries, Maintenance, SessionStore, StoreCorrupt

DAY_MS = 24 * 3600 * 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


def _entry(session_id: str, updated_at: int | None = None, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session_id, "updatedAt": _now_ms() if updated_at is None else updated_at, **extra}


def _put(key: str, value: dict[str, Any]) -> Any:
    def change(entries: Entries) -> None:
        entries[key] = value

    return change


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "agents" / "main" / "sessions" / "sessions.json"


# -- reading ------------------------------------------------------------------------------------


def test_missing_file_is_an_empty_store(path: Path) -> None:
    store = SessionStore(path)
    assert store.read() == {}
    assert store.entries() == {}
    assert store.get("agent:main:main") is None
    assert not path.exists()
    assert not path.parent.exists()  # reading creates nothing


def test_update_creates_private_dir_and_file(path: Path) -> None:
    store = SessionStore(path)
    store.update(_put("agent:main:main", _entry("s1", 1000)))
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {"agent:main:main": {"sessionId": "s1", "updatedAt": 1000}}
    assert not (path.parent / "sessions.json.lock").exists()
    assert [p.name for p in path.parent.iterdir()] == ["sessions.json"]  # no temp or lock files left


def test_get_and_entries_parse_entries(path: Path) -> None:
    store = SessionStore(path)
    store.update(_put("agent:main:main", _entry("s1", 1000, label="hello", futureField={"x": 1})))
    entry = store.get("agent:main:main")
    assert isinstance(entry, SessionEntry)
    assert entry.session_id == "s1"
    assert entry.updated_at == 1000
    assert entry.label == "hello"
    assert entry.to_json() == {"sessionId": "s1", "updatedAt": 1000, "label": "hello", "futureField": {"x": 1}}
    assert list(store.entries()) == ["agent:main:main"]


def test_update_returns_the_change_result(path: Path) -> None:
    store = SessionStore(path)

    def change(entries: Entries) -> int:
        entries["k"] = _entry("s")
        return 42

    assert store.update(change) == 42


def test_update_without_change_does_not_rewrite(path: Path) -> None:
    store = SessionStore(path)
    store.update(_put("k", _entry("s", 1000)))
    path.write_text(path.read_text())  # same bytes, known inode
    inode = path.stat().st_ino
    assert store.update(lambda entries: len(entries)) == 1
    assert path.stat().st_ino == inode  # a rewrite would rename a new file over it


def test_invalid_entry_is_skipped_by_entries_and_rejected_by_get(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"good": _entry("s1", 1), "bad": {"updatedAt": 1}}))
    store = SessionStore(path)
    with caplog.at_level(logging.WARNING, logger="homarus.sessions"):
        assert list(store.entries()) == ["good"]
    assert "skipping invalid session entry bad" in caplog.text
    with pytest.raises(StoreCorrupt, match="session entry 'bad' is invalid"):
        store.get("bad")


# -- corruption ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"k": {"sessionId": "s"', "is not valid JSON"),
        (b"", "is not valid JSON"),
        (b"[]", "is not an object of session entries"),
        (b'{"k": 1}', "is not an object of session entries"),
        (b'"text"', "is not an object of session entries"),
    ],
)
def test_corrupt_store_is_refused_and_never_overwritten(path: Path, content: bytes, message: str) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    store = SessionStore(path)
    with pytest.raises(StoreCorrupt, match=message):
        store.read()
    with pytest.raises(StoreCorrupt, match=message):
        store.entries()
    called = False

    def change(entries: Entries) -> None:
        nonlocal called
        called = True
        entries["k"] = _entry("s")

    with pytest.raises(StoreCorrupt):
        store.update(change)
    assert not called
    assert path.read_bytes() == content
    assert not (path.parent / "sessions.json.lock").exists()


# -- failure atomicity --------------------------------------------------------------------------


def test_exception_in_change_leaves_file_unchanged(path: Path) -> None:
    store = SessionStore(path)
    store.update(_put("k", _entry("s", 1000)))
    before = path.read_bytes()

    def change(entries: Entries) -> None:
        entries["k"]["label"] = "half-done"
        entries["other"] = _entry("t")
        raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        store.update(change)
    assert path.read_bytes() == before
    # the lock was released: the next update goes through
    store.update(_put("k2", _entry("s2", 2000)))
    assert set(store.read()) == {"k", "k2"}


def test_write_failure_keeps_old_file_and_propagates(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore(path)
    store.update(_put("k", _entry("s", 1000)))
    before = path.read_bytes()

    def no_space(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_mod, "atomic_write", no_space)
    with pytest.raises(OSError) as info:
        store.update(_put("k2", _entry("s2")))
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before
    assert not (path.parent / "sessions.json.lock").exists()


def test_os_write_failure_keeps_old_file_and_leaves_no_temp(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore(path)
    store.update(_put("k", _entry("s", 1000)))
    before = path.read_bytes()
    real_write = os.write

    def half_then_fail(fd: int, data: Any) -> int:
        # only the store's temp file (atomic_write's ".sessions.json.*.tmp"), not the lock file
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".sessions.json."):
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(OSError) as info:
        store.update(_put("k2", _entry("s2", 2000, label="x" * 200)))
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["sessions.json"]


# -- concurrency --------------------------------------------------------------------------------


def test_concurrent_updates_from_two_store_objects_lose_nothing(path: Path) -> None:
    stores = [SessionStore(path), SessionStore(path)]
    stores[0].update(_put("counter", _entry("c", 0, count=0)))
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        store = stores[n % 2]
        try:
            for i in range(50):

                def change(entries: Entries, i: int = i) -> None:
                    entries[f"t{n}:{i}"] = _entry(f"s{n}-{i}", 1)
                    entries["counter"]["count"] += 1

                store.update(change)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    data = SessionStore(path).read()
    assert data["counter"]["count"] == 400
    assert len(data) == 401
    assert {f"t{n}:{i}" for n in range(8) for i in range(50)} <= set(data)


def test_update_rereads_inside_the_lock(path: Path) -> None:
    a, b = SessionStore(path), SessionStore(path)
    a.update(_put("x", _entry("sx", 1)))
    b.update(_put("y", _entry("sy", 2)))  # b must see a's write, not a stale copy
    a.update(_put("z", _entry("sz", 3)))
    assert sorted(a.read()) == ["x", "y", "z"]


# -- maintenance --------------------------------------------------------------------------------


def _seed(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries))


def test_warn_mode_keeps_stale_and_excess_entries(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    old = _now_ms() - 40 * DAY_MS
    _seed(path, {"agent:main:a": _entry("a", old), "agent:main:b": _entry("b", old), "agent:main:c": _entry("c")})
    store = SessionStore(path, maintenance=Maintenance(mode="warn", prune_after_ms=30 * DAY_MS, max_entries=1))
    with caplog.at_level(logging.WARNING, logger="homarus.sessions"):
        store.update(_put("agent:main:d", _entry("d")))
    assert sorted(store.read()) == ["agent:main:a", "agent:main:b", "agent:main:c", "agent:main:d"]
    assert "2 entries older than pruneAfter, 1 over maxEntries (mode warn: kept)" in caplog.text


def test_enforce_prunes_stale_but_keeps_main(path: Path) -> None:
    now = _now_ms()
    _seed(
        path,
        {
            "agent:main:main": _entry("m", now - 100 * DAY_MS),
            "agent:ops:main": _entry("o", now - 100 * DAY_MS),
            "agent:main:old": _entry("old", now - 31 * DAY_MS),
            "agent:main:recent": _entry("r", now - 29 * DAY_MS),
        },
    )
    store = SessionStore(path, maintenance=Maintenance(mode="enforce", prune_after_ms=30 * DAY_MS, max_entries=500))
    store.update(_put("agent:main:new", _entry("n")))
    assert sorted(store.read()) == ["agent:main:main", "agent:main:new", "agent:main:recent", "agent:ops:main"]


def test_enforce_caps_max_entries_by_oldest_updated_at(path: Path) -> None:
    now = _now_ms()
    _seed(
        path,
        {
            "agent:main:e1": _entry("1", now - 5000),
            "agent:main:main": _entry("m", now - 9000),  # oldest, but main is kept
            "agent:main:e2": _entry("2", now - 4000),
            "agent:main:e3": _entry("3", now - 3000),
            "agent:main:e4": _entry("4", now - 2000),
        },
    )
    store = SessionStore(path, maintenance=Maintenance(mode="enforce", max_entries=3))
    store.update(_put("agent:main:e5", _entry("5", now - 1000)))
    assert sorted(store.read()) == ["agent:main:e4", "agent:main:e5", "agent:main:main"]


def test_enforce_never_prunes_main_sessions_even_over_the_cap(path: Path) -> None:
    now = _now_ms()
    _seed(
        path,
        {
            "agent:main:main": _entry("m", now - 100 * DAY_MS),
            "agent:ops:main": _entry("o", now - 9000),
            "agent:main:x": _entry("x", now - 1000),
        },
    )
    store = SessionStore(path, maintenance=Maintenance(mode="enforce", prune_after_ms=30 * DAY_MS, max_entries=1))
    store.update(_put("agent:dev:main", _entry("d", now)))
    assert sorted(store.read()) == ["agent:dev:main", "agent:main:main", "agent:ops:main"]


def test_enforce_within_limits_changes_nothing(path: Path) -> None:
    store = SessionStore(path, maintenance=Maintenance(mode="enforce", max_entries=3))
    for i in range(3):
        store.update(_put(f"agent:main:k{i}", _entry(str(i))))
    assert sorted(store.read()) == ["agent:main:k0", "agent:main:k1", "agent:main:k2"]


def test_default_maintenance_is_warn_30_days_500() -> None:
    m = Maintenance()
    assert (m.mode, m.prune_after_ms, m.max_entries) == ("warn", 30 * DAY_MS, 500)
