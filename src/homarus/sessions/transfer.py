"""Bring an embedded installation's sessions into another backend (``homarus storage migrate
--from embedded --to postgres``): every agent's session index and every transcript, the ones set
aside by a reset or a delete included.

Transcripts go first, each whole in one transaction, then the index entries naming them, so an
entry never names a transcript that is not there. What the target has already is kept and counted
as such (a second run after an interrupted one brings over the rest and changes nothing else). The
embedded files are only read (an older ``sessions.json`` is first imported into ``sessions.sqlite``,
as the embedded store always does), never removed: the operator does that once satisfied. Lines of a
file that do not parse (a torn last line, damage) are left out and counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homarus.sessions.backend import SessionBackend, WholeTranscript
from homarus.sessions.store import DB_NAME, LEGACY_NAME, Maintenance, SessionStore
from homarus.sessions.transcript import parse_jsonl
from homarus.sessions.transcript_rules import new_header

__all__ = ["AgentTransfer", "copy_sessions", "embedded_agents"]

# <sessionId>.jsonl, or <sessionId>.jsonl.reset.<ms> / .deleted.<ms> once set aside
_TRANSCRIPT = re.compile(r"^(?P<id>[A-Za-z0-9._-]+?)\.jsonl(?:\.(?P<archived>(?:reset|deleted)\.\d+))?$")


@dataclass(slots=True)
class AgentTransfer:
    agent_id: str
    sessions: int = 0
    sessions_added: int = 0
    transcripts: int = 0
    transcripts_added: int = 0
    archived: int = 0
    entries: int = 0
    #: lines of transcript files that did not parse, left out (file name → count)
    skipped_lines: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id,
            "sessions": self.sessions,
            "sessionsAdded": self.sessions_added,
            "transcripts": self.transcripts,
            "transcriptsAdded": self.transcripts_added,
            "archived": self.archived,
            "entries": self.entries,
            "skippedLines": dict(self.skipped_lines),
        }


def embedded_agents(state_dir: Path) -> list[tuple[str, Path]]:
    """(agent id, sessions directory) of every agent with something stored, by id."""
    found = []
    for directory in sorted((state_dir / "agents").glob("*/sessions")):
        if (directory / DB_NAME).exists() or (directory / LEGACY_NAME).exists() or any(directory.glob("*.jsonl*")):
            found.append((directory.parent.name, directory))
    return found


def copy_sessions(state_dir: Path, target: SessionBackend, *, dry_run: bool = False) -> list[AgentTransfer]:
    """Copy every agent's sessions under ``state_dir`` into ``target``; what was found and added."""
    report = []
    for agent_id, directory in embedded_agents(state_dir):
        done = AgentTransfer(agent_id)
        for path in sorted(directory.iterdir()):
            match = _TRANSCRIPT.match(path.name)
            if match is None or not path.is_file():
                continue
            view = parse_jsonl(path.read_bytes())
            skipped = len(view.bad_lines) + (1 if view.torn_tail.strip() else 0)
            if skipped:
                done.skipped_lines[path.name] = skipped
            done.transcripts += 1
            done.archived += match["archived"] is not None
            done.entries += len(view.entries)
            if dry_run:
                continue
            session_id = match["id"]
            header = view.header or new_header(session_id)
            live = directory / f"{session_id}.jsonl"
            whole = WholeTranscript(agent_id, session_id, live, header, view.entries, match["archived"])
            if target.import_transcript(whole):
                done.transcripts_added += 1
        source = SessionStore(directory)
        try:
            entries = source.read()
        finally:
            source.close()
        done.sessions = len(entries)
        if not dry_run and entries:
            index = target.index(agent_id, directory, Maintenance())
            try:
                done.sessions_added = len(index.add_missing(entries))
            finally:
                index.close()
        report.append(done)
    return report
