"""Typed events and results of every hook (snake_case fields; one docstring each).

A handler receives ``(event, ctx)``; ``event.context`` is the same :class:`HookContext`, built per
handler (so ``plugin_config`` is that plugin's own) without touching the shared event. Handlers
may return ``None``, the hook's result dataclass, or a dict with the same snake_case keys.

The types live in one module per phase of a run (``run``, ``model``, ``tools``, ``delivery``,
``lifecycle``); every hook's types are imported from here. Each phase's module is imported with
the first use of one of its types (PEP 562): a gateway whose plugins register no hook builds no
event, so it never loads them (~0.3 MiB).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from homarus.plugins.events.context import HookContext

if TYPE_CHECKING:
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

_PHASE_OF: dict[str, str] = {
    "AfterCompactionEvent": "lifecycle",
    "AfterToolCallEvent": "tools",
    "AgentEndEvent": "delivery",
    "AgentTurnPrepareEvent": "run",
    "AgentTurnPrepareResult": "run",
    "BeforeAgentFinalizeEvent": "delivery",
    "BeforeAgentFinalizeResult": "delivery",
    "BeforeAgentReplyEvent": "run",
    "BeforeAgentReplyResult": "run",
    "BeforeAgentRunEvent": "run",
    "BeforeAgentRunResult": "run",
    "BeforeAgentStartEvent": "run",
    "BeforeAgentStartResult": "run",
    "BeforeCompactionEvent": "lifecycle",
    "BeforeInstallEvent": "lifecycle",
    "BeforeInstallResult": "lifecycle",
    "BeforeMessageWriteEvent": "tools",
    "BeforeMessageWriteResult": "tools",
    "BeforeModelResolveEvent": "run",
    "BeforeModelResolveResult": "run",
    "BeforePromptBuildEvent": "run",
    "BeforePromptBuildResult": "run",
    "BeforeResetEvent": "lifecycle",
    "BeforeToolCallEvent": "tools",
    "BeforeToolCallResult": "tools",
    "ChannelPairingRequestedEvent": "run",
    "CronChangedEvent": "lifecycle",
    "GatewayStartEvent": "lifecycle",
    "GatewayStopEvent": "lifecycle",
    "HeartbeatPromptContributionEvent": "run",
    "InboundClaimEvent": "run",
    "InboundClaimResult": "run",
    "LlmInputEvent": "model",
    "LlmOutputEvent": "model",
    "MessageReceivedEvent": "run",
    "MessageSendingEvent": "delivery",
    "MessageSendingResult": "delivery",
    "MessageSentEvent": "delivery",
    "ModelCallEndedEvent": "model",
    "ModelCallStartedEvent": "model",
    "ReplyPayloadSendingEvent": "delivery",
    "ReplyPayloadSendingResult": "delivery",
    "RequireApproval": "tools",
    "ResolveExecEnvEvent": "tools",
    "ResolveExecEnvResult": "tools",
    "SessionEndEvent": "lifecycle",
    "SessionStartEvent": "lifecycle",
    "SubagentEndedEvent": "lifecycle",
    "SubagentSpawnedEvent": "lifecycle",
    "ToolResultPersistEvent": "tools",
    "ToolResultPersistResult": "tools",
}


def __getattr__(name: str) -> Any:
    phase = _PHASE_OF.get(name)
    if phase is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{phase}"), name)
    globals()[name] = value  # the next lookup is a plain one
    return value
