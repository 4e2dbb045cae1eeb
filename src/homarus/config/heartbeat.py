"""``agents.defaults.heartbeat``: the periodic turn in the main session."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from homarus.config.base import ConfigModel
from homarus.patterns import Pattern

__all__ = ["HeartbeatConfig"]

_DURATION = r"^\d+(ms|s|m|h|d)$"


class HeartbeatConfig(ConfigModel):
    #: ``0m`` (or ``0``/``off``) disables periodic heartbeats
    every: Annotated[str, Pattern(r"^(\d+(ms|s|m|h|d)|0|off)$")] = "30m"
    ack_max_chars: int = Field(300, ge=0, le=100_000)
    #: the user message of a heartbeat turn (default: the reference prompt)
    prompt: str | None = Field(None, min_length=1, max_length=20_000)
    #: while user runs are in flight, retry after this long
    busy_retry: Annotated[str, Pattern(_DURATION)] = "30s"
