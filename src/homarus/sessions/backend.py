"""Where sessions are kept: what the session manager asks of a backend, and the embedded one.

Two backends keep the same contract (``storage.backend``): ``embedded`` (a SQLite index and JSONL
files per agent, under the state directory; the default) and ``postgres``
(``sessions/pg_backend.py``: shared by every gateway on the database). The manager resolves keys,
builds entries and enforces the rules; a backend only stores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from homarus.fs import atomic_write
from homarus.sessions.entry import SessionEntry
from homarus.sessions.store import Change, Entries, Maintenance, SessionStore
from homarus.sessions.transcript import Transcript, TranscriptView

__all__ = ["EmbeddedSessions", "SessionBackend", "SessionIndex", "TranscriptLog", "WholeTranscript"]


@dataclass(frozen=True, slots=True)
class WholeTranscript:
    """A transcript brought from elsewhere (``homarus migrate``, ``homarus storage migrate``):
    ``path`` is where the embedded backend keeps it live; ``archived`` the suffix it was set aside
    under by a reset or a delete, if it was."""

    agent_id: str
    session_id: str
    path: Path
    header: dict[str, Any]
    entries: list[dict[str, Any]]
    archived: str | None = None


class SessionIndex(Protocol):
    """One agent's session key → entry index (``sessions/store.py`` documents the contract)."""

    maintenance: Maintenance

    @property
    def location(self) -> str: ...
    @property
    def is_open(self) -> bool: ...
    def read(self) -> Entries: ...
    def get_raw(self, key: str) -> dict[str, Any] | None: ...
    def get(self, key: str) -> SessionEntry | None: ...
    def entries(self) -> dict[str, SessionEntry]: ...
    def count(self) -> int: ...
    def recent(self, limit: int) -> list[tuple[str, int | None]]: ...
    def glance(self, limit: int) -> tuple[int, list[tuple[str, int | None]]]:
        """(count, recent) for a caller on the event loop: never a wait on the network."""
        ...

    def update(self, key: str, change: Change, *, synced: bool = True) -> dict[str, Any] | None: ...
    async def aupdate(self, key: str, change: Change, *, synced: bool = True) -> dict[str, Any] | None: ...
    def add_missing(self, entries: Entries) -> list[str]: ...
    def close(self) -> None: ...


class TranscriptLog(Protocol):
    """One session's append-only transcript (``sessions/transcript.py`` documents the contract)."""

    path: Path
    unsynced: bool

    @property
    def cached_bytes(self) -> int: ...
    @property
    def derived(self) -> dict[str, Any]: ...
    def forget_cache(self) -> None: ...
    def stamp(self) -> tuple[int, int] | None: ...
    def read(self) -> TranscriptView: ...
    def exists(self) -> bool: ...
    def create(self, session_id: str, *, cwd: str | None = None, parent_session: str | None = None) -> None: ...
    def append(self, entry: dict[str, Any]) -> dict[str, Any]: ...
    def append_many(self, entries: list[dict[str, Any]], *, synced: bool = True) -> list[dict[str, Any]]: ...
    def sync(self) -> None: ...


class SessionBackend(Protocol):
    def index(self, agent_id: str, directory: Path, maintenance: Maintenance) -> SessionIndex: ...
    def transcript(self, agent_id: str, session_id: str, path: Path) -> TranscriptLog: ...
    def archive(self, agent_id: str, session_id: str, path: Path, suffix: str) -> str | None:
        """Set the transcript aside under ``suffix`` (kept, no longer the session's); where it
        went, or None when there was none."""
        ...

    def import_transcript(self, t: WholeTranscript) -> bool:
        """Store a whole transcript brought from elsewhere (``homarus migrate``, ``homarus storage
        migrate``), all or nothing, set aside under ``archived`` if given; False (and nothing
        written) when one is stored there already."""
        ...


class EmbeddedSessions:
    """``sessions.sqlite`` and ``<sessionId>.jsonl`` files in each agent's sessions directory."""

    def index(self, agent_id: str, directory: Path, maintenance: Maintenance) -> SessionIndex:
        return SessionStore(directory, maintenance=maintenance)

    def transcript(self, agent_id: str, session_id: str, path: Path) -> TranscriptLog:
        return Transcript(path)

    def import_transcript(self, t: WholeTranscript) -> bool:
        target = t.path.with_name(f"{t.path.name}.{t.archived}") if t.archived else t.path
        if target.exists():
            return False
        atomic_write(target, b"".join(orjson.dumps(line) + b"\n" for line in [t.header, *t.entries]))
        return True

    def archive(self, agent_id: str, session_id: str, path: Path, suffix: str) -> str | None:
        target = path.with_name(f"{path.name}.{suffix}")
        try:
            os.replace(path, target)
        except FileNotFoundError:
            return None
        return str(target)
