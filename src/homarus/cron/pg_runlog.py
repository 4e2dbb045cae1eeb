"""The cron run history in PostgreSQL (``storage.backend: postgres``): the run log of
``runlog.py`` as rows of ``cron_runs``, one per finished run, whichever gateway ran it.

A job keeps its newest ``keep_lines`` entries: every ``_PRUNE_EVERY``-th append of a job deletes
the older ones (a bounded table without a delete per run).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from homarus.cron.runlog import RunLog, newest_first

if TYPE_CHECKING:
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["PgRunLog"]

_PRUNE_EVERY = 20


class PgRunLog(RunLog):
    def __init__(self, db: BlockingDatabase, *, keep_lines: int = 2000) -> None:
        super().__init__(Path("cron_runs"), keep_lines=keep_lines)
        self.db = db
        #: appends per job since its last prune (as many keys as jobs that ran)
        self._appends: dict[str, int] = {}

    def append(self, job_id: str, entry: dict[str, Any]) -> None:
        self.path_for(job_id)  # the same id check as the files'
        with self.db.connection() as conn:
            conn.execute(
                "INSERT INTO cron_runs (job_id, entry) VALUES (%s, %s)", (job_id, orjson.dumps(entry).decode())
            )
        count = self._appends[job_id] = self._appends.get(job_id, 0) + 1
        if count >= _PRUNE_EVERY:
            self._appends.pop(job_id, None)
            self.prune(job_id)

    def import_entries(self, job_id: str, entries: list[dict[str, Any]]) -> None:
        """Add a job's history (oldest first), as the move from the embedded files does."""
        self.path_for(job_id)
        with self.db.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO cron_runs (job_id, entry) VALUES (%s, %s)",
                [(job_id, orjson.dumps(e).decode()) for e in entries[-self.keep_lines :]],
            )

    def prune(self, job_id: str) -> None:
        with self.db.connection() as conn:
            conn.execute(
                """DELETE FROM cron_runs WHERE job_id = %(job)s AND seq < (
                       SELECT seq FROM cron_runs WHERE job_id = %(job)s ORDER BY seq DESC
                       OFFSET %(keep)s - 1 LIMIT 1)""",
                {"job": job_id, "keep": max(1, self.keep_lines)},
            )

    def entries(self, job_id: str) -> list[dict[str, Any]]:
        self.path_for(job_id)
        with self.db.connection() as conn:
            rows = conn.execute(
                "SELECT entry FROM cron_runs WHERE job_id = %s ORDER BY seq DESC LIMIT %s", (job_id, self.keep_lines)
            ).fetchall()
        return [row[0] for row in rows if isinstance(row[0], dict)]

    def all_entries(self) -> list[dict[str, Any]]:
        with self.db.connection() as conn:
            rows = conn.execute("SELECT entry FROM cron_runs ORDER BY seq DESC LIMIT 10000").fetchall()
        return newest_first([row[0] for row in rows if isinstance(row[0], dict)])
