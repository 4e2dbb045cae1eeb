"""The ``models`` section: model providers, their wire API, endpoint, key and model list."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator

from homarus.config.base import ConfigModel
from homarus.patterns import Pattern

__all__ = ["ModelCost", "ModelEntry", "ModelsConfig", "ProviderConfig"]

Api = Literal["openai-completions", "anthropic-messages", "scripted"]


class ModelCost(ConfigModel):
    """Dollars per million tokens."""

    input: float = Field(0.0, ge=0)
    output: float = Field(0.0, ge=0)
    cache_read: float = Field(0.0, ge=0)
    cache_write: float = Field(0.0, ge=0)


class ModelEntry(ConfigModel):
    id: str = Field(min_length=1, max_length=200)
    name: str | None = None
    context_window: int = Field(200_000, ge=1000)
    max_tokens: int = Field(8192, ge=1)
    reasoning: bool = False
    cost: ModelCost = Field(default_factory=ModelCost)


class ProviderConfig(ConfigModel):
    api: Api = "openai-completions"
    base_url: Annotated[str, Pattern(r"^https?://")] | None = None
    #: falls back to $<PROVIDER>_API_KEY (e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY)
    api_key: SecretStr | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    models: tuple[ModelEntry, ...] = ()
    #: request timeout in seconds (whole response, streaming included)
    timeout_seconds: int = Field(600, ge=1, le=3600)
    #: for api "scripted": the script (a list of steps) or a path to a JSON/JSON5 file holding one
    script: list[Any] | str | None = None

    @field_validator("models")
    @classmethod
    def _unique(cls, v: tuple[ModelEntry, ...]) -> tuple[ModelEntry, ...]:
        ids = [m.id for m in v]
        if len(ids) != len(set(ids)):
            raise ValueError("duplicate model id")
        return v


class ModelsConfig(ConfigModel):
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)

    @field_validator("providers")
    @classmethod
    def _ids(cls, v: dict[str, ProviderConfig]) -> dict[str, ProviderConfig]:
        for pid in v:
            if not pid or "/" in pid or pid != pid.strip():
                raise ValueError(f"invalid provider id {pid!r}")
        return v
