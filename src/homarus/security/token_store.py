"""The gateway token generated on first start and kept 0600 in the state dir."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from homarus.errors import ConfigError
from homarus.fs import atomic_write

__all__ = ["generate_token", "load_or_create_token", "read_token"]


def generate_token() -> str:
    return secrets.token_urlsafe(32)


def read_token(path: Path) -> str | None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        # Someone loosened the file: tighten it rather than keep serving a leaked-looking secret.
        os.chmod(path, 0o600)
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < 8:
        raise ConfigError("stored gateway token is empty or too short; delete it to regenerate", path=str(path))
    return token


def load_or_create_token(path: Path) -> tuple[str, bool]:
    """Return (token, created)."""
    existing = read_token(path)
    if existing is not None:
        return existing, False
    token = generate_token()
    atomic_write(path, token + "\n", mode=0o600)
    return token, True
