"""Sessions of every agent: resolve keys, create, patch, reset, delete, list, preview.

Layout under the state dir (all files 0600, directories 0700)::

    agents/<agentId>/sessions/sessions.sqlite         key -> SessionEntry (sessions/store.py)
    agents/<agentId>/sessions/<sessionId>.jsonl       transcript
    agents/<agentId>/sessions/<sessionId>.jsonl.reset.<ms>    after sessions.reset
    agents/<agentId>/sessions/<sessionId>.jsonl.deleted.<ms>  after sessions.delete

Blocking file I/O: the gateway calls these methods through ``asyncio.to_thread``.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from homarus.errors import InvalidRequest, NotFound
from homarus.sessions.backend import EmbeddedSessions, SessionBackend, SessionIndex, TranscriptLog
from homarus.sessions.entry import SessionEntry
from homarus.sessions.keys import SessionKey, parse_session_key, valid_session_id
from homarus.sessions.store import Maintenance

__all__ = ["DEFAULT_TRANSCRIPT_CACHE_BYTES", "MAX_TRANSCRIPT_HANDLES", "SessionManager", "SessionRef", "now_ms"]

MAX_TRANSCRIPT_HANDLES = 4096
#: how much transcript (bytes of file) stays parsed in memory in all (``session.transcriptCacheMb``;
#: parsed, it takes about four times that): a long or idle history is re-read from its file
#: rather than kept, so memory does not grow with history
DEFAULT_TRANSCRIPT_CACHE_BYTES = 4 * 1024 * 1024
#: the cache is measured every this many handle lookups (a sum over the handles: not on every one)
_TRIM_EVERY = 64


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class SessionRef:
    key: SessionKey
    entry: SessionEntry
    created: bool = False

    @property
    def agent_id(self) -> str:
        return self.key.agent_id


class SessionManager:
    def __init__(
        self,
        state_dir: Path,
        *,
        agent_ids: Iterable[str] = ("main",),
        default_agent: str = "main",
        main_key: str = "main",
        maintenance: Maintenance | None = None,
        workspace: str | None = None,
        transcript_cache_bytes: int = DEFAULT_TRANSCRIPT_CACHE_BYTES,
        backend: SessionBackend | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.backend: SessionBackend = backend or EmbeddedSessions()
        self.agent_ids = tuple(agent_ids)
        self.default_agent = default_agent
        self.main_key = main_key
        self.maintenance = maintenance or Maintenance()
        self.workspace = workspace
        self._stores: dict[str, SessionIndex] = {}
        # handles keep what appends need to know (ids, open tool calls); the most recently used
        # are kept, so a gateway with 100,000 sessions does not hold them all
        self._transcripts: OrderedDict[tuple[str, str], TranscriptLog] = OrderedDict()
        self._dirs: dict[str, Path] = {}
        self.transcript_cache_bytes = transcript_cache_bytes
        self._lookups = 0

    # -- paths and handles --------------------------------------------------------------
    def sessions_dir(self, agent_id: str) -> Path:
        path = self._dirs.get(agent_id)
        if path is None:
            path = self._dirs[agent_id] = self.state_dir / "agents" / agent_id / "sessions"
        return path

    def store(self, agent_id: str) -> SessionIndex:
        store = self._stores.get(agent_id)
        if store is None:
            store = self.backend.index(agent_id, self.sessions_dir(agent_id), self.maintenance)
            self._stores[agent_id] = store
        return store

    def close(self) -> None:
        """Commit what is pending and close every agent's session index (a later use reopens it)."""
        stores, self._stores = self._stores, {}
        for store in stores.values():
            store.close()

    def transcript(self, agent_id: str, session_id: str) -> TranscriptLog:
        handles = self._transcripts
        t = handles.get((agent_id, session_id))
        if t is None:
            path = self.sessions_dir(agent_id) / f"{valid_session_id(session_id)}.jsonl"
            t = handles[agent_id, session_id] = self.backend.transcript(agent_id, session_id, path)
            if len(handles) > MAX_TRANSCRIPT_HANDLES:
                handles.popitem(last=False)  # one still in use keeps working: it rereads a file that grew
        else:
            handles.move_to_end((agent_id, session_id))
        self._lookups += 1
        if self._lookups % _TRIM_EVERY == 0:
            self.trim_transcript_cache()
        return t

    def trim_transcript_cache(self) -> int:
        """Forget the cached views of the least recently used transcripts until what stays cached
        fits ``transcript_cache_bytes``; returns the bytes kept."""
        handles = list(self._transcripts.values())
        total = sum(h.cached_bytes for h in handles)
        for handle in handles:  # least recently used first
            if total <= self.transcript_cache_bytes:
                break
            total -= handle.cached_bytes
            handle.forget_cache()
        return total

    def retained(self) -> dict[str, int]:
        """Transcript handles held (at most ``MAX_TRANSCRIPT_HANDLES``) and the bytes of transcript
        they keep parsed (trimmed to ``transcript_cache_bytes`` every ``_TRIM_EVERY`` lookups)."""
        return {
            "transcriptHandles": len(self._transcripts),
            "transcriptCacheBytes": sum(h.cached_bytes for h in self._transcripts.values()),
        }

    def transcript_for(self, ref: SessionRef) -> TranscriptLog:
        return self.transcript(ref.agent_id, ref.entry.session_id)

    # -- keys -----------------------------------------------------------------------------
    def resolve_key(self, raw: str | None, agent_id: str | None = None) -> SessionKey:
        agent = agent_id or self.default_agent
        if agent_id is not None and agent_id not in self.agent_ids:
            raise InvalidRequest(f'unknown agent id "{agent_id}"')
        key = parse_session_key(raw, agent_id=agent, main_key=self.main_key)
        if key.agent_id and key.agent_id not in self.agent_ids:
            raise InvalidRequest(f'unknown agent id "{key.agent_id}"')
        if agent_id is not None and key.agent_id and key.agent_id != agent_id:
            raise InvalidRequest(f'session key "{key}" belongs to agent "{key.agent_id}", not "{agent_id}"')
        return key

    def main_session_key(self, agent_id: str | None = None) -> SessionKey:
        return self.resolve_key(None, agent_id)

    def _store_for(self, key: SessionKey) -> SessionIndex:
        if not key.agent_id:
            raise InvalidRequest(f'session key "{key}" is not bound to an agent')
        return self.store(key.agent_id)

    # -- reads ----------------------------------------------------------------------------
    def get(self, key: SessionKey) -> SessionRef | None:
        entry = self._store_for(key).get(key.canonical)
        return SessionRef(key, entry) if entry is not None else None

    def get_if_open(self, key: SessionKey) -> SessionRef | None:
        """The session when its agent's index is open already (a read that never waits for a
        writer: fine on the event loop); None when it does not exist or the index is not open yet
        (opening it is file work, maybe an import: use :meth:`get` in a worker thread)."""
        store = self._stores.get(key.agent_id)
        if store is None or not store.is_open:
            return None
        entry = store.get(key.canonical)
        return SessionRef(key, entry) if entry is not None else None

    def require(self, key: SessionKey) -> SessionRef:
        ref = self.get(key)
        if ref is None:
            raise NotFound(f"session not found: {key}")
        return ref

    def all_entries(self, agent_id: str | None = None) -> list[tuple[str, str, SessionEntry]]:
        """(agentId, key, entry) for every session, newest first."""
        agents = [agent_id] if agent_id else list(self.agent_ids)
        rows = [(a, k, e) for a in agents for k, e in self.store(a).entries().items()]
        rows.sort(key=lambda r: r[2].updated_at, reverse=True)
        return rows

    # -- writes ---------------------------------------------------------------------------
    def ensure(
        self,
        key: SessionKey,
        *,
        label: str | None = None,
        update: dict[str, Any] | None = None,
        synced: bool = True,
        **fields: Any,
    ) -> SessionRef:
        """The session for ``key``, created (entry + transcript header) if it does not exist.

        ``update`` is merged into the entry in the same locked write (None values remove fields);
        ``synced=False`` lets a power cut lose that update of an existing entry (a run's "running"
        mark: the end of the run writes the entry again); a new entry is always written synced.
        """
        store = self._store_for(key)
        created = False
        synced = synced or store.get_raw(key.canonical) is None

        def change(existing: dict[str, Any] | None) -> dict[str, Any]:
            nonlocal created
            if existing is not None:
                if update:
                    merged = {k: v for k, v in {**existing, **update}.items() if v is not None}
                    merged["updatedAt"] = max(now_ms(), int(existing.get("updatedAt", 0)))
                    _check_entry(merged)
                    return merged
                return existing
            created = True
            ts = now_ms()
            session_id = str(uuid.uuid4())
            entry: dict[str, Any] = {
                "sessionId": session_id,
                "createdAt": ts,
                "updatedAt": ts,
                "sessionFile": f"{session_id}.jsonl",
            }
            if label is not None:
                entry["label"] = label
            entry.update({k: v for k, v in {**fields, **(update or {})}.items() if v is not None})
            _check_entry(entry)
            return entry

        entry = SessionEntry.model_validate(store.update(key.canonical, change, synced=synced))
        transcript = self.transcript(key.agent_id, entry.session_id)
        if not transcript.exists():
            transcript.create(entry.session_id, cwd=self.workspace)
        return SessionRef(key, entry, created)

    def update_entry(
        self, key: SessionKey, changes: dict[str, Any], *, create: bool = False, touch: bool = True
    ) -> SessionRef:
        """Merge ``changes`` (alias → value, None = remove) into the entry; bumps updatedAt unless
        ``touch`` is False (then an ``updatedAt`` in ``changes`` is kept as given)."""
        if create:
            self.ensure(key)
        store = self._store_for(key)
        return SessionRef(key, SessionEntry.model_validate(store.update(key.canonical, _merge(key, changes, touch))))

    async def aupdate_entry(
        self, key: SessionKey, changes: dict[str, Any], *, touch: bool = True, synced: bool = True
    ) -> SessionRef:
        """:meth:`update_entry` of an existing session from the event loop (no worker thread);
        ``synced=False`` as for :meth:`ensure` (a run's status and token counts at its end)."""
        stored = await self._store_for(key).aupdate(key.canonical, _merge(key, changes, touch), synced=synced)
        return SessionRef(key, SessionEntry.model_validate(stored))

    def reset(self, key: SessionKey) -> tuple[SessionRef, str | None]:
        """New sessionId for ``key``; the old transcript is archived. Returns (ref, archived path)."""
        store = self._store_for(key)
        old_id: str | None = None

        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            nonlocal old_id
            if current is None:
                raise NotFound(f"session not found: {key}")
            old_id = current["sessionId"]
            ts = now_ms()
            session_id = str(uuid.uuid4())
            fresh = {k: v for k, v in current.items() if k in _KEPT_ON_RESET}
            fresh.update(sessionId=session_id, sessionFile=f"{session_id}.jsonl", createdAt=ts, updatedAt=ts)
            return fresh

        entry = SessionEntry.model_validate(store.update(key.canonical, change))
        archived = self._archive(key.agent_id, old_id, "reset") if old_id else None
        self.transcript(key.agent_id, entry.session_id).create(entry.session_id, cwd=self.workspace)
        return SessionRef(key, entry), archived

    def delete(self, key: SessionKey, *, delete_transcript: bool = True) -> tuple[bool, list[str]]:
        if key == self.main_session_key(key.agent_id or None):
            raise InvalidRequest(f"Cannot delete the main session ({key}).")
        store = self._store_for(key)
        removed: dict[str, Any] | None = None

        def change(current: dict[str, Any] | None) -> None:
            nonlocal removed
            removed = current

        store.update(key.canonical, change)
        if removed is None:
            return False, []
        archived: list[str] = []
        if delete_transcript and (path := self._archive(key.agent_id, removed["sessionId"], "deleted")):
            archived.append(path)
        return True, archived

    def _archive(self, agent_id: str, session_id: str, suffix: str) -> str | None:
        path = self.sessions_dir(agent_id) / f"{session_id}.jsonl"
        archived = self.backend.archive(agent_id, session_id, path, f"{suffix}.{now_ms()}")
        self._transcripts.pop((agent_id, session_id), None)
        return archived


# fields a reset keeps: who the session is and how it is configured, not what it did
_KEPT_ON_RESET = frozenset(
    {
        "label",
        "displayName",
        "thinkingLevel",
        "verboseLevel",
        "fastMode",
        "reasoningLevel",
        "responseUsage",
        "elevatedLevel",
        "modelOverride",
        "providerOverride",
        "sendPolicy",
        "groupActivation",
        "deliveryContext",
        "spawnedBy",
        "spawnDepth",
        "parentSessionKey",
        "channel",
        "chatType",
    }
)


def _merge(key: SessionKey, changes: dict[str, Any], touch: bool) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    """The change that merges ``changes`` (None removes a field) into the existing entry."""

    def change(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise NotFound(f"session not found: {key}")
        merged = dict(current)
        for name, value in changes.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        if touch:
            merged["updatedAt"] = max(now_ms(), int(current.get("updatedAt", 0)))
        _check_entry(merged)  # never store an entry we could not read back
        return merged

    return change


def _check_entry(raw: dict[str, Any]) -> None:
    try:
        SessionEntry.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        raise InvalidRequest(f"invalid session field {where}: {first['msg']}") from None
