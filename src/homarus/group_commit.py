"""A SQLite database's writer, committing together whatever is waiting (group commit).

Why not a transaction per write: each commit of a durable database is an fsync, and with many
conversations at once the worker threads that write queue up on the one connection's lock,
handing it (and the GIL) back and forth for every write. Here a write is an operation handed to
the writer, which runs on the runs' file-work lane (``homarus.io_lane``: one thread for all of
the gateway's small file work, so a write costs no hand-over between more threads). While one
commit's fsync runs, the next operations gather; the writer then runs them all inside one
``BEGIN IMMEDIATE`` and commits them with one fsync. A blocking write made on the lane itself
(a run's first trip records its start) commits what is waiting at once, itself included. No
caller learns its write is done before the commit that holds it returned, so the durability of
each write is what it was with its own transaction.

An operation may be queued unsynced (``synced=False``): a record whose loss at a power cut costs
nothing that matters, such as a session's status and token counts, rewritten by the next run. A
batch made only of such operations is committed with ``synchronous=NORMAL``: it survives a crash
of the process at once (the WAL is in the OS's cache) and a power cut from the next synced commit
on, whose fsync covers the WAL frames before it; a batch with one synced operation is synced whole.

Each operation runs in its own ``SAVEPOINT``: one that raises is undone alone and its caller gets
the exception; the others of the batch are committed. If the commit itself fails (a full disk),
nothing of the batch is stored and every caller of the batch gets that error.

No library does this for sqlite3 (the standard module has no group commit), hence this module.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from homarus.io_lane import lane_executor, on_lane

__all__ = ["Database", "GroupCommitter"]

T = TypeVar("T")
Op = Callable[[sqlite3.Connection], Any]
Item = tuple[Op, "concurrent.futures.Future[Any]", bool]

#: operations per transaction at most (a bound on how long one batch holds the write lock)
MAX_BATCH = 32


class GroupCommitter:
    """The writer of ``db`` (a connection in autocommit mode, used by nothing else from now on)."""

    def __init__(self, db: sqlite3.Connection, name: str, *, max_batch: int = MAX_BATCH) -> None:
        self._db = db
        self._name = name
        self._max_batch = max_batch
        #: the connection's own level, for synced batches (read once: nothing else sets it)
        self._level = int(db.execute("PRAGMA synchronous").fetchone()[0])
        self._queue: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self._state_lock = threading.Lock()
        self._scheduled = False  # a drain is queued on the lane and has not started
        self._in_batch = False
        self._closed = False
        #: transactions committed so far, and how many of them unsynced (for tests and benchmarks)
        self.commits = 0
        self.unsynced_commits = 0

    def run(self, op: Callable[[sqlite3.Connection], T], *, synced: bool = True) -> T:
        """Run ``op(connection)`` in the writer's next transaction; return its result once that
        transaction is committed (blocking: call it from a worker thread, never the event loop)."""
        if not on_lane():
            return self.submit(op, synced=synced).result()
        if self._in_batch:
            return op(self._db)  # an operation that writes again: it is inside a batch already
        future = self._enqueue(op, synced)
        self._drain()  # on the lane: waiting for a drain queued behind this trip would never end
        return future.result()

    def submit(self, op: Callable[[sqlite3.Connection], T], *, synced: bool = True) -> concurrent.futures.Future[T]:
        """Queue ``op`` for the writer's next transaction; the future is done once that transaction
        is committed. From the event loop: ``await asyncio.wrap_future(committer.submit(op))``, one
        hand-over to the writer and one back, no worker thread in between."""
        future = self._enqueue(op, synced)
        with self._state_lock:
            if self._scheduled:
                return future  # the queued drain takes it
            self._scheduled = True
        lane_executor().submit(self._scheduled_drain)
        return future

    def close(self) -> None:
        """Commit what is queued and close the connection (later writes are refused)."""
        with self._state_lock:
            self._closed = True
        if on_lane():
            self._close_now()
        else:
            lane_executor().submit(self._close_now).result()

    def _close_now(self) -> None:
        self._drain()
        self._db.close()

    def _enqueue(self, op: Callable[[sqlite3.Connection], T], synced: bool) -> concurrent.futures.Future[T]:
        if self._closed:
            raise sqlite3.ProgrammingError(f"{self._name}: the database is closed")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((op, future, synced))
        return future

    def _scheduled_drain(self) -> None:
        with self._state_lock:
            self._scheduled = False  # from here, a new write queues another drain: none is lost
        self._drain()

    def _drain(self) -> None:
        while True:
            batch: list[Item] = []
            while len(batch) < self._max_batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if not batch:
                return
            self._in_batch = True
            try:
                self._commit(batch)
            finally:
                self._in_batch = False

    def _commit(self, batch: list[Item]) -> None:
        if any(synced for _, _, synced in batch):
            self._commit_batch(batch, synced=True)
            return
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            self._commit_batch(batch, synced=False)
        finally:
            self._db.execute(f"PRAGMA synchronous={self._level}")

    def _commit_batch(self, batch: list[Item], *, synced: bool) -> None:
        db = self._db
        done: list[tuple[concurrent.futures.Future[Any], Any, BaseException | None]] = []
        try:
            db.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            for _, future, _ in batch:
                future.set_exception(exc)
            return
        try:
            for op, future, _ in batch:
                db.execute("SAVEPOINT op")
                try:
                    result = op(db)
                except BaseException as exc:  # this operation only: undone, its caller is told
                    db.execute("ROLLBACK TO op")
                    db.execute("RELEASE op")
                    done.append((future, None, exc))
                else:
                    db.execute("RELEASE op")
                    done.append((future, result, None))
            db.execute("COMMIT")
        except BaseException as exc:  # the batch as a whole: nothing of it is stored
            if db.in_transaction:
                db.execute("ROLLBACK")
            for _, future, _ in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        self.commits += 1  # counted before anyone hears of the commit
        if not synced:
            self.unsynced_commits += 1
        for future, result, error in done:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)


class Database:
    """A database file's group-commit writer and its read connection, both opened on first use.

    ``open_writer`` opens (and creates, migrates) the writable connection; ``corrupt`` makes the
    error raised when the file is not a database; ``exists`` says whether there is anything to
    read yet, so that a read of a store nothing was written to creates no file."""

    def __init__(
        self,
        path: Path,
        open_writer: Callable[[], sqlite3.Connection],
        corrupt: Callable[[str], Exception],
        exists: Callable[[], bool] | None = None,
    ) -> None:
        self.path = path
        self._open_writer = open_writer
        self._corrupt = corrupt
        self._exists = exists or path.exists
        self._writer: GroupCommitter | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # opening, and the reader (one statement at a time)

    @property
    def is_open(self) -> bool:
        return self._reader is not None

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection | None]:
        """The read connection, under the lock; None while nothing is stored (reading creates
        nothing). In WAL mode it never waits for the writer, and sees every commit before it."""
        with self._lock:
            if self._reader is None and self._exists():
                self._open_locked()
            yield self._reader

    def writing(self) -> GroupCommitter:
        with self._lock:
            if self._writer is None:
                self._open_locked()
            assert self._writer is not None
            return self._writer

    def close(self) -> None:
        with self._lock:
            writer, reader, self._writer, self._reader = self._writer, self._reader, None, None
        if writer is not None:
            writer.close()
        if reader is not None:
            reader.close()

    def _open_locked(self) -> None:
        db = self._open_writer()
        try:
            reader = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            reader.execute("PRAGMA query_only=1")
        except sqlite3.DatabaseError as exc:
            db.close()
            raise self._corrupt(f"{self.path} cannot be read ({exc}); fix or move it away") from None
        self._writer, self._reader = GroupCommitter(db, str(self.path)), reader
