"""Typed events and results of every hook (snake_case fields; one docstring each).

A handler receives ``(event, ctx)``; ``event.context`` is the same :class:`HookContext`, built per
handler (so ``plugin_config`` is that plugin's own) without touching the shared event. Handlers
may return ``None``, the hook's result dataclass, or a dict with the same snake_case keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AfterCompactionEvent",
    "AfterToolCallEvent",
    "AgentEndEvent",
    "AgentTurnPrepareEvent",
    "AgentTurnPrepareResult",
    "BeforeAgentFinalizeEvent",
    "BeforeAgentFinalizeResult",
    "BeforeAgentReplyEvent",
    "BeforeAgentReplyResult",
    "BeforeAgentRunEvent",
    "BeforeAgentRunResult",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "BeforeCompactionEvent",
    "BeforeInstallEvent",
    "BeforeInstallResult",
    "BeforeMessageWriteEvent",
    "BeforeMessageWriteResult",
    "BeforeModelResolveEvent",
    "BeforeModelResolveResult",
    "BeforePromptBuildEvent",
    "BeforePromptBuildResult",
    "BeforeResetEvent",
    "BeforeToolCallEvent",
    "BeforeToolCallResult",
    "ChannelPairingRequestedEvent",
    "CronChangedEvent",
    "GatewayStartEvent",
    "GatewayStopEvent",
    "HeartbeatPromptContributionEvent",
    "HookContext",
    "InboundClaimEvent",
    "InboundClaimResult",
    "LlmInputEvent",
    "LlmOutputEvent",
    "MessageReceivedEvent",
    "MessageSendingEvent",
    "MessageSendingResult",
    "MessageSentEvent",
    "ModelCallEndedEvent",
    "ModelCallStartedEvent",
    "ReplyPayloadSendingEvent",
    "ReplyPayloadSendingResult",
    "RequireApproval",
    "ResolveExecEnvEvent",
    "ResolveExecEnvResult",
    "SessionEndEvent",
    "SessionStartEvent",
    "SubagentEndedEvent",
    "SubagentSpawnedEvent",
    "ToolResultPersistEvent",
    "ToolResultPersistResult",
]


@dataclass(frozen=True, slots=True)
class HookContext:
    """Who the hook runs for: this handler's plugin and config, and the run it observes."""

    plugin_id: str = ""
    plugin_config: dict[str, Any] = field(default_factory=dict)
    agent_id: str | None = None
    session_key: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None
    trigger: str | None = None


_CTX = field(default_factory=HookContext)


# -- inbound and run setup ------------------------------------------------------------------------
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


# -- model calls -------------------------------------------------------------------------------------
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


# -- tools --------------------------------------------------------------------------------------------
@dataclass(slots=True)
class RequireApproval:
    """Ask an operator before the tool runs (``plugin.approval.*``)."""

    title: str = "Approval required"
    description: str = ""
    severity: str = "warning"
    timeout_ms: int = 120_000
    plugin_id: str = ""


@dataclass(slots=True)
class BeforeToolCallEvent:
    """Before a tool runs: may block (terminal), rewrite params, or require approval."""

    tool_name: str
    params: dict[str, Any]
    run_id: str | None = None
    tool_call_id: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeToolCallResult:
    """``block`` sticky and terminal; ``params`` last defined; ``require_approval`` first wins."""

    block: bool | None = None
    block_reason: str | None = None
    params: dict[str, Any] | None = None
    require_approval: RequireApproval | dict[str, Any] | None = None


@dataclass(slots=True)
class AfterToolCallEvent:
    """A tool finished (observation)."""

    tool_name: str
    params: dict[str, Any]
    run_id: str | None = None
    tool_call_id: str | None = None
    result: str | None = None
    error: str | None = None
    duration_ms: int | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class ResolveExecEnvEvent:
    """Environment for an exec run; dangerous keys are dropped from results."""

    session_key: str | None
    tool_name: str = "exec"
    host: str = "gateway"
    context: HookContext = _CTX


@dataclass(slots=True)
class ResolveExecEnvResult:
    """Variables to set; later handlers override the same key."""

    env: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ToolResultPersistEvent:
    """A tool result is being written to the transcript (sync, hot path)."""

    message: dict[str, Any]
    tool_name: str | None = None
    tool_call_id: str | None = None
    is_synthetic: bool = False
    context: HookContext = _CTX


@dataclass(slots=True)
class ToolResultPersistResult:
    """A replacement message; each handler sees the previous one's."""

    message: dict[str, Any] | None = None


@dataclass(slots=True)
class BeforeMessageWriteEvent:
    """Any message is about to be written to the transcript (sync)."""

    message: dict[str, Any]
    session_key: str | None = None
    agent_id: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeMessageWriteResult:
    """``block`` writes nothing; ``message`` is chained."""

    block: bool | None = None
    message: dict[str, Any] | None = None


# -- finishing and delivery -----------------------------------------------------------------------------
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


# -- sessions, compaction, lifecycle ----------------------------------------------------------------------
@dataclass(slots=True)
class SessionStartEvent:
    """A session was created (or resumed after a reset)."""

    session_id: str
    session_key: str | None = None
    resumed_from: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class SessionEndEvent:
    """A session ended (reset, delete, ...)."""

    session_id: str
    session_key: str | None = None
    reason: str = "unknown"
    message_count: int = 0
    next_session_id: str | None = None
    transcript_archived: bool = False
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeCompactionEvent:
    """History is about to be summarised."""

    message_count: int
    token_count: int | None = None
    session_file: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class AfterCompactionEvent:
    """History was summarised."""

    message_count: int
    compacted_count: int
    token_count: int | None = None
    session_file: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeResetEvent:
    """A session is about to be reset; its history is still readable."""

    session_file: str | None = None
    reason: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    context: HookContext = _CTX


@dataclass(slots=True)
class SubagentSpawnedEvent:
    """A sub-agent run started."""

    child_session_key: str
    agent_id: str
    run_id: str
    context: HookContext = _CTX


@dataclass(slots=True)
class SubagentEndedEvent:
    """A sub-agent run ended."""

    target_session_key: str
    reason: str
    outcome: str | None = None
    error: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class GatewayStartEvent:
    """The gateway is listening."""

    port: int
    context: HookContext = _CTX


@dataclass(slots=True)
class GatewayStopEvent:
    """The gateway is stopping."""

    reason: str | None = None
    context: HookContext = _CTX


@dataclass(slots=True)
class CronChangedEvent:
    """A cron job changed; re-read the state, this is a hint."""

    action: str
    job_id: str
    job: dict[str, Any] = field(default_factory=dict)
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeInstallEvent:
    """A skill or plugin is about to be installed: a fail-closed gate."""

    target_type: str
    target_name: str
    source_path: str
    context: HookContext = _CTX


@dataclass(slots=True)
class BeforeInstallResult:
    """``findings`` concatenate; ``block`` sticky and terminal."""

    block: bool | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
