"""The host's exec approvals file ``$STATE/exec-approvals.json`` (security.md §4.1, §4.4).

It holds the host's ``security``, ``ask`` and ``askFallback`` and the allow-always patterns
operators granted (one per approved segment: the resolved real path of its inner executable).
The effective policy is the stricter of the config's and this file's (:func:`effective_policy`).

File safety: the directory is created 0700, the file written 0600 (atomically, under a
cross-process lock). Symlinked directories or files and hard-linked files (``st_nlink > 1``) are
refused (:class:`UnsafeApprovalsFile`); the file is opened with ``O_NOFOLLOW`` and its identity
checked with ``fstat``. A missing file means the defaults; an unreadable or malformed one is an
error (callers must treat it as ``deny``).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, Protocol, cast

from homarus.errors import ConfigError
from homarus.fs import atomic_write
from homarus.locking import file_lock

__all__ = [
    "FILE_NAME",
    "STRICT_POLICY",
    "ApprovalsSource",
    "ExecApprovalsFile",
    "ExecPolicySettings",
    "FileApprovals",
    "UnsafeApprovalsFile",
    "add_patterns",
    "approvals_path",
    "effective_policy",
    "load",
    "parse",
    "save",
    "with_patterns",
]

Security = Literal["deny", "allowlist", "full"]
Ask = Literal["off", "on-miss", "always"]
FILE_NAME: Final = "exec-approvals.json"
VERSION: Final = 1
MAX_PATTERNS: Final = 1000
_SECURITY_RANK: Final[dict[str, int]] = {"deny": 0, "allowlist": 1, "full": 2}
_ASK_RANK: Final[dict[str, int]] = {"always": 0, "on-miss": 1, "off": 2}  # lower = stricter


class UnsafeApprovalsFile(ConfigError):
    """The approvals file or its directory is a symlink, a hard link or not a regular file."""


@dataclass(frozen=True, slots=True)
class ExecPolicySettings:
    security: Security = "full"
    ask: Ask = "off"
    ask_fallback: Security = "deny"


#: what a caller should use when the file cannot be trusted (§4.1: deny/always/deny)
STRICT_POLICY: Final = ExecPolicySettings("deny", "always", "deny")


@dataclass(frozen=True, slots=True)
class ExecApprovalsFile:
    policy: ExecPolicySettings = field(default_factory=ExecPolicySettings)
    #: allow-always patterns, oldest first
    patterns: tuple[str, ...] = ()
    added_at_ms: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "security": self.policy.security,
            "ask": self.policy.ask,
            "askFallback": self.policy.ask_fallback,
            "allowlist": [{"pattern": p, "addedAtMs": self.added_at_ms.get(p)} for p in self.patterns],
        }


def approvals_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


def _stricter_security(a: Security, b: Security) -> Security:
    return a if _SECURITY_RANK[a] <= _SECURITY_RANK[b] else b


def effective_policy(config_policy: ExecPolicySettings, file_policy: ExecPolicySettings) -> ExecPolicySettings:
    """The stricter of both, field by field (deny < allowlist < full; always > on-miss > off)."""
    ask = config_policy.ask if _ASK_RANK[config_policy.ask] <= _ASK_RANK[file_policy.ask] else file_policy.ask
    return ExecPolicySettings(
        security=_stricter_security(config_policy.security, file_policy.security),
        ask=ask,
        ask_fallback=_stricter_security(config_policy.ask_fallback, file_policy.ask_fallback),
    )


def _check_dir(directory: Path) -> None:
    if directory.is_symlink():
        raise UnsafeApprovalsFile(f"refusing symlinked approvals directory {directory}")
    if directory.exists() and not directory.is_dir():
        raise UnsafeApprovalsFile(f"approvals directory {directory} is not a directory")


def _check_file(st: os.stat_result, path: Path) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeApprovalsFile(f"refusing symlinked approvals file {path}")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeApprovalsFile(f"approvals file {path} is not a regular file")
    if st.st_nlink > 1:
        raise UnsafeApprovalsFile(f"refusing hard-linked approvals file {path}")


def _choice(data: dict[str, Any], key: str, allowed: dict[str, int], default: str, path: Path) -> str:
    value = data.get(key, default)
    if value not in allowed:
        raise ConfigError(f"{path}: invalid {key} {value!r}")
    return cast(str, value)


def _parse(raw: bytes, path: Path) -> ExecApprovalsFile:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: malformed approvals file: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the approvals file must hold a JSON object")
    defaults = ExecPolicySettings()
    policy = ExecPolicySettings(
        security=cast(Security, _choice(data, "security", _SECURITY_RANK, defaults.security, path)),
        ask=cast(Ask, _choice(data, "ask", _ASK_RANK, defaults.ask, path)),
        ask_fallback=cast(Security, _choice(data, "askFallback", _SECURITY_RANK, defaults.ask_fallback, path)),
    )
    entries = data.get("allowlist", [])
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: allowlist must be a list")
    patterns: list[str] = []
    added: dict[str, int] = {}
    for entry in entries:
        pattern = entry.get("pattern") if isinstance(entry, dict) else entry
        if not isinstance(pattern, str) or not pattern:
            raise ConfigError(f"{path}: invalid allowlist entry {entry!r}")
        if pattern not in added:
            patterns.append(pattern)
            at = entry.get("addedAtMs") if isinstance(entry, dict) else None
            added[pattern] = at if isinstance(at, int) else 0
    return ExecApprovalsFile(policy, tuple(patterns), added)


def load(path: Path) -> ExecApprovalsFile:
    """The approvals file at ``path`` (defaults when missing); refuses unsafe files."""
    raw = _read(path)
    return ExecApprovalsFile() if raw is None else _parse(raw, path)


def _read(path: Path) -> bytes | None:
    """The file's bytes (None when missing), read without following links; refuses unsafe files."""
    _check_dir(path.parent)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeApprovalsFile(f"refusing symlinked approvals file {path}") from None
        raise ConfigError(f"cannot read approvals file {path}: {exc}") from None
    try:
        _check_file(os.fstat(fd), path)
        chunks: list[bytes] = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _write(path: Path, approvals: ExecApprovalsFile) -> None:
    with contextlib.suppress(FileNotFoundError):
        _check_file(os.lstat(path), path)
    atomic_write(path, json.dumps(approvals.to_json(), indent=2) + "\n", mode=0o600)


def _prepare_dir(path: Path) -> None:
    _check_dir(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)


def save(path: Path, approvals: ExecApprovalsFile) -> None:
    """Replace the approvals file (locked, atomic, 0600 in a 0700 directory)."""
    _prepare_dir(path)
    with file_lock(path):
        _write(path, approvals)


def with_patterns(current: ExecApprovalsFile, patterns: list[str], now_ms: int | None = None) -> ExecApprovalsFile:
    """``current`` with allow-always ``patterns`` added (the oldest dropped past ``MAX_PATTERNS``)."""
    stamp = now_ms if now_ms is not None else int(time.time() * 1000)
    merged = list(current.patterns)
    added = dict(current.added_at_ms)
    for pattern in patterns:
        if pattern and pattern not in added:
            merged.append(pattern)
            added[pattern] = stamp
    while len(merged) > MAX_PATTERNS:
        added.pop(merged.pop(0), None)
    return replace(current, patterns=tuple(merged), added_at_ms=added)


def add_patterns(path: Path, patterns: list[str], *, now_ms: int | None = None) -> ExecApprovalsFile:
    """Persist allow-always ``patterns`` (read-modify-write under the lock); returns the new file."""
    _prepare_dir(path)
    with file_lock(path):
        updated = with_patterns(load(path), patterns, now_ms)
        _write(path, updated)
    return updated


class ApprovalsSource(Protocol):
    """Where the host's approvals live: this file, or the row every gateway of a cluster shares
    (``pg_exec_approvals``). Blocking: callers off the event loop."""

    #: where, for ``exec.approvals.get`` (never a secret)
    location: str

    def load(self) -> ExecApprovalsFile: ...
    def add_patterns(self, patterns: list[str], *, now_ms: int | None = None) -> ExecApprovalsFile: ...

    def read(self) -> tuple[bytes | None, ExecApprovalsFile]:
        """The stored document as it is (None: there is none) and what it says (the defaults
        without one), from one read."""
        ...


class FileApprovals:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)

    def load(self) -> ExecApprovalsFile:
        return load(self.path)

    def add_patterns(self, patterns: list[str], *, now_ms: int | None = None) -> ExecApprovalsFile:
        return add_patterns(self.path, patterns, now_ms=now_ms)

    def read(self) -> tuple[bytes | None, ExecApprovalsFile]:
        raw = _read(self.path)
        return raw, ExecApprovalsFile() if raw is None else _parse(raw, self.path)


def parse(raw: bytes, where: str) -> ExecApprovalsFile:
    """A stored approvals document (the file's JSON) read and checked; ``where`` names it in errors."""
    return _parse(raw, Path(where))
