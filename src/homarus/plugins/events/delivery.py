"""The hooks of a run finishing and its reply going out: finalisation, the end of the run,
and each message and payload sent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homarus.plugins.events.context import HookContext

__all__ = [
    "AgentEndEvent",
    "BeforeAgentFinalizeEvent",
    "BeforeAgentFinalizeResult",
    "MessageSendingEvent",
    "MessageSendingResult",
    "MessageSentEvent",
    "ReplyPayloadSendingEvent",
    "ReplyPayloadSendingResult",
]

_CTX = field(default_factory=HookContext)


@dataclass(slots=True)
class BeforeAgentFinalizeEvent:
    """The run is about to accept a final answer."""

    run_id: str | None
    session_id: str | None
    last_assistant_message: str | None
    provider: str | None = None
    model: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeAgentFinalizeResult:
    """``action`` continue / revise / finalize (sticky); reasons concatenate; first ``retry`` used."""

    action: str = "continue"
    reason: str | None = None
    retry: dict[str, Any] | None = None


@dataclass(slots=True)
class AgentEndEvent:
    """A run ended (observation)."""

    run_id: str | None
    success: bool
    messages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    duration_ms: int | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class MessageSendingEvent:
    """An outbound reply before delivery: may rewrite or cancel."""

    to: str
    content: str
    reply_to_id: str | None = None
    thread_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    context: HookContext = _CTX


@dataclass(slots=True)
class MessageSendingResult:
    """``content`` chained; ``cancel`` sticky and terminal."""

    content: str | None = None
    cancel: bool | None = None
    cancel_reason: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class ReplyPayloadSendingEvent:
    """The normalised reply payload before a channel sends it."""

    payload: dict[str, Any]
    context: HookContext = _CTX


@dataclass(slots=True)
class ReplyPayloadSendingResult:
    """``payload`` chained; ``cancel`` terminal."""

    payload: dict[str, Any] | None = None
    cancel: bool | None = None
    reason: str | None = None


@dataclass(slots=True)
class MessageSentEvent:
    """A reply was delivered (or failed to be)."""

    to: str
    content: str
    success: bool
    message_id: str | None = None
    error: str | None = None
    session_key: str | None = None
    context: HookContext = _CTX
