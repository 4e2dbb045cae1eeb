"""`wake`, `system-event`, `last-heartbeat`, `set-heartbeats` (openclaw-protocol.md §2.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.security.scopes import ADMIN, READ, WRITE

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway

__all__ = ["register"]


class WakeParams(Params):
    text: str = Field(min_length=1, max_length=20_000)
    mode: Literal["now", "next-heartbeat"] = "now"


class SystemEventParams(WakeParams):
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    mode: Literal["now", "next-heartbeat"] = "next-heartbeat"


class SetHeartbeatsParams(Params):
    enabled: bool


async def wake(call: MethodCall, p: WakeParams) -> dict[str, Any]:
    await call.gateway.wake(p.text, mode=p.mode, source="wake")
    return {"ok": True}


async def system_event(call: MethodCall, p: SystemEventParams) -> dict[str, Any]:
    await call.gateway.wake(p.text, mode=p.mode, agent_id=p.agent_id, source="system-event")
    return {"ok": True}


async def last_heartbeat(call: MethodCall, p: EmptyParams) -> dict[str, Any] | None:
    last = call.gateway.heartbeats.last
    return None if last is None else {k: v for k, v in last.items() if k != "text"}


async def set_heartbeats(call: MethodCall, p: SetHeartbeatsParams) -> dict[str, Any]:
    call.gateway.heartbeats.enabled = p.enabled
    return {"ok": True, "enabled": p.enabled}


def register(gateway: Gateway) -> None:
    m = gateway.methods
    m.register("wake", wake, scope=WRITE, params=WakeParams)
    m.register("system-event", system_event, scope=ADMIN, params=SystemEventParams)
    m.register("last-heartbeat", last_heartbeat, scope=READ)
    m.register("set-heartbeats", set_heartbeats, scope=ADMIN, params=SetHeartbeatsParams)
