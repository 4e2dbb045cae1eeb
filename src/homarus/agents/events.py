"""Events of the agent loop (what happened, in order), consumed by the runtime and the gateway."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from homarus.messages import AssistantMessage, Message, StreamEvent, ToolResultMessage

__all__ = [
    "AgentEnd",
    "AgentStart",
    "Fallback",
    "LoopEvent",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "Retry",
    "ToolEnd",
    "ToolStart",
    "ToolUpdate",
    "TurnEnd",
    "TurnStart",
]


@dataclass(frozen=True, slots=True)
class AgentStart:
    pass


@dataclass(frozen=True, slots=True)
class TurnStart:
    pass


@dataclass(frozen=True, slots=True)
class MessageStart:
    message: Message


@dataclass(frozen=True, slots=True)
class MessageUpdate:
    """An assistant message grew; ``message`` is the partial message so far."""

    message: AssistantMessage
    event: StreamEvent


@dataclass(frozen=True, slots=True)
class MessageEnd:
    message: Message


@dataclass(frozen=True, slots=True)
class ToolStart:
    tool_call_id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolUpdate:
    tool_call_id: str
    name: str
    partial: Any


@dataclass(frozen=True, slots=True)
class ToolEnd:
    tool_call_id: str
    name: str
    result: ToolResultMessage
    duration_ms: int


@dataclass(frozen=True, slots=True)
class TurnEnd:
    message: AssistantMessage
    results: list[ToolResultMessage]


@dataclass(frozen=True, slots=True)
class AgentEnd:
    messages: list[Message]


@dataclass(frozen=True, slots=True)
class Retry:
    attempt: int
    max_attempts: int
    delay_ms: int
    error: str


@dataclass(frozen=True, slots=True)
class Fallback:
    from_model: str
    to_model: str
    reason: str


LoopEvent: TypeAlias = (
    AgentStart
    | TurnStart
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolStart
    | ToolUpdate
    | ToolEnd
    | TurnEnd
    | AgentEnd
    | Retry
    | Fallback
)
