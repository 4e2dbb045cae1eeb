"""Sessions in PostgreSQL (``storage.backend: postgres``): every gateway on the database sees
the same sessions and transcripts (``pg_store.py``, ``pg_transcript.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from homarus.sessions.pg_store import PgSessionStore
from homarus.sessions.pg_transcript import PgTranscript
from homarus.sessions.store import Maintenance

if TYPE_CHECKING:
    from homarus.sessions.backend import SessionIndex, TranscriptLog
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["PostgresSessions"]


class PostgresSessions:
    def __init__(self, db: BlockingDatabase) -> None:
        self.db = db

    def index(self, agent_id: str, directory: Path, maintenance: Maintenance) -> SessionIndex:
        return PgSessionStore(self.db, agent_id, maintenance=maintenance)

    def transcript(self, agent_id: str, session_id: str, path: Path) -> TranscriptLog:
        return PgTranscript(self.db, agent_id, session_id, path)

    def archive(self, agent_id: str, session_id: str, path: Path, suffix: str) -> str | None:
        """Mark the transcript set aside (its rows stay, as the embedded backend's renamed file)."""
        with self.db.connection() as conn:
            cur = conn.execute(
                "UPDATE transcripts SET archived = %s WHERE agent_id = %s AND session_id = %s AND archived IS NULL",
                (suffix, agent_id, session_id),
            )
        return f"{path}.{suffix}" if cur.rowcount else None
