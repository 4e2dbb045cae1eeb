"""Tests for SessionStore: one row per session in SQLite, corruption, failure atomicity,
maintenance, the import of an older ``sessions.json``, and cost independent of the store's size."""

from __future__ import annotations

import json
import logging
import sqlite3
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from homarus.sessions.entry import SessionEntry
from homarus.sessions.store import Maintenance, SessionStore, StoreCorrupt

DAY_MS = 24 * 3600 * 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


def _entry(session_id: str, updated_at: int | None = None, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session_id, "updatedAt": _now_ms() if updated_at is None else updated_at, **extra}


def _put(value: dict[str, Any]) -> Any:
    return lambda current: value


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "agents" / "main" / "sessions"


def _rows(directory: Path) -> dict[str, dict[str, Any]]:
    """What is on disk, read by a separate plain connection."""
    db = sqlite3.connect(f"file:{directory / 'sessions.sqlite'}?mode=ro", uri=True)
    try:
        return {k: json.loads(v) for k, v in db.execute("SELECT key, entry FROM sessions")}
    finally:
        db.close()


# -- reading ------------------------------------------------------------------------------------


def test_missing_store_is_empty_and_reading_creates_nothing(directory: Path) -> None:
    store = SessionStore(directory)
    assert store.read() == {}
    assert store.entries() == {}
    assert store.get("agent:main:main") is None
    assert store.count() == 0
    assert not directory.exists()


def test_update_creates_private_dir_and_database(directory: Path) -> None:
    store = SessionStore(directory)
    assert store.update("agent:main:main", _put(_entry("s1", 1000))) == {"sessionId": "s1", "updatedAt": 1000}
    assert directory.stat().st_mode & 0o777 == 0o700
    for name in ("sessions.sqlite", "sessions.sqlite-wal"):
        assert (directory / name).stat().st_mode & 0o777 == 0o600, name
    assert _rows(directory) == {"agent:main:main": {"sessionId": "s1", "updatedAt": 1000}}


def test_get_and_entries_parse_entries_and_keep_unknown_fields(directory: Path) -> None:
    store = SessionStore(directory)
    store.update("agent:main:main", _put(_entry("s1", 1000, label="hello", futureField={"x": 1})))
    entry = store.get("agent:main:main")
    assert isinstance(entry, SessionEntry)
    assert (entry.session_id, entry.updated_at, entry.label) == ("s1", 1000, "hello")
    assert entry.to_json() == {"sessionId": "s1", "updatedAt": 1000, "label": "hello", "futureField": {"x": 1}}
    assert list(store.entries()) == ["agent:main:main"]


def test_change_sees_a_copy_of_the_current_entry_and_none_removes(directory: Path) -> None:
    store = SessionStore(directory)
    store.update("k", _put(_entry("s", 1, count=1)))
    seen: list[Any] = []

    def bump(current: dict[str, Any] | None) -> dict[str, Any]:
        seen.append(current)
        assert current is not None
        current["count"] += 1  # a private copy: mutating it changes nothing stored
        return {**current}

    assert store.update("k", bump)["count"] == 2  # type: ignore[index]
    assert seen == [{"sessionId": "s", "updatedAt": 1, "count": 2}]
    assert store.update("missing", lambda current: current) is None
    assert store.update("k", lambda current: None) is None
    assert store.read() == {} and store.count() == 0


def test_an_unchanged_entry_is_not_written(directory: Path) -> None:
    store = SessionStore(directory)
    store.update("k", _put(_entry("s", 1000)))
    wal = directory / "sessions.sqlite-wal"
    size = wal.stat().st_size
    assert store.update("k", lambda current: current) == {"sessionId": "s", "updatedAt": 1000}
    assert wal.stat().st_size == size  # a write would append frames to the WAL


def test_invalid_entry_is_skipped_by_entries_and_rejected_by_get(
    directory: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory.mkdir(parents=True)
    (directory / "sessions.json").write_text(json.dumps({"good": _entry("s1", 1), "bad": {"updatedAt": 1}}))
    store = SessionStore(directory)
    with caplog.at_level(logging.WARNING, logger="homarus.sessions"):
        assert list(store.entries()) == ["good"]
    assert "skipping invalid session entry bad" in caplog.text
    with pytest.raises(StoreCorrupt, match="session entry 'bad' is invalid"):
        store.get("bad")


# -- corruption ---------------------------------------------------------------------------------


def test_a_file_that_is_not_a_database_is_refused_and_never_overwritten(directory: Path) -> None:
    directory.mkdir(parents=True)
    content = b"this is not SQLite" * 100
    (directory / "sessions.sqlite").write_bytes(content)
    store = SessionStore(directory)
    with pytest.raises(StoreCorrupt, match="not a readable session database"):
        store.read()
    called = False

    def change(current: dict[str, Any] | None) -> dict[str, Any]:
        nonlocal called
        called = True
        return _entry("s")

    with pytest.raises(StoreCorrupt):
        store.update("k", change)
    assert not called
    assert (directory / "sessions.sqlite").read_bytes() == content


def test_a_row_that_is_not_json_is_named(directory: Path) -> None:
    store = SessionStore(directory)
    store.update("k", _put(_entry("s")))
    db = sqlite3.connect(directory / "sessions.sqlite")
    db.execute("UPDATE sessions SET entry = 'not json' WHERE key = 'k'")
    db.commit()
    db.close()
    with pytest.raises(StoreCorrupt, match="session entry 'k' is not a JSON object"):
        SessionStore(directory).get("k")


# -- failure atomicity --------------------------------------------------------------------------


def test_exception_in_change_leaves_the_store_unchanged(directory: Path) -> None:
    store = SessionStore(directory)
    store.update("k", _put(_entry("s", 1000)))

    def change(current: dict[str, Any] | None) -> dict[str, Any]:
        raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        store.update("k", change)
    assert _rows(directory) == {"k": {"sessionId": "s", "updatedAt": 1000}}
    store.update("k2", _put(_entry("s2", 2000)))  # the transaction was closed: the next one goes through
    assert set(store.read()) == {"k", "k2"}


def test_a_full_disk_keeps_the_old_state_and_propagates(directory: Path) -> None:
    store = SessionStore(directory)
    store.update("k", _put(_entry("s", 1000)))
    writer = store._writing()
    pages = writer.run(lambda db: int(db.execute("PRAGMA page_count").fetchone()[0]))
    writer.run(lambda db: db.execute(f"PRAGMA max_page_count = {pages}"))  # SQLite's own "disk is full"
    with pytest.raises(sqlite3.OperationalError, match="full"):
        store.update("big", _put(_entry("s2", 2000, label="x" * 100_000)))
    assert _rows(directory) == {"k": {"sessionId": "s", "updatedAt": 1000}}
    assert store.count() == 1
    writer.run(lambda db: db.execute("PRAGMA max_page_count = 1073741823"))
    store.update("k2", _put(_entry("s2", 2000)))
    assert set(store.read()) == {"k", "k2"}


# -- concurrency --------------------------------------------------------------------------------


def test_concurrent_updates_from_two_store_objects_lose_nothing(directory: Path) -> None:
    stores = [SessionStore(directory), SessionStore(directory)]
    stores[0].update("counter", _put(_entry("c", 0, count=0)))
    errors: list[BaseException] = []

    def bump(current: dict[str, Any] | None) -> dict[str, Any]:
        assert current is not None
        return {**current, "count": current["count"] + 1}

    def worker(n: int) -> None:
        store = stores[n % 2]
        try:
            for i in range(50):
                store.update(f"t{n}:{i}", _put(_entry(f"s{n}-{i}", 1)))
                store.update("counter", bump)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    data = SessionStore(directory).read()
    assert data["counter"]["count"] == 400
    assert len(data) == 401
    assert stores[0].count() == 401


# -- maintenance --------------------------------------------------------------------------------


def _seed(directory: Path, entries: dict[str, dict[str, Any]]) -> None:
    SessionStore(directory).add_missing(entries)


def test_warn_mode_keeps_stale_and_excess_entries(directory: Path, caplog: pytest.LogCaptureFixture) -> None:
    old = _now_ms() - 40 * DAY_MS
    _seed(directory, {"agent:main:a": _entry("a", old), "agent:main:b": _entry("b", old), "agent:main:c": _entry("c")})
    store = SessionStore(directory, maintenance=Maintenance(mode="warn", prune_after_ms=30 * DAY_MS, max_entries=1))
    with caplog.at_level(logging.WARNING, logger="homarus.sessions"):
        store.update("agent:main:d", _put(_entry("d")))
    assert sorted(store.read()) == ["agent:main:a", "agent:main:b", "agent:main:c", "agent:main:d"]
    assert "2 entries older than pruneAfter, 1 over maxEntries (mode warn: kept)" in caplog.text


def test_enforce_prunes_stale_but_keeps_main(directory: Path) -> None:
    now = _now_ms()
    _seed(
        directory,
        {
            "agent:main:main": _entry("m", now - 100 * DAY_MS),
            "agent:ops:main": _entry("o", now - 100 * DAY_MS),
            "agent:main:old": _entry("old", now - 31 * DAY_MS),
            "agent:main:MAIN-ish:Main": _entry("x", now - 31 * DAY_MS),  # only ":main" exactly is kept
            "agent:main:recent": _entry("r", now - 29 * DAY_MS),
        },
    )
    store = SessionStore(directory, maintenance=Maintenance(mode="enforce", prune_after_ms=30 * DAY_MS))
    store.update("agent:main:new", _put(_entry("n")))
    assert sorted(store.read()) == ["agent:main:main", "agent:main:new", "agent:main:recent", "agent:ops:main"]
    assert store.count() == 4


def test_enforce_caps_max_entries_by_oldest_updated_at(directory: Path) -> None:
    now = _now_ms()
    _seed(
        directory,
        {
            "agent:main:e1": _entry("1", now - 5000),
            "agent:main:main": _entry("m", now - 9000),  # oldest, but main is kept
            "agent:main:e2": _entry("2", now - 4000),
            "agent:main:e3": _entry("3", now - 3000),
            "agent:main:e4": _entry("4", now - 2000),
        },
    )
    store = SessionStore(directory, maintenance=Maintenance(mode="enforce", max_entries=3))
    store.update("agent:main:e5", _put(_entry("5", now - 1000)))
    assert sorted(store.read()) == ["agent:main:e4", "agent:main:e5", "agent:main:main"]


def test_enforce_never_prunes_main_sessions_even_over_the_cap(directory: Path) -> None:
    now = _now_ms()
    _seed(
        directory,
        {
            "agent:main:main": _entry("m", now - 100 * DAY_MS),
            "agent:ops:main": _entry("o", now - 9000),
            "agent:main:x": _entry("x", now - 1000),
        },
    )
    store = SessionStore(directory, maintenance=Maintenance(mode="enforce", prune_after_ms=30 * DAY_MS, max_entries=1))
    store.update("agent:dev:main", _put(_entry("d", now)))
    assert sorted(store.read()) == ["agent:dev:main", "agent:main:main", "agent:ops:main"]


def test_enforce_within_limits_changes_nothing(directory: Path) -> None:
    store = SessionStore(directory, maintenance=Maintenance(mode="enforce", max_entries=3))
    for i in range(3):
        store.update(f"agent:main:k{i}", _put(_entry(str(i))))
    assert sorted(store.read()) == ["agent:main:k0", "agent:main:k1", "agent:main:k2"]


def test_default_maintenance_is_warn_30_days_500() -> None:
    m = Maintenance()
    assert (m.mode, m.prune_after_ms, m.max_entries) == ("warn", 30 * DAY_MS, 500)


# -- the import of an older sessions.json ------------------------------------------------------


def test_an_older_sessions_json_is_imported_once_and_renamed(directory: Path) -> None:
    directory.mkdir(parents=True)
    legacy = {"agent:main:main": _entry("m", 1000, label="home"), "agent:main:x": _entry("x", 2000, future=[1])}
    (directory / "sessions.json").write_text(json.dumps(legacy))
    store = SessionStore(directory)
    assert store.read() == legacy
    assert not (directory / "sessions.json").exists()
    kept = list(directory.glob("sessions.json.imported.*"))
    assert len(kept) == 1 and json.loads(kept[0].read_text()) == legacy  # nothing thrown away
    store.update("agent:main:x", _put(_entry("x", 3000)))
    assert SessionStore(directory).read()["agent:main:x"] == _entry("x", 3000)  # not imported again


def test_a_sessions_json_written_again_later_only_brings_newer_entries(directory: Path) -> None:
    """An older Homarus run after the import (a downgrade) wrote sessions.json again."""
    store = SessionStore(directory)
    store.update("agent:main:a", _put(_entry("a", 5000, label="db")))
    store.update("agent:main:b", _put(_entry("b", 1000, label="db")))
    store.close()
    stale_a, newer_b, new_c = _entry("a", 4000, label="old"), _entry("b", 2000, label="json"), _entry("c", 10)
    (directory / "sessions.json").write_text(
        json.dumps({"agent:main:a": stale_a, "agent:main:b": newer_b, "agent:main:c": new_c})
    )
    data = SessionStore(directory).read()
    assert (data["agent:main:a"]["label"], data["agent:main:b"]["label"], data["agent:main:c"]) == ("db", "json", new_c)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"k": {"sessionId": "s"', "is not valid JSON"),
        (b"", "is not valid JSON"),
        (b"[]", "is not an object of session entries"),
        (b'{"k": 1}', "is not an object of session entries"),
    ],
)
def test_a_broken_sessions_json_is_refused_and_kept_as_it_is(directory: Path, content: bytes, message: str) -> None:
    directory.mkdir(parents=True)
    (directory / "sessions.json").write_bytes(content)
    store = SessionStore(directory)
    with pytest.raises(StoreCorrupt, match=message):
        store.read()
    with pytest.raises(StoreCorrupt, match=message):
        store.update("k", _put(_entry("s")))
    assert (directory / "sessions.json").read_bytes() == content
    assert not (directory / "sessions.sqlite").exists()


def test_an_import_that_fails_half_way_leaves_the_json_and_no_rows(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory.mkdir(parents=True)
    legacy = {f"agent:main:k{i}": _entry(str(i), i + 1) for i in range(10)}
    (directory / "sessions.json").write_text(json.dumps(legacy))
    real = json.dumps
    calls = 0

    import homarus.sessions.store as store_mod

    def fail_on_the_sixth(entry: dict[str, Any]) -> bytes:
        nonlocal calls
        calls += 1
        if calls == 6:
            raise OSError("disk went away")
        return real(entry, sort_keys=True).encode()

    monkeypatch.setattr(store_mod, "encode_entry", fail_on_the_sixth)
    with pytest.raises(OSError, match="disk went away"):
        SessionStore(directory).read()
    monkeypatch.undo()
    assert (directory / "sessions.json").exists()
    assert _rows(directory) == {}  # all or nothing
    assert SessionStore(directory).read() == legacy


# -- cost independent of size -------------------------------------------------------------------


def _measure(store: SessionStore, keys: list[str]) -> tuple[float, float]:
    """Median CPU seconds and mean WAL bytes of an update of an existing session."""
    wal = store.path.with_name("sessions.sqlite-wal")
    db = sqlite3.connect(store.path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL starts empty: what follows is the updates'
    db.close()
    assert wal.stat().st_size == 0
    cpu = []
    for key in keys:
        before_cpu = time.process_time()
        store.update(key, _put({**_entry("x", label=key)}))
        cpu.append(time.process_time() - before_cpu)
    return statistics.median(cpu), wal.stat().st_size / len(keys)


def test_an_update_costs_the_same_at_100_000_sessions(tmp_path: Path) -> None:
    small, large = SessionStore(tmp_path / "small"), SessionStore(tmp_path / "large")
    template = _entry("x", label="a session", deliveryContext={"channel": "telegram", "to": "12345"})
    small.add_missing({f"agent:main:s{i}": {**template, "sessionId": f"s{i}"} for i in range(1_000)})
    large.add_missing({f"agent:main:s{i}": {**template, "sessionId": f"s{i}"} for i in range(100_000)})
    assert large.count() == 100_000
    keys = [f"agent:main:s{i}" for i in range(0, 1_000, 10)]
    cpu_small, wal_small = _measure(small, keys)
    cpu_large, wal_large = _measure(large, [f"agent:main:s{i * 997}" for i in range(100)])
    # the row's page and its index pages (a few B-tree levels), not the store (≈ 20 MB as JSON)
    frame = 4096 + 24
    assert wal_small <= 4 * frame and wal_large <= 12 * frame, (wal_small, wal_large)
    assert cpu_large < max(3 * cpu_small, 0.002), (cpu_small, cpu_large)
