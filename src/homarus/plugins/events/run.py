"""The hooks of a message coming in and a run being set up: receipt, claims, pairing, model
resolution, turn preparation, the prompt, the start of the run and the reply decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homarus.plugins.events.context import HookContext

__all__ = [
    "AgentTurnPrepareEvent",
    "AgentTurnPrepareResult",
    "BeforeAgentReplyEvent",
    "BeforeAgentReplyResult",
    "BeforeAgentRunEvent",
    "BeforeAgentRunResult",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "BeforeModelResolveEvent",
    "BeforeModelResolveResult",
    "BeforePromptBuildEvent",
    "BeforePromptBuildResult",
    "ChannelPairingRequestedEvent",
    "HeartbeatPromptContributionEvent",
    "InboundClaimEvent",
    "InboundClaimResult",
    "MessageReceivedEvent",
]

_CTX = field(default_factory=HookContext)


@dataclass(slots=True)
class MessageReceivedEvent:
    """An inbound message was accepted (observation only)."""

    content: str
    from_: str = ""
    channel: str | None = None
    session_key: str | None = None
    run_id: str | None = None
    timestamp: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    context: HookContext = _CTX


@dataclass(slots=True)
class InboundClaimEvent:
    """A chat message an admitted sender sent, before commands and the agent: a plugin may own it."""

    content: str
    channel: str
    account_id: str | None = None
    conversation_id: str | None = None
    sender_id: str | None = None
    thread_id: str | None = None
    message_id: str | None = None
    is_group: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    context: HookContext = _CTX


@dataclass(slots=True)
class InboundClaimResult:
    """First ``handled`` wins: the message goes no further; ``reply`` is sent back to the chat."""

    handled: bool = False
    reply: str | None = None


@dataclass(slots=True)
class ChannelPairingRequestedEvent:
    """An unknown sender got a DM pairing code (observation: the owner may want to be told)."""

    channel: str
    sender_id: str
    code: str
    account_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeModelResolveEvent:
    """Before the session's model is resolved; may override provider and model."""

    prompt: str
    attachments: list[dict[str, Any]] = field(default_factory=list)
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeModelResolveResult:
    """First defined override wins (highest priority first)."""

    model_override: str | None = None
    provider_override: str | None = None


@dataclass(slots=True)
class AgentTurnPrepareEvent:
    """History loaded, before the prompt is built; carries the drained next-turn injections."""

    prompt: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    queued_injections: list[dict[str, Any]] = field(default_factory=list)
    context: HookContext = _CTX


@dataclass(slots=True)
class AgentTurnPrepareResult:
    """Context texts, concatenated across handlers in priority order."""

    prepend_context: str | None = None
    append_context: str | None = None


@dataclass(slots=True)
class HeartbeatPromptContributionEvent:
    """A heartbeat turn is about to run: plugins may add context around the heartbeat prompt."""

    session_key: str | None = None
    agent_id: str | None = None
    heartbeat_name: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforePromptBuildEvent:
    """The system prompt is about to be assembled."""

    prompt: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforePromptBuildResult:
    """``system_prompt`` first wins; contexts concatenate; ``tools_allow`` lists intersect (narrow only)."""

    system_prompt: str | None = None
    prepend_context: str | None = None
    append_context: str | None = None
    prepend_system_context: str | None = None
    append_system_context: str | None = None
    tools_allow: list[str] | None = None


@dataclass(slots=True)
class BeforeAgentStartEvent:
    """Legacy combined phase (model resolve + prompt build)."""

    prompt: str
    run_id: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeAgentStartResult:
    """Union of the prompt-build and model-resolve results."""

    model_override: str | None = None
    provider_override: str | None = None
    system_prompt: str | None = None
    prepend_context: str | None = None
    append_context: str | None = None


@dataclass(slots=True)
class BeforeAgentRunEvent:
    """Prompt built, before any model input: a fail-closed gate."""

    prompt: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    system_prompt: str | None = None
    channel_id: str | None = None
    sender_id: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeAgentRunResult:
    """``outcome`` "pass" or "block"; a block stores only ``message`` instead of the prompt."""

    outcome: str = "pass"
    reason: str | None = None
    message: str | None = None
    category: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class BeforeAgentReplyEvent:
    """Before the model turn: a plugin may answer instead of the model."""

    cleaned_body: str
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeAgentReplyResult:
    """First ``handled`` wins; ``reply`` text replaces the model turn (None = stay silent)."""

    handled: bool = False
    reply: str | None = None
    reason: str | None = None
