"""``agents.defaults.heartbeat``: the periodic turn in the main session."""

from __future__ import annotations

from pydantic import Field

from homarus.config.base import ConfigModel

__all__ = ["HeartbeatConfig"]

_DURATION = r"^\d+(ms|s|m|h|d)$"


class HeartbeatConfig(ConfigModel):
    #: ``0m`` (or ``0``/``off``) disables periodic heartbeats
    every: str = Field("30m", pattern=r"^(\d+(ms|s|m|h|d)|0|off)$")
    ack_max_chars: int = Field(300, ge=0, le=100_000)
    #: the user message of a heartbeat turn (default: the reference prompt)
    prompt: str | None = Field(None, min_length=1, max_length=20_000)
    #: while user runs are in flight, retry after this long
    busy_retry: str = Field("30s", pattern=_DURATION)
