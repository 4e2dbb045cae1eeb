"""The ``session`` section: the main session's key, how sessions are scoped, store maintenance."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from homarus.config.base import ConfigModel
from homarus.config.values import parse_duration_ms
from homarus.patterns import Pattern

__all__ = ["SessionConfig", "SessionMaintenance"]


class SessionMaintenance(ConfigModel):
    """Keeps the session index bounded: ``warn`` only logs, ``enforce`` prunes (main sessions are kept)."""

    mode: Literal["warn", "enforce"] = "warn"
    prune_after: Annotated[str, Pattern(r"^\d+(ms|s|m|h|d)$")] = "30d"
    max_entries: int = Field(500, ge=1, le=1_000_000)

    @property
    def prune_after_ms(self) -> int:
        return parse_duration_ms(self.prune_after)


class SessionConfig(ConfigModel):
    main_key: Annotated[str, Pattern(r"^[a-z0-9][a-z0-9_-]{0,63}$")] = "main"
    scope: Literal["per-sender", "global"] = "per-sender"
    #: where chat DMs land: the agent's main session (``main``), or one session per sender
    #: (``per-peer``), per channel and sender, or per account, channel and sender
    dm_scope: Literal["main", "per-peer", "per-channel-peer", "per-account-channel-peer"] = "main"
    #: ``main`` is the owners' session: a DM from anyone else lands in a session of its own
    #: (per channel and sender) unless this is set — then they share the owner's transcript, each
    #: of their messages labelled with its sender (``homarus security audit`` flags it)
    share_main_with_non_owners: bool = False
    #: one person's ids on several channels, so they share a DM session: ``{"alice":
    #: ["telegram:123", "discord:456"]}`` (the name replaces the sender id in the session key)
    identity_links: dict[str, tuple[str, ...]] = Field(default_factory=dict, max_length=1000)
    maintenance: SessionMaintenance = Field(default_factory=SessionMaintenance)
    #: how much transcript (MB of its file) is kept parsed in memory in all, about four times that
    #: in memory; beyond it the least recently used are re-read from their files when next needed
    transcript_cache_mb: int = Field(4, ge=1, le=16384)

    @field_validator("identity_links")
    @classmethod
    def _links(cls, v: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        seen: dict[str, str] = {}
        for name, ids in v.items():
            if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,63}", name):
                raise ValueError(f"identity name {name!r} must match [a-z0-9][a-z0-9_.-]{{0,63}}")
            for raw in ids:
                if ":" not in raw:
                    raise ValueError(f"{name}: {raw!r} is not '<channel>:<senderId>'")
                if raw.lower() in seen:
                    raise ValueError(f"{raw!r} is linked to both {seen[raw.lower()]!r} and {name!r}")
                seen[raw.lower()] = name
        return v
