"""The next-turn injection queue: text plugins ask to add to a session's next prompt.

One JSON file per session key under the state dir (``injections/<sha256(key)>.json``, 0600),
changed only under the path's cross-process lock and replaced whole (temp + fsync + rename), so a
crash never leaves half a queue and two concurrent drains never both get an entry: every entry
is delivered at most once, and exactly once when a turn drains it.

Entries keep enqueue order (chronological across plugins); expired entries (``ttl_ms``) are
dropped on every access. Bounds: text ≤ 20,000 chars, metadata ≤ 16 KiB of JSON, ≤ 50 pending
per session. A second entry with the same (plugin id, idempotency key) while the first is still
pending is refused as ``duplicate``. Methods block on file I/O: call them from a worker thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, cast

from homarus.fs import atomic_write, ensure_private_dir
from homarus.locking import file_lock

__all__ = ["EnqueueResult", "Injection", "InjectionQueue", "Placement"]

log = logging.getLogger("homarus.plugins.injections")

Placement = Literal["prepend_context", "append_context"]
PLACEMENTS: Final = ("prepend_context", "append_context")
MAX_TEXT_CHARS: Final = 20_000
MAX_PENDING: Final = 50
MAX_METADATA_BYTES: Final = 16 * 1024
MAX_KEY_CHARS: Final = 512
FORMAT_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class Injection:
    """One queued text; ``to_json`` is the stored (and hook-facing) camelCase shape."""

    id: str
    plugin_id: str
    text: str
    placement: Placement
    created_at: int
    idempotency_key: str | None = None
    ttl_ms: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    plugin_name: str | None = None

    def expired(self, now_ms: int) -> bool:
        return self.ttl_ms is not None and now_ms >= self.created_at + self.ttl_ms

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pluginId": self.plugin_id,
            "pluginName": self.plugin_name,
            "text": self.text,
            "placement": self.placement,
            "createdAt": self.created_at,
            "idempotencyKey": self.idempotency_key,
            "ttlMs": self.ttl_ms,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Injection:
        placement = raw.get("placement", "prepend_context")
        if placement not in PLACEMENTS:
            raise ValueError(f"bad placement {placement!r}")
        return cls(
            id=str(raw["id"]),
            plugin_id=str(raw["pluginId"]),
            text=str(raw["text"]),
            placement=cast(Placement, placement),
            created_at=int(raw["createdAt"]),
            idempotency_key=raw.get("idempotencyKey"),
            ttl_ms=raw.get("ttlMs"),
            metadata=dict(raw.get("metadata") or {}),
            plugin_name=raw.get("pluginName"),
        )


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """``enqueued`` False with ``reason``: duplicate, invalid_input or capacity."""

    enqueued: bool
    id: str
    reason: str | None = None

    def to_json(self, session_key: str) -> dict[str, Any]:
        """The reference's answer shape ``{enqueued, id, sessionKey[, reason]}``."""
        out: dict[str, Any] = {"enqueued": self.enqueued, "id": self.id, "sessionKey": session_key}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


class InjectionQueue:
    """Per-session queues of next-turn injections, stored under ``store_dir``."""

    def __init__(
        self,
        store_dir: Path,
        *,
        clock: Callable[[], float] = time.time,
        max_pending: int = MAX_PENDING,
        max_text_chars: int = MAX_TEXT_CHARS,
        lock_timeout: float = 10.0,
    ) -> None:
        self.store_dir = store_dir
        self._clock = clock
        self.max_pending = max_pending
        self.max_text_chars = max_text_chars
        self.lock_timeout = lock_timeout

    def path_for(self, session_key: str) -> Path:
        digest = hashlib.sha256(session_key.encode("utf-8")).hexdigest()
        return self.store_dir / f"{digest}.json"

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- public operations ----------------------------------------------------------------------
    def enqueue(
        self,
        session_key: str,
        plugin_id: str,
        text: str,
        *,
        idempotency_key: str | None = None,
        placement: str = "prepend_context",
        ttl_ms: int | None = None,
        metadata: dict[str, Any] | None = None,
        plugin_name: str | None = None,
    ) -> EnqueueResult:
        """Queue ``text`` for the session's next turn (never raises for bad input: see ``reason``)."""
        new_id = str(uuid.uuid4())
        problem = _check_input(session_key, plugin_id, text, idempotency_key, placement, ttl_ms, metadata)
        if problem is None and len(text) > self.max_text_chars:
            problem = f"text longer than {self.max_text_chars} characters"
        if problem is not None:
            log.warning("plugin %s: injection refused: %s", plugin_id, problem)
            return EnqueueResult(False, new_id, "invalid_input")
        with self._locked(session_key) as (entries, save):
            if idempotency_key is not None:
                for e in entries:
                    if e.plugin_id == plugin_id and e.idempotency_key == idempotency_key:
                        return EnqueueResult(False, e.id, "duplicate")
            if len(entries) >= self.max_pending:
                return EnqueueResult(False, new_id, "capacity")
            entry = Injection(
                id=new_id,
                plugin_id=plugin_id,
                text=text,
                placement=cast(Placement, placement),
                created_at=self._now_ms(),
                idempotency_key=idempotency_key,
                ttl_ms=ttl_ms,
                metadata=dict(metadata or {}),
                plugin_name=plugin_name if isinstance(plugin_name, str) else None,
            )
            save([*entries, entry])
        return EnqueueResult(True, new_id)

    def drain(self, session_key: str) -> list[Injection]:
        """Remove and return every pending, unexpired entry, oldest first."""
        if not self.path_for(session_key).exists():
            # an empty queue has no file: nothing to lock for (every run drains, few have any);
            # one enqueued right after this check is the next run's, as if it came a moment later
            return []
        with self._locked(session_key) as (entries, save):
            if entries:
                save([])
            return entries

    def pending(self, session_key: str) -> list[Injection]:
        """The unexpired entries, without removing them."""
        path = self.path_for(session_key)
        now = self._now_ms()
        return [e for e in self._read(path) if not e.expired(now)]

    def clear(self, session_key: str) -> int:
        """Forget the session's queue (session reset or delete); returns how many were dropped."""
        with self._locked(session_key) as (entries, save):
            save([])
            return len(entries)

    # -- storage --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self, session_key: str) -> Iterator[tuple[list[Injection], Callable[[list[Injection]], None]]]:
        """Under the lock: the unexpired entries and a function that persists a new list."""
        path = self.path_for(session_key)
        ensure_private_dir(self.store_dir)
        with file_lock(path, timeout=self.lock_timeout):
            stored = self._read(path)
            now = self._now_ms()
            live = [e for e in stored if not e.expired(now)]

            def save(new: list[Injection]) -> None:
                self._write(path, session_key, new)

            if len(live) != len(stored):
                save(live)  # dropped expired ones even if the caller changes nothing
            yield live, save

    def _read(self, path: Path) -> list[Injection]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            data = json.loads(raw)
            return [Injection.from_json(e) for e in data["entries"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            aside = path.with_name(f"{path.name}.corrupt.{self._now_ms()}")
            log.error("injection queue %s is unreadable (%s); moved to %s", path, exc, aside.name)
            with contextlib.suppress(FileNotFoundError):
                path.rename(aside)
            return []

    def _write(self, path: Path, session_key: str, entries: list[Injection]) -> None:
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        body = {"version": FORMAT_VERSION, "sessionKey": session_key, "entries": [e.to_json() for e in entries]}
        atomic_write(path, json.dumps(body, ensure_ascii=False, separators=(",", ":")), mode=0o600)


def _check_input(
    session_key: str,
    plugin_id: str,
    text: str,
    idempotency_key: str | None,
    placement: str,
    ttl_ms: int | None,
    metadata: object,
) -> str | None:
    """What is wrong with an enqueue request, or None (plugins are untyped callers: check all)."""
    if not isinstance(session_key, str) or not session_key.strip() or len(session_key) > MAX_KEY_CHARS:
        return "invalid session key"
    if not isinstance(plugin_id, str) or not plugin_id.strip() or len(plugin_id) > MAX_KEY_CHARS:
        return "invalid plugin id"
    if not isinstance(text, str) or not text.strip():
        return "text must be a non-empty string"
    if idempotency_key is not None and (
        not isinstance(idempotency_key, str) or not idempotency_key or len(idempotency_key) > MAX_KEY_CHARS
    ):
        return "invalid idempotency key"
    if placement not in PLACEMENTS:
        return f"placement must be one of {', '.join(PLACEMENTS)}"
    if ttl_ms is not None and (isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms <= 0):
        return "ttl_ms must be a positive integer"
    if metadata is not None:
        if not isinstance(metadata, dict):
            return "metadata must be an object"
        try:
            size = len(json.dumps(metadata, ensure_ascii=False, allow_nan=False).encode("utf-8"))
        except (TypeError, ValueError):
            return "metadata must be JSON"
        if size > MAX_METADATA_BYTES:
            return f"metadata larger than {MAX_METADATA_BYTES} bytes"
    return None
