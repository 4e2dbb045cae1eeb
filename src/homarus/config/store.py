"""The live configuration and its safe rewrite (validate, then atomic replace)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homarus.config.backups import write_keeping_backup
from homarus.config.loader import LoadedConfig, StatePaths, load_config, parse_config_text, resolve_config
from homarus.config.redact import restore_redacted
from homarus.config.secrets import merged_env
from homarus.errors import ConfigError, InvalidRequest

__all__ = ["ConfigStore", "WriteResult", "delete_path", "merge_patch"]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch; arrays of objects that all carry an ``id`` are merged by id."""
    if not isinstance(patch, dict):
        if isinstance(patch, list) and isinstance(target, list) and _all_have_ids(patch) and _all_have_ids(target):
            merged = {item["id"]: item for item in target}
            order = [item["id"] for item in target]
            for item in patch:
                if item["id"] in merged:
                    merged[item["id"]] = merge_patch(merged[item["id"]], item)
                else:
                    merged[item["id"]] = merge_patch({}, item)
                    order.append(item["id"])
            return [merged[i] for i in order]
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _all_have_ids(items: list[Any]) -> bool:
    # Only scalar ids can key the merge: an object or array id (bad input) must not crash it.
    return bool(items) and all(isinstance(i, dict) and isinstance(i.get("id"), str | int) for i in items)


@dataclass(frozen=True, slots=True)
class WriteResult:
    loaded: LoadedConfig
    noop: bool
    restart_required: tuple[str, ...]


# Keys whose change only takes effect when the gateway restarts (the socket is already bound, the
# database joined at start).
_RESTART_KEYS = (("gateway", "port"), ("gateway", "bind"), ("storage",))


class ConfigStore:
    """Holds the current config; writes are validated whole before the file is replaced."""

    def __init__(self, paths: StatePaths, loaded: LoadedConfig, env: Mapping[str, str] | None = None) -> None:
        self.paths = paths
        self.current = loaded
        self._env = env

    @classmethod
    def open(cls, paths: StatePaths, env: Mapping[str, str] | None = None) -> ConfigStore:
        return cls(paths, load_config(paths, env), env)

    def _resolve_env(self) -> Mapping[str, str]:
        return merged_env(self.paths.state_dir) if self._env is None else self._env

    def reload(self) -> LoadedConfig:
        """The file and the secrets it refers to read again (raises ConfigError, keeping the
        current config, when the file no longer validates)."""
        self.current = load_config(self.paths, self._env)
        return self.current

    def check_base_hash(self, base_hash: str | None) -> None:
        """A write based on ``base_hash`` (the hash a client read) may go ahead: the file is as the
        client saw it. The file itself is hashed, so an edit by another writer is caught too."""
        try:
            raw = self.paths.config_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return  # no file yet: nothing to protect
        if base_hash is None:
            raise InvalidRequest("config base hash required; re-run config.get and retry")
        if base_hash != self.text_hash(raw):
            raise InvalidRequest("config changed since last load; re-run config.get and retry")

    def replace(self, data: dict[str, Any]) -> WriteResult:
        """Validate ``data`` as the whole new file content and write it atomically."""
        data = restore_redacted(data, self.current.parsed or {})
        resolve_config(data, self._resolve_env(), path=str(self.paths.config_path))  # fail before writing
        if self.current.parsed == data:
            return WriteResult(self.current, noop=True, restart_required=())
        return self._write(json.dumps(data, indent=2, ensure_ascii=False) + "\n", data)

    def restore(self, backup: Path) -> WriteResult:
        """Bring a kept version back (validated like any write; the current file is kept first)."""
        try:
            raw = backup.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the backup: {exc.strerror or exc}", path=str(backup)) from None
        return self.replace_raw(raw, source=str(backup))

    def replace_raw(self, raw: str, *, source: str | None = None) -> WriteResult:
        """Write ``raw`` byte for byte (its comments kept) once it parses and validates."""
        where = source or str(self.paths.config_path)
        data = parse_config_text(raw, path=where)
        resolve_config(data, self._resolve_env(), path=where)
        if self.current.raw == raw:
            return WriteResult(self.current, noop=True, restart_required=())
        return self._write(raw, data)

    def _write(self, text: str, data: dict[str, Any]) -> WriteResult:
        """Write a validated ``text`` (whose content is ``data``), keeping the replaced file."""
        before = self.current.parsed or {}
        write_keeping_backup(self.paths.config_path, text)
        self.current = load_config(self.paths, self._env)
        restart = tuple(".".join(k) for k in _RESTART_KEYS if _dig(before, k) != _dig(data, k))
        return WriteResult(self.current, noop=False, restart_required=restart)

    def replace_text(self, raw: str) -> WriteResult:
        return self.replace(parse_config_text(raw, path=str(self.paths.config_path)))

    def patch(self, patch: Any) -> WriteResult:
        if not isinstance(patch, dict):
            raise InvalidRequest("config.patch raw must be an object")
        return self.replace(merge_patch(self.current.parsed or {}, patch))

    def set_path(self, dotted: str, value: Any) -> WriteResult:
        keys = [k for k in dotted.split(".") if k]
        if not keys:
            raise ConfigError("empty config key")
        data = json.loads(json.dumps(self.current.parsed or {}))
        node = data
        for k in keys[:-1]:
            nxt = node.get(k)
            if not isinstance(nxt, dict):
                nxt = {}
                node[k] = nxt
            node = nxt
        if value is None:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
        return self.replace(data)

    @staticmethod
    def text_hash(raw: str) -> str:
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _dig(data: Any, keys: tuple[str, ...]) -> Any:
    for k in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(k)
    return data


def delete_path(data: Any, path: tuple[str | int, ...]) -> bool:
    """Remove the key or list item at ``path`` (a validation error's ``loc``); whether it was there."""
    node: Any = data
    for part in path[:-1]:
        if isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            continue
        if not (isinstance(node, dict) and part in node):
            return False
        node = node[part]
    last = path[-1] if path else None
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    if isinstance(node, list) and isinstance(last, int) and last < len(node):
        node.pop(last)
        return True
    return False
