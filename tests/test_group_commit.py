"""GroupCommitter: writes waiting together share one transaction (one fsync), each is undone
alone when it fails, a failed commit stores nothing of its batch, and nobody hears "done" before
the commit that holds their write."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from homarus.fs import open_durable_sqlite
from homarus.group_commit import GroupCommitter


@pytest.fixture
def committer(tmp_path: Path) -> Any:
    db = open_durable_sqlite(tmp_path / "t.sqlite")
    db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
    writer = GroupCommitter(db, "t")
    yield writer
    writer.close()


def _stored(tmp_path: Path) -> dict[str, int]:
    db = sqlite3.connect(tmp_path / "t.sqlite")
    try:
        return dict(db.execute("SELECT k, v FROM t"))
    finally:
        db.close()


def _hold(
    committer: GroupCommitter, key: str = "first", value: int = 0
) -> tuple[threading.Event, threading.Event, threading.Thread]:
    """Keep the writer busy with one operation (it stores ``key``) until released, so the next
    ones gather behind it."""
    inside, release = threading.Event(), threading.Event()

    def op(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO t VALUES (?, ?)", (key, value))
        inside.set()
        release.wait(10)

    thread = threading.Thread(target=committer.run, args=(op,))
    thread.start()
    assert inside.wait(10)
    return inside, release, thread


def _submit(committer: GroupCommitter, key: str, value: int, out: dict[str, Any]) -> threading.Thread:
    def go() -> None:
        try:
            out[key] = committer.run(lambda db: db.execute("INSERT INTO t VALUES (?, ?)", (key, value)).rowcount)
        except Exception as exc:
            out[key] = exc

    thread = threading.Thread(target=go)
    thread.start()
    return thread


def _wait_queued(committer: GroupCommitter, n: int) -> None:
    for _ in range(1000):
        if committer._queue.qsize() >= n:
            return
        threading.Event().wait(0.005)
    raise AssertionError("the writes did not queue")


def test_writes_waiting_together_share_one_commit(committer: GroupCommitter, tmp_path: Path) -> None:
    _, release, first = _hold(committer)
    out: dict[str, Any] = {}
    threads = [_submit(committer, f"k{i}", i, out) for i in range(5)]
    _wait_queued(committer, 5)
    assert out == {}  # nobody is told before the commit that holds their write
    release.set()
    for t in [first, *threads]:
        t.join(10)
    assert out == {f"k{i}": 1 for i in range(5)}
    assert committer.commits == 2  # the held one, then the five together
    assert _stored(tmp_path) == {"first": 0, **{f"k{i}": i for i in range(5)}}


def test_a_failing_write_is_undone_alone(committer: GroupCommitter, tmp_path: Path) -> None:
    _, release, first = _hold(committer)
    out: dict[str, Any] = {}
    threads = [_submit(committer, "a", 1, out), _submit(committer, "first", 2, out), _submit(committer, "b", 3, out)]
    _wait_queued(committer, 3)
    release.set()
    for t in [first, *threads]:
        t.join(10)
    assert isinstance(out["first"], sqlite3.IntegrityError)  # a duplicate key: that write only
    assert out["a"] == 1 and out["b"] == 1
    assert _stored(tmp_path) == {"first": 0, "a": 1, "b": 3}


def test_a_failing_commit_stores_nothing_of_its_batch_and_tells_everyone(tmp_path: Path) -> None:
    db = open_durable_sqlite(tmp_path / "t.sqlite")
    db.executescript(
        "PRAGMA foreign_keys=ON;"
        "CREATE TABLE p (id INTEGER PRIMARY KEY);"
        "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL"
        " REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED);"
    )
    committer = GroupCommitter(db, "t")
    try:
        db_ok = committer.run(lambda d: d.execute("INSERT INTO p VALUES (1)").rowcount)
        assert db_ok == 1
        _, release, first = _hold(committer, "held", 1)
        out: dict[str, Any] = {}
        threads = [_submit(committer, "good", 1, out), _submit(committer, "dangling", 99, out)]
        _wait_queued(committer, 2)
        release.set()
        for t in [first, *threads]:
            t.join(10)
        # the dangling reference is only found at COMMIT: the whole batch is refused
        assert isinstance(out["good"], sqlite3.IntegrityError) and isinstance(out["dangling"], sqlite3.IntegrityError)
        assert _stored(tmp_path) == {"held": 1}
        assert committer.run(lambda d: d.execute("INSERT INTO t VALUES ('after', 1)").rowcount) == 1
    finally:
        committer.close()


def test_a_write_from_inside_a_write_runs_in_the_same_transaction(committer: GroupCommitter, tmp_path: Path) -> None:
    def outer(db: sqlite3.Connection) -> int:
        db.execute("INSERT INTO t VALUES ('outer', 1)")
        return committer.run(lambda d: d.execute("INSERT INTO t VALUES ('inner', 2)").rowcount)

    assert committer.run(outer) == 1
    assert committer.commits == 1
    assert _stored(tmp_path) == {"outer": 1, "inner": 2}


def test_close_commits_what_is_queued_then_refuses(committer: GroupCommitter, tmp_path: Path) -> None:
    _, release, first = _hold(committer)
    out: dict[str, Any] = {}
    late = _submit(committer, "late", 7, out)
    _wait_queued(committer, 1)
    closer = threading.Thread(target=committer.close)
    closer.start()
    release.set()
    for t in (first, late, closer):
        t.join(10)
    assert out == {"late": 1}
    assert _stored(tmp_path) == {"first": 0, "late": 7}
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        committer.run(lambda db: None)


def _level(committer: GroupCommitter) -> int:
    return int(committer.run(lambda db: db.execute("PRAGMA synchronous").fetchone()[0]))


def test_a_batch_of_unsynced_writes_commits_without_sync_and_one_synced_write_syncs_the_batch(
    committer: GroupCommitter, tmp_path: Path
) -> None:
    assert _level(committer) == 2  # FULL, as opened
    committer.run(lambda db: db.execute("INSERT INTO t VALUES ('a', 1)"), synced=False)
    assert committer.unsynced_commits == 1
    assert _level(committer) == 2  # restored after the unsynced commit
    _, release, thread = _hold(committer)
    futures = [
        committer.submit(lambda db: db.execute("INSERT INTO t VALUES ('b', 2)"), synced=False),
        committer.submit(lambda db: db.execute("INSERT INTO t VALUES ('c', 3)")),
    ]
    release.set()
    thread.join()
    for f in futures:
        f.result(10)
    assert committer.unsynced_commits == 1  # the batch with a synced write was synced whole
    assert _stored(tmp_path) == {"a": 1, "first": 0, "b": 2, "c": 3}


def test_an_unsynced_write_survives_a_kill_of_the_process(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    code = (
        "import os, signal, sys\n"
        "from homarus.fs import open_durable_sqlite\n"
        "from homarus.group_commit import GroupCommitter\n"
        "from pathlib import Path\n"
        "db = open_durable_sqlite(Path(sys.argv[1])); db.execute('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)')\n"
        "GroupCommitter(db, 't').run(lambda c: c.execute(\"INSERT INTO t VALUES ('kept', 7)\"), synced=False)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.sqlite")], timeout=60, check=False)
    assert done.returncode == -signal.SIGKILL
    assert _stored(tmp_path) == {"kept": 7}
