"""The cron job shape, camelCase on disk and on the wire (pydantic: it is a trust boundary).

A job pairs a payload with the session it belongs in: a ``systemEvent`` is queued on the main
session (the heartbeat handles it), an ``agentTurn`` runs in the job's own isolated session.
The other pairings are refused here, so no layer above has to think about them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from homarus.patterns import Pattern

__all__ = [
    "AgentTurnPayload",
    "AtSchedule",
    "CronExprSchedule",
    "CronJob",
    "Delivery",
    "EverySchedule",
    "JobCreate",
    "JobState",
    "Payload",
    "RunStatus",
    "Schedule",
    "SystemEventPayload",
]

JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"
RunStatus = Literal["ok", "error", "skipped"]


class CronModel(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class AtSchedule(CronModel):
    kind: Literal["at"]
    #: ISO-8601 (no offset = UTC); relative ("+20m") is resolved to ISO when the job is added
    at: str = Field(min_length=1, max_length=64)


class EverySchedule(CronModel):
    kind: Literal["every"]
    every_ms: int = Field(ge=1, le=366 * 86_400_000)
    #: runs fall on anchor + k * everyMs (filled with the creation time when missing)
    anchor_ms: int | None = Field(None, ge=0)


class CronExprSchedule(CronModel):
    kind: Literal["cron"]
    #: 5 fields, or 6 with seconds first
    expr: str = Field(min_length=1, max_length=200)
    #: IANA zone (default UTC)
    tz: str | None = Field(None, min_length=1, max_length=64)
    #: spread window; None = 5 min for top-of-hour expressions, 0 = exact
    stagger_ms: int | None = Field(None, ge=0, le=3_600_000)


Schedule = Annotated[AtSchedule | EverySchedule | CronExprSchedule, Field(discriminator="kind")]


class SystemEventPayload(CronModel):
    kind: Literal["systemEvent"]
    text: str = Field(min_length=1, max_length=20_000)


class AgentTurnPayload(CronModel):
    kind: Literal["agentTurn"]
    message: str = Field(min_length=1, max_length=100_000)
    model: str | None = Field(None, min_length=1, max_length=200)
    thinking: str | None = Field(None, max_length=20)
    timeout_seconds: int | None = Field(None, ge=1, le=86_400)


Payload = Annotated[SystemEventPayload | AgentTurnPayload, Field(discriminator="kind")]


class Delivery(CronModel):
    mode: Literal["none", "announce", "webhook"] = "announce"
    channel: str | None = Field(None, max_length=64)
    #: the webhook URL for ``webhook``
    to: str | None = Field(None, max_length=2048)
    account_id: str | None = Field(None, max_length=128)
    #: a failed delivery does not turn the run into an error
    best_effort: bool | None = None

    @model_validator(mode="after")
    def _webhook_needs_url(self) -> Delivery:
        if self.mode == "webhook":
            parts = urlsplit(self.to or "")
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("delivery.to must be an http(s) URL for webhook delivery")
        return self


class JobState(CronModel):
    next_run_at_ms: int | None = None
    running_at_ms: int | None = None
    last_run_at_ms: int | None = None
    last_run_status: RunStatus | None = None
    last_error: str | None = None
    last_duration_ms: int | None = None
    consecutive_errors: int = 0
    schedule_error_count: int = 0
    last_delivery_status: str | None = None


def _check_target(target: str, payload: SystemEventPayload | AgentTurnPayload, delivery: Delivery | None) -> None:
    if payload.kind == "systemEvent" and target != "main":
        raise ValueError('payload kind "systemEvent" needs sessionTarget "main"')
    if payload.kind == "agentTurn" and target != "isolated":
        raise ValueError('payload kind "agentTurn" needs sessionTarget "isolated"')
    if target == "main" and delivery is not None and delivery.mode != "none":
        raise ValueError('delivery is only for isolated jobs (main jobs post into the main session); use mode "none"')


class _JobFields(CronModel):
    name: str = Field(min_length=1, max_length=200)
    description: str | None = Field(None, max_length=2000)
    agent_id: str | None = Field(None, min_length=1, max_length=64)
    session_key: str | None = Field(None, max_length=512)
    enabled: bool = True
    delete_after_run: bool | None = None
    schedule: Schedule
    wake_mode: Literal["now", "next-heartbeat"] = "now"
    payload: Payload
    delivery: Delivery | None = None


class JobCreate(_JobFields):
    """``cron.add`` input; ``sessionTarget`` defaults from the payload kind."""

    session_target: Literal["main", "isolated"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> JobCreate:
        if self.session_target is None:
            self.session_target = "main" if self.payload.kind == "systemEvent" else "isolated"
        _check_target(self.session_target, self.payload, self.delivery)
        return self


class CronJob(_JobFields):
    id: Annotated[str, Pattern(JOB_ID_PATTERN)]
    session_target: Literal["main", "isolated"]
    created_at_ms: int = Field(ge=0)
    updated_at_ms: int = Field(ge=0)
    state: JobState = Field(default_factory=JobState)

    @model_validator(mode="after")
    def _consistent(self) -> CronJob:
        _check_target(self.session_target, self.payload, self.delivery)
        return self

    @property
    def delivery_mode(self) -> str:
        """Isolated jobs announce by default; main jobs never deliver."""
        if self.delivery is not None:
            return self.delivery.mode
        return "announce" if self.session_target == "isolated" else "none"
