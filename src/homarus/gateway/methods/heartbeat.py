"""`wake`, `system-event`, `last-heartbeat`, `set-heartbeats` (openclaw-protocol.md §2.3)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from homarus.gateway.router import EmptyParams, MethodCall, Params

__all__: list[str] = []


class WakeParams(Params):
    text: str = Field(min_length=1, max_length=20_000)
    mode: Literal["now", "next-heartbeat"] = "now"


class SystemEventParams(WakeParams):
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    mode: Literal["now", "next-heartbeat"] = "next-heartbeat"


class SetHeartbeatsParams(Params):
    enabled: bool


async def wake(call: MethodCall, p: WakeParams) -> dict[str, Any]:
    await call.gateway.heartbeats.wake(p.text, mode=p.mode, source="wake")
    return {"ok": True}


async def system_event(call: MethodCall, p: SystemEventParams) -> dict[str, Any]:
    await call.gateway.heartbeats.wake(p.text, mode=p.mode, agent_id=p.agent_id, source="system-event")
    return {"ok": True}


async def last_heartbeat(call: MethodCall, p: EmptyParams) -> dict[str, Any] | None:
    last = call.gateway.heartbeats.last
    return None if last is None else {k: v for k, v in last.items() if k != "text"}


async def set_heartbeats(call: MethodCall, p: SetHeartbeatsParams) -> dict[str, Any]:
    call.gateway.heartbeats.enabled = p.enabled
    return {"ok": True, "enabled": p.enabled}
