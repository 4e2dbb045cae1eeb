"""The configuration file's model tree.

Key names follow the original's `openclaw.json` (camelCase on disk, snake_case in Python) so
its users recognise them. Every model forbids unknown keys: a typo fails fast instead of being
silently ignored. Sections owned by later subsystems are added by them.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "DEFAULT_AGENT_ID",
    "DEFAULT_PORT",
    "AgentEntry",
    "AgentsConfig",
    "AgentsDefaults",
    "AuthConfig",
    "AuthRateLimit",
    "GatewayConfig",
    "HomarusConfig",
    "SessionConfig",
    "is_loopback_host",
    "resolve_bind_host",
]

DEFAULT_PORT = 18789
DEFAULT_AGENT_ID = "main"
_AGENT_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"


def resolve_bind_host(bind: str) -> str:
    """Turn a bind mode or address into the host to listen on; ValueError when neither."""
    if bind == "loopback":
        return "127.0.0.1"
    if bind == "lan":
        return "0.0.0.0"
    try:
        return str(ipaddress.ip_address(bind))
    except ValueError:
        raise ValueError(f"bind must be 'loopback', 'lan' or an IP address, not {bind!r}") from None


def is_loopback_host(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        validate_default=True,
    )


class AuthRateLimit(_Model):
    """Failed-auth limiter: after ``max_attempts`` failures in ``window_ms`` lock out for ``lockout_ms``."""

    max_attempts: int = Field(10, ge=1, le=10_000)
    window_ms: int = Field(60_000, ge=1_000)
    lockout_ms: int = Field(300_000, ge=0)
    # Unlike the original we do not exempt loopback by default: a local process flooding
    # guesses is exactly what the limiter is for, and a proxy in front makes everyone local.
    exempt_loopback: bool = False


class AuthConfig(_Model):
    mode: Literal["token", "password", "none"] = "token"
    token: SecretStr | None = None
    password: SecretStr | None = None
    rate_limit: AuthRateLimit = Field(default_factory=AuthRateLimit)

    @field_validator("token", "password")
    @classmethod
    def _not_blank(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value().strip()) < 8:
            raise ValueError("must be at least 8 characters")
        return v

    @model_validator(mode="after")
    def _password_present(self) -> AuthConfig:
        if self.mode == "password" and self.password is None:
            raise ValueError("auth.mode 'password' needs gateway.auth.password")
        return self


class GatewayConfig(_Model):
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    #: "loopback" (127.0.0.1), "lan" (0.0.0.0) or a literal IP address
    bind: str = "loopback"
    auth: AuthConfig = Field(default_factory=AuthConfig)

    @field_validator("bind")
    @classmethod
    def _bind_ok(cls, v: str) -> str:
        resolve_bind_host(v)
        return v


class SessionConfig(_Model):
    main_key: str = Field("main", pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    scope: Literal["per-sender", "global"] = "per-sender"


class AgentEntry(_Model):
    id: str = Field(pattern=_AGENT_ID_PATTERN)
    default: bool = False
    name: str | None = None
    workspace: str | None = None


class AgentsDefaults(_Model):
    workspace: str | None = None


class AgentsConfig(_Model):
    defaults: AgentsDefaults = Field(default_factory=AgentsDefaults)
    list: tuple[AgentEntry, ...] = ()

    @field_validator("list")
    @classmethod
    def _unique_ids(cls, v: tuple[AgentEntry, ...]) -> tuple[AgentEntry, ...]:
        seen: set[str] = set()
        for entry in v:
            if entry.id in seen:
                raise ValueError(f"duplicate agent id {entry.id!r}")
            seen.add(entry.id)
        if sum(1 for e in v if e.default) > 1:
            raise ValueError("more than one agent is marked default")
        return v

    @property
    def default_id(self) -> str:
        for entry in self.list:
            if entry.default:
                return entry.id
        return self.list[0].id if self.list else DEFAULT_AGENT_ID

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.list) or (DEFAULT_AGENT_ID,)


class HomarusConfig(_Model):
    #: editor hint, ignored by the gateway (JSON Schema URL)
    schema_: str | None = Field(None, alias="$schema")
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    session: SessionConfig = Field(default_factory=SessionConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)
