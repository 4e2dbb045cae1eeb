"""The hooks around tool calls: approval requirements, before/after each call, the exec
environment, what a tool result persists as, and every message written to the transcript."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homarus.plugins.events.context import HookContext

__all__ = [
    "AfterToolCallEvent",
    "BeforeMessageWriteEvent",
    "BeforeMessageWriteResult",
    "BeforeToolCallEvent",
    "BeforeToolCallResult",
    "RequireApproval",
    "ResolveExecEnvEvent",
    "ResolveExecEnvResult",
    "ToolResultPersistEvent",
    "ToolResultPersistResult",
]

_CTX = field(default_factory=HookContext)


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
