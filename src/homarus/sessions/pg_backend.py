"""Sessions in PostgreSQL (``storage.backend: postgres``): every gateway on the database sees
the same sessions and transcripts (``pg_store.py``, ``pg_transcript.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from homarus.sessions.pg_store import PgSessionStore
from homarus.sessions.pg_transcript import PgTranscript
from homarus.sessions.store import Maintenance

if TYPE_CHECKING:
    from homarus.sessions.backend import SessionIndex, TranscriptLog, WholeTranscript
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["PostgresSessions"]


class PostgresSessions:
    def __init__(self, db: BlockingDatabase, member_id: str | None = None) -> None:
        self.db = db
        #: the gateway these sessions are written by (None: a command without a gateway)
        self.member_id = member_id

    def index(self, agent_id: str, directory: Path, maintenance: Maintenance) -> SessionIndex:
        return PgSessionStore(self.db, agent_id, maintenance=maintenance)

    def transcript(self, agent_id: str, session_id: str, path: Path) -> TranscriptLog:
        return PgTranscript(self.db, agent_id, session_id, path, member_id=self.member_id)

    def import_transcript(self, t: WholeTranscript) -> bool:
        texts = [orjson.dumps(e).decode() for e in t.entries]
        with self.db.connection() as conn, conn.transaction():
            added = conn.execute(
                """INSERT INTO transcripts (agent_id, session_id, header, length, archived)
                   VALUES (%s, %s, %s, %s, %s) ON CONFLICT (agent_id, session_id) DO NOTHING RETURNING 1""",
                (t.agent_id, t.session_id, orjson.dumps(t.header).decode(), len(texts), t.archived),
            ).fetchone()
            if added is None:
                return False
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO transcript_entries (agent_id, session_id, seq, entry) VALUES (%s, %s, %s, %s)",
                    [(t.agent_id, t.session_id, seq, text) for seq, text in enumerate(texts, start=1)],
                )
        return True

    def archive(self, agent_id: str, session_id: str, path: Path, suffix: str) -> str | None:
        """Mark the transcript set aside (its rows stay, as the embedded backend's renamed file)."""
        with self.db.connection() as conn:
            cur = conn.execute(
                "UPDATE transcripts SET archived = %s WHERE agent_id = %s AND session_id = %s AND archived IS NULL",
                (suffix, agent_id, session_id),
            )
        return f"{path}.{suffix}" if cur.rowcount else None
