"""The ``hooks`` section: public webhooks.

Webhooks are the surface exposed to the internet, so the section is strict: enabling it needs its
own token (at least 16 characters, different from the gateway's — checked in ``schema.py``), the
base path cannot be ``/``, a request's own ``sessionKey`` is refused unless allowed, and the
session-key prefixes must leave room for the generated ``hook:<uuid>`` keys.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from homarus.config.base import ConfigModel
from homarus.patterns import Pattern

__all__ = ["HookMapping", "HookMatch", "HookTransform", "HooksConfig"]


class HookMatch(ConfigModel):
    #: the sub-path after ``hooks.path`` (without slashes)
    path: str | None = Field(None, max_length=128)
    #: equals ``payload.source``
    source: str | None = Field(None, max_length=128)


class HookTransform(ConfigModel):
    #: a ``.py`` file relative to ``hooks.transformsDir`` (never outside it)
    module: str = Field(min_length=1, max_length=256)
    #: the function to call (default ``transform``)
    export: Annotated[str, Pattern(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")] = "transform"


class HookMapping(ConfigModel):
    id: str | None = Field(None, max_length=64)
    match: HookMatch = Field(default_factory=HookMatch)
    action: Literal["agent", "wake", "ignore"] = "agent"
    #: ``github`` (event header → message) or ``json`` (the whole payload) fill the templates
    preset: Literal["github", "json"] | None = None
    wake_mode: Literal["now", "next-heartbeat"] = "now"
    name: str | None = Field(None, max_length=128)
    agent_id: str | None = Field(None, max_length=64)
    session_key: str | None = Field(None, max_length=512)
    message_template: str | None = Field(None, max_length=20_000)
    text_template: str | None = Field(None, max_length=20_000)
    deliver: bool = True
    allow_unsafe_external_content: bool = False
    model: str | None = Field(None, min_length=1, max_length=200)
    thinking: str | None = Field(None, max_length=20)
    timeout_seconds: int | None = Field(None, ge=1, le=86_400)
    transform: HookTransform | None = None


class HooksConfig(ConfigModel):
    enabled: bool = False
    token: SecretStr | None = None
    path: str = "/hooks"
    max_body_bytes: int = Field(262_144, ge=1024, le=16 * 1024 * 1024)
    allow_request_session_key: bool = False
    default_session_key: str | None = Field(None, max_length=512)
    #: lower-cased prefixes every hook session key must start with (empty: any)
    allowed_session_key_prefixes: tuple[str, ...] = ()
    #: ``None`` or ``["*"]``: any agent; ``[]``: none
    allowed_agent_ids: tuple[str, ...] | None = None
    mappings: tuple[HookMapping, ...] = ()
    #: where transform modules live (default ``<config dir>/hooks/transforms``)
    transforms_dir: str | None = None
    #: failed token checks per client IP in ``window`` before ``429``
    max_auth_failures: int = Field(20, ge=1, le=10_000)

    @field_validator("token")
    @classmethod
    def _token_strong(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value().strip()) < 16:
            raise ValueError("must be at least 16 characters")
        return v

    @field_validator("path")
    @classmethod
    def _path_ok(cls, v: str) -> str:
        v = v.rstrip("/")
        if not v or not re.fullmatch(r"/[A-Za-z0-9_./-]{1,128}", v) or ".." in v:
            raise ValueError("must be a path like /hooks (not / and without ..)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> HooksConfig:
        if self.enabled and self.token is None:
            raise ValueError("hooks.enabled needs hooks.token (a secret of at least 16 characters)")
        prefixes = [p.lower() for p in self.allowed_session_key_prefixes]
        if prefixes and self.default_session_key is None and not any("hook:".startswith(p) for p in prefixes):
            raise ValueError("allowedSessionKeyPrefixes must include 'hook:' when defaultSessionKey is not set")
        return self
