"""One session's transcript in PostgreSQL (``storage.backend: postgres``): a ``transcripts`` row
(header, length, archived) and its ``transcript_entries`` rows, numbered 1, 2, 3… in append order.

The same contract as the JSONL :class:`~homarus.sessions.transcript.Transcript`, for every gateway
at once: an append locks the transcript's row (``FOR UPDATE``), catches up with what others
appended since this handle last looked, checks the new entries against all of it
(``transcript_rules``: ids, parents, every tool result answering an open tool call) and inserts
them with the new length in the same transaction, so a batch is stored whole or not at all and two
gateways can never interleave a tool call and its result with something else. Reads are
incremental like the file's: only entries past the cached length are fetched. ``synced=False``
commits with ``synchronous_commit = off``; :meth:`sync` then makes one synced commit, which
flushes the write-ahead log past everything before it.

Methods block (a network round trip): call them from a worker thread.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from homarus.errors import InvalidRequest, Unavailable
from homarus.sessions.transcript import CachedTranscript, TranscriptView
from homarus.sessions.transcript_rules import AppendState, new_header, prepare, track
from homarus.storage.blocking import LOCK_TIMEOUT_MS

if TYPE_CHECKING:
    from psycopg import Connection

    from homarus.storage.blocking import BlockingDatabase

__all__ = ["PgTranscript", "RunTakenOver"]

# the transcript's row locked for the append, and how many of the batch's runs another member owns
# (a gateway paused past its ttl must not write into a run a survivor took over meanwhile)
_LOCK = """SELECT t.length, t.archived, (
        SELECT count(*) FROM runs r WHERE r.run_id = ANY(%(runs)s) AND r.owner IS DISTINCT FROM %(me)s)
    FROM transcripts t WHERE t.agent_id = %(a)s AND t.session_id = %(s)s FOR UPDATE OF t"""


class RunTakenOver(Unavailable):
    """The run being written belongs to another gateway now (it took the run over): a retry with
    the same idempotency key gets that gateway's outcome."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


_ENTRIES_AFTER = """SELECT t.length, t.archived, t.header, e.seq, e.entry
    FROM transcripts t LEFT JOIN transcript_entries e
        ON e.agent_id = t.agent_id AND e.session_id = t.session_id AND e.seq > %(after)s
    WHERE t.agent_id = %(a)s AND t.session_id = %(s)s
    ORDER BY e.seq"""


class PgTranscript(CachedTranscript):
    def __init__(
        self,
        db: BlockingDatabase,
        agent_id: str,
        session_id: str,
        path: Path,
        *,
        member_id: str | None = None,
    ) -> None:
        # ``path``: where the embedded backend would keep it (hooks and messages name a transcript by
        # it); a row lock is waited for as long as the connection's ``lock_timeout`` says
        super().__init__(path, LOCK_TIMEOUT_MS / 1000)
        self.db = db
        #: the gateway writing (None: a command without a gateway): the runs it writes must be its own
        self.member_id = member_id
        self.agent_id = agent_id
        self.session_id = session_id
        self._lock = threading.Lock()  # one handle is shared by worker threads
        self._exists = False

    def stamp(self) -> tuple[int, int] | None:
        """Changes when the transcript does (None: there is none): its length."""
        with self.db.connection() as conn:
            row = conn.execute(
                "SELECT length FROM transcripts WHERE agent_id = %s AND session_id = %s AND archived IS NULL",
                (self.agent_id, self.session_id),
            ).fetchone()
        return None if row is None else (0, int(row[0]))

    # -- reading ------------------------------------------------------------------------
    def read(self) -> TranscriptView:
        with self._lock:
            cached = self._view
            after = cached[0] if cached is not None else 0
            with self.db.connection() as conn:
                args = {"a": self.agent_id, "s": self.session_id, "after": after}
                rows = conn.execute(_ENTRIES_AFTER, args).fetchall()
            if not rows or rows[0][1] is not None:  # none, or set aside by a reset or delete
                self.forget_cache()
                return TranscriptView(None, [])
            length = int(rows[0][0])
            if cached is None or length < after:
                header = orjson.loads(rows[0][2])
                entries, size, self._derived = [], 0, {}
            else:
                header, entries, size = cached[2].header, list(cached[2].entries), cached[1]
            for _length, _archived, _header, seq, text in rows:
                if seq is not None:
                    entries.append(orjson.loads(text))
                    size += len(text)
            view = TranscriptView(header, entries)
            self._view = (len(entries), size, view)
            return TranscriptView(view.header, list(view.entries))

    def exists(self) -> bool:
        """Whether the transcript is there (once seen, remembered: a transcript set aside by a reset
        or a delete is the old session id's, whose handle the manager drops)."""
        if self._exists:
            return True
        with self.db.connection() as conn:
            row = conn.execute(
                "SELECT 1 FROM transcripts WHERE agent_id = %s AND session_id = %s AND archived IS NULL",
                (self.agent_id, self.session_id),
            ).fetchone()
        self._exists = row is not None
        return self._exists

    # -- writing ------------------------------------------------------------------------
    def create(self, session_id: str, *, cwd: str | None = None, parent_session: str | None = None) -> None:
        """Store the header; an existing transcript is left alone."""
        header = new_header(session_id, cwd=cwd, parent_session=parent_session)
        with self.db.connection() as conn:
            conn.execute(
                """INSERT INTO transcripts (agent_id, session_id, header) VALUES (%s, %s, %s)
                   ON CONFLICT (agent_id, session_id) DO NOTHING""",
                (self.agent_id, self.session_id, orjson.dumps(header).decode()),
            )

    def append(self, entry: dict[str, Any]) -> dict[str, Any]:
        return self.append_many([entry])[0]

    def append_many(self, entries: list[dict[str, Any]], *, synced: bool = True) -> list[dict[str, Any]]:
        """Check and append several entries in one transaction (all or none)."""
        with self._lock, self.db.connection() as conn, conn.transaction():
            if not synced:  # (the lock timeout is the connection's: ``BlockingDatabase``)
                conn.execute("SET LOCAL synchronous_commit = off")
            runs = sorted({str(e["runId"]) for e in entries if e.get("runId")}) if self.member_id else []
            args = {"a": self.agent_id, "s": self.session_id, "runs": runs, "me": self.member_id}
            row = conn.execute(_LOCK, args).fetchone()
            if row is None or row[1] is not None:
                raise InvalidRequest(f"transcript {self.path.name} does not exist; create it first")
            if row[2]:
                raise RunTakenOver(
                    f"run {', '.join(runs)} was taken over by another gateway of the cluster; this one stops writing it"
                )
            length = int(row[0])
            try:
                state = self._caught_up(conn, length)
                staged = [prepare(e, state) for e in entries]
                texts = [orjson.dumps(e).decode() for e in staged]
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO transcript_entries (agent_id, session_id, seq, entry) VALUES (%s, %s, %s, %s)",
                        [(self.agent_id, self.session_id, length + i, t) for i, t in enumerate(texts, start=1)],
                    )
                conn.execute(
                    "UPDATE transcripts SET length = %s WHERE agent_id = %s AND session_id = %s",
                    (length + len(texts), self.agent_id, self.session_id),
                )
            except BaseException:
                self._state = None  # staging touched the cache; rebuild it from the table next time
                raise
            state.size = state.clean_size = length + len(texts)
            self.unsynced = not synced
            return staged

    def _caught_up(self, conn: Connection[Any], length: int) -> AppendState:
        """The append state at ``length`` entries: the cached one, brought forward by the entries
        appended since (by another gateway, or a handle this one replaced)."""
        state = self._state
        if state is None or state.size > length:
            state = AppendState(0, 0)
        if state.size < length:
            rows = conn.execute(
                """SELECT entry FROM transcript_entries
                   WHERE agent_id = %s AND session_id = %s AND seq > %s ORDER BY seq""",
                (self.agent_id, self.session_id, state.size),
            ).fetchall()
            for (text,) in rows:
                track(state, orjson.loads(text))
            state.size = state.clean_size = length
        self._state = state
        return state

    def sync(self) -> None:
        """Make durable what appends with ``synced=False`` committed: one synced commit after them."""
        if not self.unsynced:
            return
        with self.db.connection() as conn, conn.transaction():
            conn.execute(
                "UPDATE transcripts SET length = length WHERE agent_id = %s AND session_id = %s",
                (self.agent_id, self.session_id),
            )
        self.unsynced = False
