"""Where a channel account's secret comes from: its config key, a token file, or (the default
account only) an environment variable — the same rule for every bundled channel.

``source`` says where, never what (``channels list``, ``channels.status``); ``read`` returns the
secret to the account that connects with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from homarus.channels.adapter import SendFailed

__all__ = ["read", "source"]

Source = Literal["config", "file", "env", "missing", "none"]


def source(
    settings: Mapping[str, Any],
    account_id: str,
    key: str,
    env_var: str,
    env: Mapping[str, str] | None = None,
    *,
    file_key: str | None = "token_file",
) -> Source:
    """Where the secret comes from; with ``env``, whether the variable is set (``missing``).
    ``file_key``: the config key naming a file that holds it (None: it cannot be in a file)."""
    if settings.get(key) is not None:
        return "config"
    if file_key is not None and settings.get(file_key):
        return "file"
    if account_id != "default":
        return "none"
    return "env" if env is None or env.get(env_var) else "missing"


def read(
    settings: Mapping[str, Any],
    account_id: str,
    env: Mapping[str, str],
    *,
    key: str,
    env_var: str,
    where: str,
    file_key: str | None = "token_file",
    what: str = "bot token",
) -> str:
    """The secret; SendFailed (permanent) saying what to set when there is none. ``where``: the
    config key to name (``channels.discord.token``)."""
    secret = settings.get(key)
    if secret is not None:
        return str(secret.get_secret_value() if hasattr(secret, "get_secret_value") else secret).strip()
    token_file = settings.get(file_key) if file_key is not None else None
    if token_file:
        path = Path(str(token_file)).expanduser()
        if path.is_symlink() or not path.is_file():
            raise SendFailed(f"tokenFile {path} must be a regular file (not a symlink)", permanent=True)
        return path.read_text(encoding="utf-8").strip()
    value = env.get(env_var) if account_id == "default" else None
    if value:
        return value.strip()
    raise SendFailed(f"no {what}: set {where} (or {env_var})", permanent=True)
