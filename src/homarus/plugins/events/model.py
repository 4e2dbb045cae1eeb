"""The hooks around each model call: its start and end, and the exact input and output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homarus.plugins.events.context import HookContext

__all__ = [
    "LlmInputEvent",
    "LlmOutputEvent",
    "ModelCallEndedEvent",
    "ModelCallStartedEvent",
]

_CTX = field(default_factory=HookContext)


@dataclass(slots=True)
class ModelCallStartedEvent:
    """A provider request is about to be sent (no content)."""

    run_id: str
    call_id: str
    provider: str
    model: str
    api: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class ModelCallEndedEvent:
    """A provider request finished (no content)."""

    run_id: str
    call_id: str
    provider: str
    model: str
    duration_ms: int
    outcome: str
    failure_kind: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class LlmInputEvent:
    """What the model is about to receive (conversation access)."""

    run_id: str
    session_id: str | None
    provider: str
    model: str
    system_prompt: str
    prompt: str
    history_messages: list[dict[str, Any]] = field(default_factory=list)
    context: HookContext = _CTX


@dataclass(slots=True)
class LlmOutputEvent:
    """What the model produced in one attempt (conversation access)."""

    run_id: str
    session_id: str | None
    provider: str
    model: str
    assistant_texts: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    context: HookContext = _CTX
