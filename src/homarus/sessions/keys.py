"""Session keys: canonical ``agent:<agentId>:<rest>``, parsed strictly.

A key names whose conversation a message joins, so a malformed key is an error, never
"fixed" into some other key: ``agent:`` keys must have an agent id matching the pattern and a
non-empty rest; other keys are scoped under the requested (or default) agent. Keys are
case-insensitive (stored lower-case), at most 512 characters, without whitespace or control
characters.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from homarus.errors import InvalidRequest

__all__ = [
    "AGENT_ID_RE",
    "MAX_KEY_LENGTH",
    "SessionKey",
    "main_session_key",
    "normalize_agent_id",
    "parse_session_key",
    "valid_session_id",
]

AGENT_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_KEY_LENGTH = 512
SENTINELS = frozenset({"global", "unknown"})
_BAD_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")
#: a session id names its transcript file: nothing that could leave the sessions directory
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def valid_session_id(session_id: str) -> str:
    """``session_id`` when it is safe as a file name (``[A-Za-z0-9._-]{1,128}``, no ``..``)."""
    if not SESSION_ID_RE.fullmatch(session_id) or ".." in session_id:
        raise InvalidRequest(f"invalid session id {session_id[:64]!r}: [A-Za-z0-9._-]{{1,128}} without '..'")
    return session_id


Kind = Literal["direct", "group", "channel", "global", "unknown", "main", "cron", "subagent", "hook", "other"]


@dataclass(frozen=True, slots=True)
class SessionKey:
    """A validated session key."""

    agent_id: str
    rest: str

    @property
    def canonical(self) -> str:
        if self.agent_id == "" and self.rest in SENTINELS:
            return self.rest
        return f"agent:{self.agent_id}:{self.rest}"

    def __str__(self) -> str:
        return self.canonical

    @property
    def parts(self) -> list[str]:
        return self.rest.split(":")

    @property
    def kind(self) -> Kind:
        if self.agent_id == "":
            return "global" if self.rest == "global" else "unknown"
        parts = self.parts
        if ":subagent:" in f":{self.rest}:":
            return "subagent"
        first = parts[0]
        if first == "cron":
            return "cron"
        if first == "hook":
            return "hook"
        if "group" in parts:
            return "group"
        if "channel" in parts:
            return "channel"
        if "direct" in parts:
            return "direct"
        if len(parts) == 1:
            return "main"
        return "other"

    @property
    def subagent_depth(self) -> int:
        return self.parts.count("subagent")

    @property
    def thread_id(self) -> str | None:
        parts = self.parts
        for i in range(len(parts) - 2, -1, -1):
            if parts[i] == "thread":
                return parts[i + 1]
        return None


def normalize_agent_id(agent_id: str) -> str:
    """Validate an agent id (case-insensitive); raises InvalidRequest when it does not match."""
    candidate = agent_id.strip().lower()
    if not AGENT_ID_RE.match(candidate):
        raise InvalidRequest(f"invalid agent id {agent_id!r}: use 1-64 of a-z, 0-9, '_' or '-'")
    return candidate


def main_session_key(agent_id: str, main_key: str = "main") -> SessionKey:
    return SessionKey(normalize_agent_id(agent_id), main_key)


def parse_session_key(raw: str | None, *, agent_id: str = "main", main_key: str = "main") -> SessionKey:
    """Canonicalise ``raw`` for ``agent_id``; raises InvalidRequest on a malformed key.

    ``None``, ``""`` and ``"main"`` mean the agent's main session. A key that already names an
    agent keeps its agent: the caller decides whether that agent may be addressed.
    """
    if raw is None:
        return main_session_key(agent_id, main_key)
    if len(raw) > MAX_KEY_LENGTH:
        raise InvalidRequest(f"session key too long ({len(raw)} > {MAX_KEY_LENGTH} characters)")
    key = raw.strip().lower()
    if key in ("", "main"):
        return main_session_key(agent_id, main_key)
    if _BAD_CHARS.search(key):
        raise InvalidRequest(f"malformed session key {_quoted(raw)}: whitespace or control characters")
    if key in SENTINELS:
        return SessionKey("", key)
    if key.startswith("agent:"):
        parts = key.split(":")
        if len(parts) < 3 or any(p == "" for p in parts):
            raise InvalidRequest(f"malformed session key {_quoted(raw)}")
        if not AGENT_ID_RE.match(parts[1]):
            raise InvalidRequest(f"malformed session key {_quoted(raw)}: invalid agent id {_quoted(parts[1])}")
        return SessionKey(parts[1], ":".join(parts[2:]))
    if any(p == "" for p in key.split(":")):
        raise InvalidRequest(f"malformed session key {_quoted(raw)}: empty segment")
    return SessionKey(normalize_agent_id(agent_id), key)


def _quoted(text: str) -> str:
    """Double-quoted with control characters escaped: safe to echo into messages and logs."""
    return json.dumps(text)
