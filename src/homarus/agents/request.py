"""What one agent run is asked to do: :class:`RunRequest`, and how its message becomes content."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from homarus.messages import ImageContent, TextContent
from homarus.sessions.keys import SessionKey, parse_session_key

if TYPE_CHECKING:
    from homarus.agents.runs import RunOutcome

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
    #: continue this run from what its transcript already holds (after a restart) instead of
    #: starting it afresh: recorded tool calls are not executed again
    resume: bool = False
    #: other accepted runs whose messages this run carries (a ``collect`` batch): they start with it
    joined: list[str] = field(default_factory=list)
    #: the session key whose sandbox and tool policy apply, when not the session's own: a chat
    #: message from anyone but an owner runs under a non-main key even in the main session
    policy_key: SessionKey | None = None
    #: the entry point delivers the reply itself (a chat channel: its outbox, its own
    #: ``message_received`` / ``message_sending`` / ``message_sent`` hooks per message)
    external_delivery: bool = False
    #: fields the session entry takes when the run starts (a chat's delivery context), written with
    #: the run's own "running" update rather than as a separate rewrite of the session store
    session_fields: dict[str, Any] | None = None
    #: called with the outcome as the run ends, on the event loop, just before the run's last
    #: write (its session entry): what the caller queues for its own writers here rides in the
    #: same trip to the file-work lane (the run journal's end record); never in ``to_json``
    on_end: Callable[[RunOutcome], None] | None = field(default=None, compare=False, repr=False)

    @property
    def trust(self) -> str:
        """Whose policy the run carries: ``owner`` (an operator, an owner, the gateway itself) or the
        non-owner policy key it runs under. Only runs of the same trust share a turn."""
        return self.policy_key.canonical if self.policy_key is not None else "owner"

    def to_json(self) -> dict[str, Any]:
        """What the run journal keeps so the run can be submitted again after a restart."""
        out: dict[str, Any] = {
            "runId": self.run_id,
            "sessionKey": self.session_key.canonical,
            "message": self.message,
            "lane": self.lane,
            "trigger": self.trigger,
        }
        optional = {
            "images": [i.to_json() for i in self.images] or None,
            "model": self.model,
            "thinking": self.thinking,
            "timeoutS": self.timeout_s,
            "extraSystemPrompt": self.extra_system_prompt,
            "channel": self.channel,
            "queueMode": self.queue_mode,
            "origin": self.origin,
            "policyKey": self.policy_key.canonical if self.policy_key is not None else None,
            "externalDelivery": True if self.external_delivery else None,
            "sessionFields": self.session_fields or None,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], session_key: SessionKey, *, resume: bool = False) -> RunRequest:
        """The request ``to_json`` kept (``session_key`` resolved again by the caller)."""
        images = [ImageContent(i["data"], i["mimeType"]) for i in data.get("images") or []]
        return cls(
            run_id=str(data["runId"]),
            session_key=session_key,
            message=str(data["message"]),
            images=images,
            model=data.get("model"),
            thinking=data.get("thinking"),
            timeout_s=data.get("timeoutS"),
            lane=str(data.get("lane") or "main"),
            extra_system_prompt=data.get("extraSystemPrompt"),
            channel=data.get("channel"),
            queue_mode=data.get("queueMode"),
            trigger=str(data.get("trigger") or "user"),
            origin=data.get("origin"),
            resume=resume,
            policy_key=parse_session_key(str(data["policyKey"])) if data.get("policyKey") else None,
            external_delivery=bool(data.get("externalDelivery")),
            session_fields=data.get("sessionFields") if isinstance(data.get("sessionFields"), dict) else None,
        )


def request_content(req: RunRequest) -> str | list[TextContent | ImageContent]:
    """The user message's content: the text alone, or the text and its images."""
    if not req.images:
        return req.message
    return [TextContent(req.message), *req.images]
