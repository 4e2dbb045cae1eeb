"""What one agent run is asked to do: :class:`RunRequest`, and how its message becomes content."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from homarus.messages import ImageContent, TextContent
from homarus.sessions.keys import SessionKey

__all__ = ["QueueMode", "RunRequest", "request_content"]

QueueMode = Literal["steer", "followup", "collect", "interrupt"]


@dataclass(kw_only=True)
class RunRequest:
    run_id: str
    session_key: SessionKey
    message: str
    images: list[ImageContent] = field(default_factory=list)
    model: str | None = None
    thinking: str | None = None
    timeout_s: float | None = None
    lane: str = "main"
    extra_system_prompt: str | None = None
    channel: str | None = None
    queue_mode: QueueMode | None = None
    trigger: str = "user"
    #: who asked, for the audit trail (a connection's client, a hook path, a cron job)
    origin: dict[str, Any] | None = None


def request_content(req: RunRequest) -> str | list[TextContent | ImageContent]:
    """The user message's content: the text alone, or the text and its images."""
    if not req.images:
        return req.message
    return [TextContent(req.message), *req.images]
