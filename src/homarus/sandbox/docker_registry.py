"""The registry of the Docker backend's containers: ``$STATE/sandbox/containers.json``.

It is what :meth:`~homarus.sandbox.docker.DockerSandbox.prune` walks and where "used recently"
(the hot window) is read from. Written with :func:`homarus.fs.atomic_write` (0600, in a 0700
dir); a corrupt file, or a malformed entry, is read as absent rather than blocking the sandbox.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homarus.fs import atomic_write, ensure_private_dir

__all__ = ["ContainerRegistry", "RegistryEntry"]

log = logging.getLogger("homarus.sandbox.docker")


@dataclass(slots=True)
class RegistryEntry:
    name: str
    scope_key: str
    created_at_ms: int
    last_used_at_ms: int
    config_hash: str | None = None
    image: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scopeKey": self.scope_key,
            "createdAtMs": self.created_at_ms,
            "lastUsedAtMs": self.last_used_at_ms,
            "configHash": self.config_hash,
            "image": self.image,
        }

    @classmethod
    def from_json(cls, raw: object) -> RegistryEntry | None:
        if not isinstance(raw, dict):
            return None
        name, key = raw.get("name"), raw.get("scopeKey")
        created, used = raw.get("createdAtMs"), raw.get("lastUsedAtMs")
        if not isinstance(name, str) or not isinstance(key, str):
            return None
        if type(created) is not int or type(used) is not int:
            return None
        digest, image = raw.get("configHash"), raw.get("image")
        return cls(
            name,
            key,
            created,
            used,
            digest if isinstance(digest, str) else None,
            image if isinstance(image, str) else None,
        )


class ContainerRegistry:
    """The containers this gateway created, by name, in one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, RegistryEntry]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("sandbox registry %s is unreadable (%s): starting from an empty one", self.path, exc)
            return {}
        items = raw.get("entries") if isinstance(raw, dict) else None
        entries: dict[str, RegistryEntry] = {}
        for item in items if isinstance(items, list) else []:
            entry = RegistryEntry.from_json(item)
            if entry is not None:
                entries[entry.name] = entry
        return entries

    def save(self, entries: Mapping[str, RegistryEntry]) -> None:
        ensure_private_dir(self.path.parent)
        body = {"version": 1, "entries": [e.to_json() for e in sorted(entries.values(), key=lambda e: e.name)]}
        atomic_write(self.path, json.dumps(body, indent=2) + "\n")
