"""The audit trail in PostgreSQL (``storage.backend: postgres``): every gateway's records in one
table, so ``logs.tail``, ``audit.activity.list`` and ``homarus logs`` show the runs of the whole
cluster wherever they are asked.

:meth:`PgAuditLog.write` is called on the run's path (the event loop, worker threads) and must
not wait for the database: it queues the record and a writer thread inserts what is queued in one
statement every ``FLUSH_S`` (or sooner when a batch fills). The queue is bounded: past
``MAX_QUEUED`` records (the database away for long), new ones are counted as failures and
dropped, as a full disk drops the file's; what is queued when the database returns goes in then,
in order. Each record is stored whole as JSON with its time, run and stream (``audit`` or
``raw-stream``); the cursor of a tail is the last row's ``seq``.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import orjson

from homarus.audit.log import MAX_LINE_BYTES, Tail, bounded
from homarus.errors import HomarusError

if TYPE_CHECKING:
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["FLUSH_S", "MAX_QUEUED", "PgAuditLog"]

log = logging.getLogger("homarus.audit")

FLUSH_S: Final = 0.2
BATCH: Final = 500
MAX_QUEUED: Final = 20_000


class PgAuditLog:
    def __init__(
        self,
        db: BlockingDatabase,
        member_id: str,
        *,
        prefix: str = "audit",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.member_id = member_id
        self.prefix = prefix
        self._clock = clock
        self._queue: deque[tuple[int, str | None, bytes]] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.failures = 0
        #: records written to the database
        self.written = 0

    # -- writing ---------------------------------------------------------------------------------
    def write(self, record: dict[str, Any]) -> None:
        """Queue ``record`` (``ts`` added when missing); never raises, never waits."""
        now = self._clock()
        doc = {"ts": int(now * 1000), **record}
        body = orjson.dumps(doc, default=str)
        if len(body) >= MAX_LINE_BYTES:
            body = orjson.dumps({**bounded(record, now), "truncated": True}, default=str)
        run_id = record.get("runId")
        with self._cond:
            if self._closed:
                return
            if len(self._queue) >= MAX_QUEUED:
                self._failed(f"{MAX_QUEUED} records wait for the database; this one is dropped")
                return
            self._queue.append((int(doc["ts"]), run_id if isinstance(run_id, str) else None, body))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self.prefix}-writer", daemon=True)
                self._thread.start()
            if len(self._queue) in (1, BATCH):  # the writer idles on an empty queue; a full batch goes now
                self._cond.notify()

    def _failed(self, why: str) -> None:
        self.failures += 1
        if self.failures in (1, 10, 100) or self.failures % 1000 == 0:
            log.error("audit write failed (%d so far): %s", self.failures, why)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()  # idle: nothing until a record comes
                if len(self._queue) < BATCH and not self._closed:
                    self._cond.wait(FLUSH_S)  # let a batch gather
                batch = list(itertools.islice(self._queue, BATCH))
                closing = self._closed
            if not batch:
                return  # closing, nothing left
            if not self._insert(batch):
                if closing:
                    return
                time.sleep(1.0)  # the database away: keep them, try again
                continue
            with self._cond:
                for _ in batch:
                    self._queue.popleft()

    def _insert(self, batch: list[tuple[int, str | None, bytes]]) -> bool:
        rows = [(self.prefix, ts, run_id, self.member_id, body.decode()) for ts, run_id, body in batch]
        try:
            with self.db.connection() as conn, conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO audit_records (stream, ts, run_id, member, record) VALUES (%s, %s, %s, %s, %s)", rows
                )
        except HomarusError as exc:
            self._failed(exc.message)
            return False
        except Exception as exc:  # a record the database refuses must not stop the trail
            self._failed(f"{type(exc).__name__}: {exc}")
            return True
        self.written += len(batch)
        return True

    def flush(self, timeout_s: float = 5.0) -> None:
        """Wait until what is queued now is written (tests; shutdown)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._cond.notify()
        while time.monotonic() < deadline:
            with self._cond:
                if not self._queue:
                    return
            time.sleep(0.01)

    def close(self) -> None:
        """Write what is queued (a few seconds at most), then stop the writer."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(5.0)

    # -- reading ---------------------------------------------------------------------------------
    def tail(self, *, limit: int = 200, run_id: str | None = None, cursor: int | None = None) -> Tail:
        """The last ``limit`` records (of ``run_id``); with ``cursor``, only those written since."""
        self.flush(1.0)  # this gateway's own records first
        with self.db.connection() as conn:
            rows = conn.execute(
                """SELECT seq, record FROM audit_records
                   WHERE stream = %(stream)s AND (%(run)s::text IS NULL OR run_id = %(run)s)
                     AND seq > %(after)s
                   ORDER BY seq DESC LIMIT %(limit)s""",
                {"stream": self.prefix, "run": run_id, "after": cursor or 0, "limit": limit + 1},
            ).fetchall()
            last = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM audit_records WHERE stream = %s", (self.prefix,)
            ).fetchone()
        truncated = len(rows) > limit
        records = [row[1] for row in reversed(rows[:limit])]
        end = max(int(last[0]) if last else 0, cursor or 0)
        return Tail(records, "postgresql" if records or end else None, end, truncated, end)
