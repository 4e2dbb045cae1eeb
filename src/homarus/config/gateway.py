"""The ``gateway`` section: port, bind address, client auth, tools over HTTP, Control UI, HTTP API."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from homarus.config.base import ConfigModel
from homarus.config.control_ui import ControlUiConfig
from homarus.config.http_api import GatewayHttpConfig
from homarus.config.values import resolve_bind_host

__all__ = ["DEFAULT_PORT", "AuthConfig", "AuthRateLimit", "GatewayConfig", "GatewayMemoryConfig", "GatewayToolsConfig"]

DEFAULT_PORT = 18789


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


class GatewayMemoryConfig(ConfigModel):
    """What the gateway keeps in memory of finished runs and per connection: each a count, so
    that a gateway serving a busy assistant for months holds the same amount on its last day as
    after its first thousand runs (transcript handles: ``session.transcriptCacheMb``)."""

    #: finished runs whose outcome stays at hand: ``agent.wait`` on them, and a retried
    #: idempotency key answered without running again (older ones: the run journal still has them)
    runs_kept: int = Field(1000, ge=10, le=1_000_000)
    #: the sessions one connection follows (``sessions.messages.subscribe``); past it, the one it
    #: followed least recently is let go
    watched_sessions_per_connection: int = Field(1024, ge=1, le=1_000_000)


class GatewayConfig(ConfigModel):
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    #: "loopback" (127.0.0.1), "lan" (0.0.0.0) or a literal IP address
    bind: str = "loopback"
    auth: AuthConfig = Field(default_factory=AuthConfig)
    tools: GatewayToolsConfig = Field(default_factory=GatewayToolsConfig)
    control_ui: ControlUiConfig = Field(default_factory=ControlUiConfig)
    http: GatewayHttpConfig = Field(default_factory=GatewayHttpConfig)
    #: runs accepted and not finished beyond which clients' new runs (``agent``, ``chat.send``, the
    #: OpenAI-compatible API, webhooks) are refused with a retryable error instead of queued;
    #: chat channels, cron and heartbeats are never refused (their work is already durable)
    max_pending_runs: int = Field(5000, ge=1, le=1_000_000)
    memory: GatewayMemoryConfig = Field(default_factory=GatewayMemoryConfig)

    @field_validator("bind")
    @classmethod
    def _bind_ok(cls, v: str) -> str:
        resolve_bind_host(v)
        return v
