"""The files an adapter reads to send and writes when it downloads: sizes, caps, private copies.

Every adapter checks an outbound file the same way (it exists, it is within the account's
``mediaMaxMb``) and stores an inbound one the same way (a name of safe characters under the
session's media directory, created with mode 0600, never over an existing file); a file at a
URL is fetched the same way (:func:`fetch_file`: the guarded egress, the cap, a platform token
sent only to the platform's own hosts).
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from homarus.channels.adapter import SendFailed
from homarus.channels.model import Attachment

__all__ = ["checked_size", "fetch_file", "kept_attachment", "named_by_type", "store_download"]


async def fetch_file(
    fetch: Callable[..., Awaitable[Any]] | None,
    url: str,
    *,
    api_root: str,
    max_bytes: int,
    size: int | None = None,
    token: str | None = None,
    token_domains: tuple[str, ...] = (),
) -> Any:
    """The answer (200, within ``max_bytes``) to a GET of ``url`` through the SSRF-guarded
    egress ``fetch``, the API root's origin trusted; SendFailed otherwise (permanent when too large
    or not a URL). ``token`` goes as a Bearer only to the API root's host or a host in or under
    ``token_domains``, never to a URL elsewhere."""
    if fetch is None:
        raise SendFailed("the account is not running")
    if size is not None and size > max_bytes:
        raise SendFailed(f"too large ({size // 1_048_576} MB)", permanent=True)
    parts, root = urlsplit(url), urlsplit(api_root)
    if parts.scheme not in ("http", "https"):
        raise SendFailed("the file has no usable URL", permanent=True)
    host = (parts.hostname or "").lower()
    ours = parts.netloc == root.netloc or any(host == d or host.endswith("." + d) for d in token_domains)
    result = await fetch(
        url,
        max_bytes=max_bytes + 1,
        timeout_s=120.0,
        trusted_origin=f"{root.scheme}://{root.netloc}",
        headers={"authorization": f"Bearer {token}"} if token and ours else None,
    )
    if result.status != 200:
        raise SendFailed(f"file download answered HTTP {result.status}")
    if result.truncated or len(result.body) > max_bytes:
        raise SendFailed(f"too large (over {max_bytes // 1_048_576} MB)", permanent=True)
    return result


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


async def kept_attachment(
    dest_dir: Path, attachment: Attachment, body: bytes, *, name: str | None = None, mime: str | None = None
) -> Attachment:
    """``attachment`` once downloaded: ``body`` stored under ``dest_dir`` (:func:`store_download`)
    as ``name`` (default: its file name, else its kind with ``.bin``), of type ``mime`` (default:
    the one it arrived with)."""
    name = name or attachment.file_name or f"{attachment.kind}.bin"
    dest = await store_download(dest_dir, name, body)
    return Attachment(attachment.kind, attachment.ref, mime or attachment.mime_type, name, len(body), str(dest))


def named_by_type(attachment: Attachment, mime: str | None) -> str:
    """The attachment's file name, else its kind with the extension of ``mime`` (``.bin``)."""
    ext = (mimetypes.guess_extension(mime.split(";")[0].strip()) if mime else None) or ".bin"
    return attachment.file_name or f"{attachment.kind}{ext}"


def _file_size(path: Path) -> int | None:
    return path.stat().st_size if path.is_file() else None


def _write_private(dest: Path, body: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(body)
