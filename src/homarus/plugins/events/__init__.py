"""Typed events and results of every hook (snake_case fields; one docstring each).

A handler receives ``(event, ctx)``; ``event.context`` is the same :class:`HookContext`, built per
handler (so ``plugin_config`` is that plugin's own) without touching the shared event. Handlers
may return ``None``, the hook's result dataclass, or a dict with the same snake_case keys.

The types live in one module per phase of a run (``run``, ``model``, ``tools``, ``delivery``,
``lifecycle``); every hook's types are imported from here.
"""

from __future__ import annotations

from homarus.plugins.events.context import (
    HookContext,
)
from homarus.plugins.events.delivery import (
    AgentEndEvent,
    BeforeAgentFinalizeEvent,
    BeforeAgentFinalizeResult,
    MessageSendingEvent,
    MessageSendingResult,
    MessageSentEvent,
    ReplyPayloadSendingEvent,
    ReplyPayloadSendingResult,
)
from homarus.plugins.events.lifecycle import (
    AfterCompactionEvent,
    BeforeCompactionEvent,
    BeforeInstallEvent,
    BeforeInstallResult,
    BeforeResetEvent,
    CronChangedEvent,
    GatewayStartEvent,
    GatewayStopEvent,
    SessionEndEvent,
    SessionStartEvent,
    SubagentEndedEvent,
    SubagentSpawnedEvent,
)
from homarus.plugins.events.model import (
    LlmInputEvent,
    LlmOutputEvent,
    ModelCallEndedEvent,
    ModelCallStartedEvent,
)
from homarus.plugins.events.run import (
    AgentTurnPrepareEvent,
    AgentTurnPrepareResult,
    BeforeAgentReplyEvent,
    BeforeAgentReplyResult,
    BeforeAgentRunEvent,
    BeforeAgentRunResult,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeModelResolveEvent,
    BeforeModelResolveResult,
    BeforePromptBuildEvent,
    BeforePromptBuildResult,
    ChannelPairingRequestedEvent,
    HeartbeatPromptContributionEvent,
    InboundClaimEvent,
    InboundClaimResult,
    MessageReceivedEvent,
)
from homarus.plugins.events.tools import (
    AfterToolCallEvent,
    BeforeMessageWriteEvent,
    BeforeMessageWriteResult,
    BeforeToolCallEvent,
    BeforeToolCallResult,
    RequireApproval,
    ResolveExecEnvEvent,
    ResolveExecEnvResult,
    ToolResultPersistEvent,
    ToolResultPersistResult,
)

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
