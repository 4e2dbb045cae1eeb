"""What ``sessions.patch`` may change in a session's entry: closed (an unknown field is an error,
never silently stored), every field nullable (``null`` clears it), and the original's fields that
Homarus does not act on accepted as inert or refused with the reason.

Apart from :mod:`homarus.sessions.entry` because only that method needs it: a run never does, and
this model, widened by the original's fields, is the largest the gateway has (72 fields).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from homarus.protocol.compat import (
    NO_BOARDS,
    NO_PERMISSION_MODES,
    NO_RUNTIMES,
    PER_SESSION_EXEC,
    Unsupported,
    compat_params,
)

__all__ = ["PATCHABLE_FIELDS", "SessionPatch"]


_Level = Literal["off", "minimal", "low", "medium", "high", "xhigh"]


@compat_params(
    inert={
        "attention": NO_BOARDS,
        "statusNote": NO_BOARDS,
        "autoLabel": NO_BOARDS,
        "boardFace": NO_BOARDS,
        "boardPresentation": NO_BOARDS,
        "traceLevel": "Homarus has no trace levels: the audit log records every tool call",
        "ttlMinutes": "Homarus sessions do not expire by a per-session timer (see session.reset in the config)",
        "completionOwnerSessionKey": "completion hand-off between sessions is not a Homarus feature",
        "contextWindow": "the context window comes from the model's entry in the config",
        "expectedLifecycleRevision": "Homarus has one writer per session store; compare-and-set guards are not needed",
        "expectedNativeRuntimeConsent": NO_RUNTIMES,
        "expectedPermissionMode": NO_PERMISSION_MODES,
        "expectedSandboxMode": NO_PERMISSION_MODES,
        "expectedToolOverrides": NO_PERMISSION_MODES,
        "inheritedToolPolicyVersion": NO_PERMISSION_MODES,
    },
    unsupported={
        "execAsk": Unsupported(PER_SESSION_EXEC),
        "execHost": Unsupported(PER_SESSION_EXEC),
        "execNode": Unsupported(PER_SESSION_EXEC),
        "execSecurity": Unsupported(PER_SESSION_EXEC),
        "sandboxMode": Unsupported(PER_SESSION_EXEC),
        "permissionMode": Unsupported(NO_PERMISSION_MODES),
        "toolOverrides": Unsupported(NO_PERMISSION_MODES),
        "inheritedToolAllow": Unsupported(NO_PERMISSION_MODES),
        "inheritedToolDeny": Unsupported(NO_PERMISSION_MODES),
        "agentRuntime": Unsupported(NO_RUNTIMES),
        "nativeRuntimeConsent": Unsupported(NO_RUNTIMES),
    },
)
class SessionPatch(BaseModel):
    """``sessions.patch`` fields; every one nullable (``null`` clears it)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    key: str = Field(min_length=1, max_length=512)
    label: str | None = Field(default=None, max_length=100)
    display_name: str | None = Field(default=None, alias="displayName", max_length=200)
    thinking_level: _Level | None = Field(default=None, alias="thinkingLevel")
    verbose_level: Literal["off", "on", "full"] | None = Field(default=None, alias="verboseLevel")
    fast_mode: bool | None = Field(default=None, alias="fastMode")
    reasoning_level: Literal["off", "on", "stream"] | None = Field(default=None, alias="reasoningLevel")
    response_usage: Literal["off", "tokens", "full", "on"] | None = Field(default=None, alias="responseUsage")
    elevated_level: Literal["off", "on", "ask", "full"] | None = Field(default=None, alias="elevatedLevel")
    model: str | None = Field(default=None, max_length=200)
    send_policy: Literal["allow", "deny"] | None = Field(default=None, alias="sendPolicy")
    group_activation: Literal["mention", "always"] | None = Field(default=None, alias="groupActivation")
    spawned_by: str | None = Field(default=None, alias="spawnedBy", max_length=512)
    spawn_depth: int | None = Field(default=None, alias="spawnDepth", ge=0, le=16)
    # the original's (v4) session-board fields a client UI sets, kept in the entry as given
    unread: bool | None = None
    pinned: bool | None = None
    archived: bool | None = None
    icon: str | None = Field(default=None, max_length=64)
    color: str | None = Field(default=None, max_length=32)
    category: str | None = Field(default=None, max_length=64)
    # envelope fields: which agent, and compare-and-set guards Homarus does not need (one writer)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    expected_session_id: str | None = Field(default=None, alias="expectedSessionId", max_length=128)
    expected_marked_unread_at: int | None = Field(default=None, alias="expectedMarkedUnreadAt")

    def changes(self) -> dict[str, Any]:
        """Alias → value for the fields the caller actually sent (None = clear)."""
        sent = set(self.model_fields_set) - {"key"} - _ENVELOPE
        dumped = self.model_dump(by_alias=True)
        out = {}
        for name in sent:
            alias = type(self).model_fields[name].alias or name
            out[alias] = dumped[alias]
        return out


_ENVELOPE = frozenset({"agent_id", "expected_session_id", "expected_marked_unread_at"})
PATCHABLE_FIELDS = tuple(
    (f.alias or n) for n, f in SessionPatch.model_fields.items() if n != "key" and n not in _ENVELOPE
)
