"""A session's ``SessionEntry`` (the original's ``sessions.json`` record).

Entries keep fields they do not know (``extra="allow"``): a store written by a newer Homarus, or
imported from the original, survives a round trip. What ``sessions.patch`` may change is in
:mod:`homarus.sessions.patch` (only that method needs it).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from homarus.errors import InvalidRequest

__all__ = ["DeliveryContext", "SessionEntry"]


class DeliveryContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    channel: str | None = None
    to: str | None = None
    account_id: str | None = Field(default=None, alias="accountId")
    thread_id: str | None = Field(default=None, alias="threadId")


class SessionEntry(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    session_id: str = Field(alias="sessionId", min_length=1)
    updated_at: int = Field(alias="updatedAt")
    created_at: int | None = Field(default=None, alias="createdAt")
    session_file: str | None = Field(default=None, alias="sessionFile")
    label: str | None = None
    display_name: str | None = Field(default=None, alias="displayName")
    status: Literal["running", "done", "failed", "killed", "timeout", "interrupted"] | None = None
    model_override: str | None = Field(default=None, alias="modelOverride")
    provider_override: str | None = Field(default=None, alias="providerOverride")
    model: str | None = None
    model_provider: str | None = Field(default=None, alias="modelProvider")
    input_tokens: int | None = Field(default=None, alias="inputTokens")
    output_tokens: int | None = Field(default=None, alias="outputTokens")
    total_tokens: int | None = Field(default=None, alias="totalTokens")
    context_tokens: int | None = Field(default=None, alias="contextTokens")
    compaction_count: int | None = Field(default=None, alias="compactionCount")
    #: the compaction cycle (``compactionCount``) whose pre-compaction memory flush already ran
    memory_flush_compaction_count: int | None = Field(default=None, alias="memoryFlushCompactionCount")
    memory_flush_at: int | None = Field(default=None, alias="memoryFlushAt")
    delivery_context: DeliveryContext | None = Field(default=None, alias="deliveryContext")
    spawned_by: str | None = Field(default=None, alias="spawnedBy")
    spawn_depth: int | None = Field(default=None, alias="spawnDepth")
    parent_session_key: str | None = Field(default=None, alias="parentSessionKey")
    thinking_level: str | None = Field(default=None, alias="thinkingLevel")
    verbose_level: str | None = Field(default=None, alias="verboseLevel")
    send_policy: Literal["allow", "deny"] | None = Field(default=None, alias="sendPolicy")
    started_at: int | None = Field(default=None, alias="startedAt")
    ended_at: int | None = Field(default=None, alias="endedAt")
    aborted_last_run: bool | None = Field(default=None, alias="abortedLastRun")
    channel: str | None = None
    chat_type: str | None = Field(default=None, alias="chatType")

    @field_validator("session_id")
    @classmethod
    def _safe_id(cls, v: str) -> str:
        from homarus.sessions.keys import valid_session_id

        try:
            return valid_session_id(v)
        except InvalidRequest as exc:
            raise ValueError(exc.message) from None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
