"""The hook catalogue: name → kind, event/result types, default timeout, failure policy, merge rule.

Kinds: ``void`` handlers run concurrently, results ignored; ``mod`` run one at a time by priority
and their results merge by the hook's rule; ``gate`` is ``mod`` that fails closed (a throw,
timeout or invalid decision blocks); ``claim`` stops at the first ``handled``; ``sync`` runs
inline on hot paths (an awaitable result is ignored with a warning).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from homarus.plugins import events as ev

__all__ = ["CONVERSATION_HOOKS", "HOOKS", "PROMPT_INJECTION_HOOKS", "HookSpec", "Merge"]

Kind = Literal["void", "mod", "gate", "claim", "sync"]


@dataclass
class Merge:
    """Accumulated result of a modifying hook; ``stop`` ends the chain (a terminal decision)."""

    value: Any
    stop: bool = False
    decided_by: str | None = None


MergeFn = Callable[[Merge, Any, str], Merge]
ChainFn = Callable[[Any, Merge], Any]


@dataclass(frozen=True, slots=True)
class HookSpec:
    name: str
    kind: Kind
    event: type[Any]
    result: type[Any] | None = None
    default_timeout_ms: int | None = None
    fail_closed: bool = False
    #: merge a handler's result into the accumulator (mod/gate)
    merge: MergeFn | None = None
    #: rebuild the event a later handler sees from the accumulator (chained fields)
    chain: ChainFn | None = None
    #: tool hooks may register a ``matcher`` (tool names)
    tool_matcher: bool = False


def _concat(a: str | None, b: str | None) -> str | None:
    if not b:
        return a
    return f"{a}\n\n{b}" if a else b


def _first(field_names: tuple[str, ...]) -> MergeFn:
    def merge(acc: Merge, result: Any, plugin: str) -> Merge:
        for name in field_names:
            if getattr(acc.value, name) is None and getattr(result, name) is not None:
                setattr(acc.value, name, getattr(result, name))
        return acc

    return merge


def _context_merge(concat_fields: tuple[str, ...], first_fields: tuple[str, ...] = ()) -> MergeFn:
    firsts = _first(first_fields)

    def merge(acc: Merge, result: Any, plugin: str) -> Merge:
        for name in concat_fields:
            setattr(acc.value, name, _concat(getattr(acc.value, name), getattr(result, name)))
        firsts(acc, result, plugin)
        if hasattr(result, "tools_allow") and result.tools_allow is not None:
            current = acc.value.tools_allow
            allowed = list(result.tools_allow)
            acc.value.tools_allow = allowed if current is None else [t for t in current if t in allowed]
        return acc

    return merge


def _agent_run(acc: Merge, result: Any, plugin: str) -> Merge:
    if result.outcome not in ("pass", "block"):
        raise ValueError(f"invalid before_agent_run outcome {result.outcome!r}")
    if result.outcome == "block":
        return Merge(result, stop=True, decided_by=plugin)
    return acc


def _tool_call(acc: Merge, result: Any, plugin: str) -> Merge:
    value: ev.BeforeToolCallResult = acc.value
    if result.block_reason is not None:
        value.block_reason = result.block_reason
    if result.params is not None and value.require_approval is None:
        value.params = dict(result.params)  # frozen once a plugin asked for approval
    if result.require_approval is not None and value.require_approval is None:
        ra = result.require_approval
        approval = ra if isinstance(ra, ev.RequireApproval) else ev.RequireApproval(**ra)
        value.require_approval = replace(approval, plugin_id=plugin)
    if result.block:
        value.block = True
        return Merge(value, stop=True, decided_by=plugin)
    return acc


def _chain_params(event: Any, acc: Merge) -> Any:
    params = acc.value.params
    return replace(event, params=params) if params is not None else event


def _install(acc: Merge, result: Any, plugin: str) -> Merge:
    value: ev.BeforeInstallResult = acc.value
    value.findings = [*value.findings, *result.findings]
    if result.reason and value.reason is None:
        value.reason = result.reason
    if result.block:
        value.block = True
        return Merge(value, stop=True, decided_by=plugin)
    return acc


def _sending(acc: Merge, result: Any, plugin: str) -> Merge:
    value: ev.MessageSendingResult = acc.value
    if result.content is not None:
        value.content = result.content
    if result.metadata is not None:
        value.metadata = {**(value.metadata or {}), **result.metadata}
    if result.cancel:
        value.cancel, value.cancel_reason = True, result.cancel_reason
        return Merge(value, stop=True, decided_by=plugin)
    return acc


def _payload(acc: Merge, result: Any, plugin: str) -> Merge:
    value: ev.ReplyPayloadSendingResult = acc.value
    if result.payload is not None:
        value.payload = result.payload
    if result.cancel:
        value.cancel, value.reason = True, result.reason
        return Merge(value, stop=True, decided_by=plugin)
    return acc


def _finalize(acc: Merge, result: Any, plugin: str) -> Merge:
    value: ev.BeforeAgentFinalizeResult = acc.value
    if result.action not in ("continue", "revise", "finalize"):
        raise ValueError(f"invalid before_agent_finalize action {result.action!r}")
    if result.action == "finalize":
        value.action = "finalize"
        return Merge(value, stop=True, decided_by=plugin)
    if result.action == "revise":
        value.action = "revise"
        value.reason = _concat(value.reason, result.reason)
        if value.retry is None and result.retry is not None:
            value.retry = result.retry
    return acc


_BLOCKED_ENV = re.compile(
    r"^(PATH|LD_.*|DYLD_.*|NODE_OPTIONS|PYTHON(PATH|HOME|STARTUP|HTTPSVERIFY)|(HTTPS?|ALL|NO|FTP)_PROXY|"
    r"SSL_CERT_.*|SSL_KEYLOG_FILE|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|NODE_TLS_REJECT_UNAUTHORIZED|NODE_EXTRA_CA_CERTS|"
    r"GIT_SSL_NO_VERIFY)$",
    re.IGNORECASE,
)
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env(acc: Merge, result: Any, plugin: str) -> Merge:
    for key, value in (result.env or {}).items():
        if _ENV_KEY.match(key) and not _BLOCKED_ENV.match(key) and isinstance(value, str):
            acc.value.env[key] = value
    return acc


def _chain_field(name: str) -> ChainFn:
    def chain(event: Any, acc: Merge) -> Any:
        value = getattr(acc.value, name)
        return replace(event, **{name: value}) if value is not None else event

    return chain


_PROMPT = ("prepend_context", "append_context", "prepend_system_context", "append_system_context")
_SPECS = [
    HookSpec("inbound_claim", "claim", ev.InboundClaimEvent, ev.InboundClaimResult),
    HookSpec("channel_pairing_requested", "void", ev.ChannelPairingRequestedEvent, default_timeout_ms=2_000),
    HookSpec("message_received", "void", ev.MessageReceivedEvent),
    HookSpec(
        "before_model_resolve",
        "mod",
        ev.BeforeModelResolveEvent,
        ev.BeforeModelResolveResult,
        merge=_first(("model_override", "provider_override")),
    ),
    HookSpec(
        "agent_turn_prepare",
        "mod",
        ev.AgentTurnPrepareEvent,
        ev.AgentTurnPrepareResult,
        merge=_context_merge(("prepend_context", "append_context")),
    ),
    HookSpec(
        "heartbeat_prompt_contribution",
        "mod",
        ev.HeartbeatPromptContributionEvent,
        ev.AgentTurnPrepareResult,
        merge=_context_merge(("prepend_context", "append_context")),
    ),
    HookSpec(
        "before_prompt_build",
        "mod",
        ev.BeforePromptBuildEvent,
        ev.BeforePromptBuildResult,
        15_000,
        merge=_context_merge(_PROMPT, ("system_prompt",)),
    ),
    HookSpec(
        "before_agent_start",
        "mod",
        ev.BeforeAgentStartEvent,
        ev.BeforeAgentStartResult,
        merge=_context_merge(
            ("prepend_context", "append_context"), ("model_override", "provider_override", "system_prompt")
        ),
    ),
    HookSpec(
        "before_agent_run", "gate", ev.BeforeAgentRunEvent, ev.BeforeAgentRunResult, 15_000, True, merge=_agent_run
    ),
    HookSpec("before_agent_reply", "claim", ev.BeforeAgentReplyEvent, ev.BeforeAgentReplyResult),
    HookSpec("model_call_started", "void", ev.ModelCallStartedEvent),
    HookSpec("model_call_ended", "void", ev.ModelCallEndedEvent),
    HookSpec("llm_input", "void", ev.LlmInputEvent),
    HookSpec("llm_output", "void", ev.LlmOutputEvent),
    HookSpec(
        "before_tool_call",
        "gate",
        ev.BeforeToolCallEvent,
        ev.BeforeToolCallResult,
        15_000,
        True,
        merge=_tool_call,
        chain=_chain_params,
        tool_matcher=True,
    ),
    HookSpec("after_tool_call", "void", ev.AfterToolCallEvent, tool_matcher=True),
    HookSpec("resolve_exec_env", "mod", ev.ResolveExecEnvEvent, ev.ResolveExecEnvResult, 15_000, merge=_env),
    HookSpec(
        "tool_result_persist",
        "sync",
        ev.ToolResultPersistEvent,
        ev.ToolResultPersistResult,
        chain=_chain_field("message"),
    ),
    HookSpec(
        "before_message_write",
        "sync",
        ev.BeforeMessageWriteEvent,
        ev.BeforeMessageWriteResult,
        chain=_chain_field("message"),
    ),
    HookSpec(
        "before_agent_finalize",
        "mod",
        ev.BeforeAgentFinalizeEvent,
        ev.BeforeAgentFinalizeResult,
        15_000,
        merge=_finalize,
    ),
    HookSpec("agent_end", "void", ev.AgentEndEvent, default_timeout_ms=30_000),
    HookSpec(
        "message_sending",
        "mod",
        ev.MessageSendingEvent,
        ev.MessageSendingResult,
        15_000,
        merge=_sending,
        chain=_chain_field("content"),
    ),
    HookSpec(
        "reply_payload_sending",
        "mod",
        ev.ReplyPayloadSendingEvent,
        ev.ReplyPayloadSendingResult,
        15_000,
        merge=_payload,
        chain=_chain_field("payload"),
    ),
    HookSpec("message_sent", "void", ev.MessageSentEvent),
    HookSpec("session_start", "void", ev.SessionStartEvent),
    HookSpec("session_end", "void", ev.SessionEndEvent),
    HookSpec("before_compaction", "void", ev.BeforeCompactionEvent, default_timeout_ms=30_000),
    HookSpec("after_compaction", "void", ev.AfterCompactionEvent, default_timeout_ms=30_000),
    HookSpec("before_reset", "void", ev.BeforeResetEvent),
    HookSpec("subagent_spawned", "void", ev.SubagentSpawnedEvent),
    HookSpec("subagent_ended", "void", ev.SubagentEndedEvent),
    HookSpec("gateway_start", "void", ev.GatewayStartEvent),
    HookSpec("gateway_stop", "void", ev.GatewayStopEvent, default_timeout_ms=5_000),
    HookSpec("cron_changed", "void", ev.CronChangedEvent),
    HookSpec("before_install", "gate", ev.BeforeInstallEvent, ev.BeforeInstallResult, 15_000, True, merge=_install),
]

HOOKS: dict[str, HookSpec] = {s.name: s for s in _SPECS}

#: hooks that see conversation content: non-bundled plugins need allowConversationAccess
CONVERSATION_HOOKS = frozenset(
    {
        "inbound_claim",
        "before_model_resolve",
        "before_agent_reply",
        "llm_input",
        "llm_output",
        "before_agent_finalize",
        "agent_end",
        "before_agent_run",
        "agent_turn_prepare",
        "before_prompt_build",
    }
)
#: hooks that can add text to the prompt: blocked by allowPromptInjection=false
PROMPT_INJECTION_HOOKS = frozenset(
    {"agent_turn_prepare", "before_prompt_build", "before_agent_start", "heartbeat_prompt_contribution"}
)


def result_from(spec: HookSpec, value: Any) -> Any:
    """A handler's return value as the hook's result dataclass; ValueError when malformed."""
    if value is None or spec.result is None:
        return None
    if isinstance(value, spec.result):
        return value
    if isinstance(value, dict):
        names = {f.name for f in fields(spec.result)}
        unknown = set(value) - names
        if unknown:
            raise ValueError(f"unknown result field(s) {sorted(unknown)} for {spec.name}")
        return spec.result(**value)
    raise ValueError(f"{spec.name} handler returned {type(value).__name__}, expected {spec.result.__name__} or dict")
