"""`health` (always allowed) and `system-presence`."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from homarus.gateway.router import MethodCall, Params

__all__: list[str] = []


class HealthParams(Params):
    probe: bool | None = Field(default=None)


async def health(call: MethodCall, params: HealthParams) -> dict[str, Any]:
    return call.gateway.health_summary(probe=bool(params.probe))


async def system_presence(call: MethodCall, params: Params) -> list[dict[str, Any]]:
    return call.gateway.presence.list()
