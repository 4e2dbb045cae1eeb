"""The files an adapter reads to send and writes when it downloads: sizes, caps, private copies.

Every adapter checks an outbound file the same way (it exists, it is within the account's
``mediaMaxMb``) and stores an inbound one the same way (a name of safe characters under the
session's media directory, created with mode 0600, never over an existing file).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from homarus.channels.adapter import SendFailed

__all__ = ["checked_size", "store_download"]


async def checked_size(path: Path, limit_bytes: int) -> int:
    """The size of the file to send; SendFailed (permanent) when it is missing or over the limit."""
    size = await asyncio.to_thread(_file_size, path)
    if size is None:
        raise SendFailed(f"file not found: {path.name}", permanent=True)
    if size > limit_bytes:
        raise SendFailed(
            f"{path.name} is {size // 1_048_576} MB; the limit is {limit_bytes // 1_048_576} MB", permanent=True
        )
    return size


async def store_download(dest_dir: Path, name: str, body: bytes) -> Path:
    """``body`` written to a new private file under ``dest_dir``, named after ``name``."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[-100:] or "file"
    dest = dest_dir / f"{int(time.time() * 1000)}-{safe}"
    await asyncio.to_thread(_write_private, dest, body)
    return dest


def _file_size(path: Path) -> int | None:
    return path.stat().st_size if path.is_file() else None


def _write_private(dest: Path, body: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(body)
