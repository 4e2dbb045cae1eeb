"""Files people send in chats: fetched (capped, through the SSRF-guarded client) into the agent's
workspace, and handed to the model.

Files land in ``<workspace>/media/<session>/`` (0600), so the file tools can open them. Images up
to 5 MB also go to the model as image parts (a vision model sees them; the path is given either
way); other files are named by their workspace path, with their type and size. A file over the
channel's ``mediaMaxMb`` is not fetched: the sender is told, politely, and the rest of the
message goes on. Someone other than an owner has a quota: their session's media directory holds at
most ``STRANGER_MEDIA_QUOTA`` bytes, so a stranger cannot fill the owner's disk.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from homarus.channels.adapter import SendFailed
from homarus.messages import ImageContent

if TYPE_CHECKING:
    from homarus.channels.model import InboundMessage
    from homarus.usecases.chat.ports import Replier

__all__ = ["MediaResult", "fetch_media"]

log = logging.getLogger("homarus.channels")

IMAGE_TO_MODEL_MAX: Final = 5 * 1024 * 1024
STRANGER_MEDIA_QUOTA: Final = 200 * 1024 * 1024
TOO_LARGE: Final = "Sorry, that {kind} is too large for me ({size} MB; the limit is {limit} MB)."


@dataclass(slots=True)
class MediaResult:
    #: per message id, lines for the prompt
    notes: dict[str, list[str]] = field(default_factory=dict)
    images: list[ImageContent] = field(default_factory=list)


def _mb(size: int) -> str:
    return f"{size / 1_048_576:.1f}".rstrip("0").rstrip(".")


async def fetch_media(
    service: Replier,
    messages: list[InboundMessage],
    session_key: str,
    workspace: Path,
    *,
    owner: bool = True,
) -> MediaResult:
    """Fetch the batch's attachments into ``workspace`` (the agent's) for the session's turn."""
    out = MediaResult()
    slug = re.sub(r"[^a-z0-9_.-]+", "-", session_key.lower()).strip("-")[:80] or "session"
    dest = workspace / "media" / slug
    used = 0 if owner else await asyncio.to_thread(_bytes_in, dest)
    for msg in messages:
        if not msg.attachments:
            continue
        settings = service.manager.settings(msg.channel, msg.account_id)
        cap = int(float(settings.get("media_max_mb") or 100) * 1024 * 1024)
        account = service.manager.account(msg.channel, msg.account_id)
        notes = out.notes.setdefault(msg.message_id, [])
        for attachment in msg.attachments:
            limit = cap if owner else max(0, min(cap, STRANGER_MEDIA_QUOTA - used))
            if limit <= 0:
                notes.append(f"[{attachment.kind} not accepted: this sender's media quota is used up]")
                continue
            if attachment.size is not None and attachment.size > limit:
                await _too_large(service, msg, attachment.kind, attachment.size, limit)
                notes.append(
                    f"[{attachment.kind} not accepted: {_mb(attachment.size)} MB is over the {_mb(limit)} MB limit]"
                )
                continue
            if account is None:
                notes.append(f"[{attachment.kind} could not be fetched: the channel account is not running]")
                continue
            try:
                saved = await account.download(attachment, dest, limit)
            except SendFailed as exc:
                if exc.permanent and "too large" in exc.message:
                    await _too_large(service, msg, attachment.kind, attachment.size or limit + 1, limit)
                notes.append(f"[{attachment.kind} could not be fetched: {exc.message}]")
                continue
            except Exception as exc:
                log.exception("channels: downloading an attachment of %s failed", msg.message_id)
                notes.append(f"[{attachment.kind} could not be fetched: {type(exc).__name__}]")
                continue
            assert saved.path is not None
            path = Path(saved.path)
            shown = path.relative_to(workspace) if path.is_relative_to(workspace) else path
            size = saved.size or 0
            used += size
            notes.append(f"[{saved.kind} received: {shown} ({saved.mime_type or 'unknown type'}, {_mb(size)} MB)]")
            if saved.kind == "image" and size <= IMAGE_TO_MODEL_MAX:
                data = base64.b64encode(await asyncio.to_thread(path.read_bytes)).decode("ascii")
                out.images.append(ImageContent(data, saved.mime_type or "image/jpeg"))
    return out


def _bytes_in(directory: Path) -> int:
    try:
        return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
    except OSError:
        return 0


async def _too_large(service: Replier, msg: InboundMessage, kind: str, size: int, limit: int) -> None:
    text = TOO_LARGE.format(kind="file" if kind == "document" else kind, size=_mb(size), limit=_mb(limit))
    key = f"toolarge:{msg.channel}:{msg.account_id}:{msg.chat_id}:{msg.message_id}"
    await service.reply(msg.target, text, key=key, markdown=False)
