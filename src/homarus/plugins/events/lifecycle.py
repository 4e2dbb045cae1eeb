"""The hooks of sessions, compaction, resets, sub-agents, the gateway itself, cron and installs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homarus.plugins.events.context import HookContext

__all__ = [
    "AfterCompactionEvent",
    "BeforeCompactionEvent",
    "BeforeInstallEvent",
    "BeforeInstallResult",
    "BeforeResetEvent",
    "CronChangedEvent",
    "GatewayStartEvent",
    "GatewayStopEvent",
    "SessionEndEvent",
    "SessionStartEvent",
    "SubagentEndedEvent",
    "SubagentSpawnedEvent",
]

_CTX = field(default_factory=HookContext)


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
