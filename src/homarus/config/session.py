"""The ``session`` section: the main session's key, how sessions are scoped, store maintenance."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from homarus.config.base import ConfigModel
from homarus.config.values import parse_duration_ms

__all__ = ["SessionConfig", "SessionMaintenance"]


class SessionMaintenance(ConfigModel):
    """Keeps sessions.json bounded: ``warn`` only logs, ``enforce`` prunes (main sessions are kept)."""

    mode: Literal["warn", "enforce"] = "warn"
    prune_after: str = Field("30d", pattern=r"^\d+(ms|s|m|h|d)$")
    max_entries: int = Field(500, ge=1, le=1_000_000)

    @property
    def prune_after_ms(self) -> int:
        return parse_duration_ms(self.prune_after)


class SessionConfig(ConfigModel):
    main_key: str = Field("main", pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    scope: Literal["per-sender", "global"] = "per-sender"
    maintenance: SessionMaintenance = Field(default_factory=SessionMaintenance)
