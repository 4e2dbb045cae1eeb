"""``models.list`` (operator.read): the model catalog the gateway runs with, in the original's
shape, so that its ``models list`` (which requires the ``published-model-catalog`` capability)
shows Homarus's models. With no provider configured it lists the built-in offline model."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from homarus.gateway.router import MethodCall, Params
from homarus.protocol.compat import compat_params

__all__: list[str] = []

#: the offline model every gateway has (``homarus/echo``, the no-key default)
BUILTIN: dict[str, Any] = {
    "id": "echo",
    "name": "Homarus echo (offline)",
    "provider": "homarus",
    "contextWindow": 200000,
    "reasoning": False,
    "local": True,
    "input": ["text"],
}


_NO_AUTH_PROFILES = "Homarus keeps one credential per provider (the config or the secrets file), no auth profiles"


@compat_params(
    inert={
        "authProfileId": _NO_AUTH_PROFILES,
        "includeProviderCapabilities": "each row carries what Homarus knows of a model (input kinds, context window)",
        "includeDefaultModels": "the configured models are the catalogue; nothing is added by default",
        "preparedOnly": "every configured model is ready to use (nothing is prepared or downloaded)",
    }
)
class ListParams(Params):
    #: "provider-config" is the original's name for the configured view
    view: Literal["default", "all", "configured", "provider-config"] | None = None
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    include_details: bool | None = Field(default=None, alias="includeDetails")
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    provider: str | None = Field(default=None, max_length=64)
    refresh: bool | None = None


async def models_list(call: MethodCall, p: ListParams) -> dict[str, Any]:
    cfg = call.gateway.config
    primary = cfg.agents.defaults.model.primary or ""
    rows: list[dict[str, Any]] = []
    for provider_id, provider in cfg.models.providers.items():
        if p.provider is not None and provider_id != p.provider:
            continue
        for model in provider.models:
            ref = f"{provider_id}/{model.id}"
            row: dict[str, Any] = {
                "id": model.id,
                "name": model.name or model.id,
                "provider": provider_id,
                "contextWindow": model.context_window,
                "reasoning": model.reasoning,
                "input": ["text"],
                "tags": ["default"] if ref == primary else [],
                "available": True,
            }
            rows.append(row)
    if not rows and p.provider in (None, "homarus"):
        rows.append({**BUILTIN, "tags": ["default"], "available": True})
    if p.view != "all" and any("default" in r["tags"] for r in rows):
        rows = sorted(rows, key=lambda r: "default" not in r["tags"])
    return {"models": rows}
