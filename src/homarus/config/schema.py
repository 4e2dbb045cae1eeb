"""The configuration file's model tree.

Key names follow the original's `openclaw.json` (camelCase on disk, snake_case in Python) so
its users recognise them. Every model forbids unknown keys: a typo fails fast instead of being
silently ignored. Sections owned by later subsystems are added by them.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from homarus.config.agents import (
    DEFAULT_AGENT_ID,
    AgentEntry,
    AgentsConfig,
    AgentsDefaults,
    MessagesConfig,
    SubagentDefaults,
)
from homarus.config.automation import HooksConfig
from homarus.config.base import ConfigModel
from homarus.config.control_ui import ControlUiConfig
from homarus.config.cron import CronConfig
from homarus.config.http_api import GatewayHttpConfig
from homarus.config.models import ModelsConfig
from homarus.config.observability import LoggingConfig
from homarus.config.plugins import PluginsConfig
from homarus.config.skills import SkillsConfig
from homarus.config.tools import ToolsConfig

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
    "PluginsConfig",
    "SessionConfig",
    "SessionMaintenance",
    "SubagentDefaults",
    "is_loopback_host",
    "parse_duration_ms",
    "resolve_bind_host",
]

DEFAULT_PORT = 18789


_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str) -> int:
    """``"30d"`` → milliseconds. Units: ms, s, m, h, d."""
    match = re.fullmatch(r"(\d+)(ms|s|m|h|d)", text.strip())
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 30s, 5m, 2h, 30d)")
    return int(match.group(1)) * _UNITS_MS[match.group(2)]


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


class AuthRateLimit(ConfigModel):
    """Failed-auth limiter: after ``max_attempts`` failures in ``window_ms`` lock out for ``lockout_ms``."""

    max_attempts: int = Field(10, ge=1, le=10_000)
    window_ms: int = Field(60_000, ge=1_000)
    lockout_ms: int = Field(300_000, ge=0)
    # Unlike the original we do not exempt loopback by default: a local process flooding
    # guesses is exactly what the limiter is for, and a proxy in front makes everyone local.
    exempt_loopback: bool = False


class AuthConfig(ConfigModel):
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


class GatewayToolsConfig(ConfigModel):
    """Tools over HTTP (`/tools/invoke`): ``deny`` extends the built-in deny list, ``allow`` shrinks it."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


class GatewayConfig(ConfigModel):
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    #: "loopback" (127.0.0.1), "lan" (0.0.0.0) or a literal IP address
    bind: str = "loopback"
    auth: AuthConfig = Field(default_factory=AuthConfig)
    tools: GatewayToolsConfig = Field(default_factory=GatewayToolsConfig)
    control_ui: ControlUiConfig = Field(default_factory=ControlUiConfig)
    http: GatewayHttpConfig = Field(default_factory=GatewayHttpConfig)

    @field_validator("bind")
    @classmethod
    def _bind_ok(cls, v: str) -> str:
        resolve_bind_host(v)
        return v


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


class HomarusConfig(ConfigModel):
    #: editor hint, ignored by the gateway (JSON Schema URL)
    schema_: str | None = Field(None, alias="$schema")
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    session: SessionConfig = Field(default_factory=SessionConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    messages: MessagesConfig = Field(default_factory=MessagesConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    cron: CronConfig = Field(default_factory=CronConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)

    @model_validator(mode="after")
    def _hook_token_distinct(self) -> HomarusConfig:
        hook, gw = self.hooks.token, self.gateway.auth.token
        if hook is not None and gw is not None and hook.get_secret_value() == gw.get_secret_value():
            raise ValueError(
                "hooks.token must differ from gateway.auth.token (a leaked webhook secret must not open the gateway)"
            )
        return self
