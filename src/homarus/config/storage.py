"""The ``storage`` section: where the gateway keeps its state.

``embedded`` (the default) is files and SQLite under the state directory. ``postgres`` connects
the gateway to a PostgreSQL server (``storage.postgres.url``, a secret), brings its schema up to
date and registers the gateway as a member of the cluster sharing that database; the state that
moves there is listed in docs/scale-out.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from homarus.config.base import ConfigModel

__all__ = ["PostgresConfig", "StorageConfig"]


class PostgresConfig(ConfigModel):
    #: ``postgresql://user:password@host:port/database`` (libpq's URL; ``?sslmode=…`` and the rest)
    url: SecretStr | None = None
    pool_min: int = Field(1, ge=1, le=64)
    pool_max: int = Field(10, ge=1, le=256)
    #: connecting, and waiting for a free connection of the pool
    connect_timeout_seconds: float = Field(5.0, gt=0, le=120)
    #: the longest any one statement may run
    statement_timeout_ms: int = Field(30_000, ge=100, le=3_600_000)
    #: a member that has not been seen for this long is no longer counted as one
    member_ttl_seconds: float = Field(15.0, ge=1, le=600)

    @field_validator("url")
    @classmethod
    def _scheme(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and not v.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        return v

    @model_validator(mode="after")
    def _pool(self) -> PostgresConfig:
        if self.pool_min > self.pool_max:
            raise ValueError("poolMin must not exceed poolMax")
        return self


class StorageConfig(ConfigModel):
    backend: Literal["embedded", "postgres"] = "embedded"
    postgres: PostgresConfig = Field(default_factory=PostgresConfig)

    @model_validator(mode="after")
    def _url_when_postgres(self) -> StorageConfig:
        if self.backend == "postgres" and self.postgres.url is None:
            raise ValueError("storage.backend postgres needs storage.postgres.url")
        return self
