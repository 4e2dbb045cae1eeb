"""`wake`, `system-event`, `last-heartbeat`, `set-heartbeats` (openclaw-protocol.md §2.3)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.protocol.compat import Unsupported, compat_params

__all__: list[str] = []


class _Wake(Params):
    text: str = Field(min_length=1, max_length=20_000)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)


@compat_params(unsupported={"sessionKey": Unsupported("a wake runs the agent's heartbeat in its main session")})
class WakeParams(_Wake):
    mode: Literal["now", "next-heartbeat"] = "now"


class SystemEventParams(_Wake):
    mode: Literal["now", "next-heartbeat"] = "next-heartbeat"


class SetHeartbeatsParams(Params):
    enabled: bool


def _known(call: MethodCall, agent_id: str | None) -> None:
    if agent_id is not None and agent_id not in call.gateway.sessions.agent_ids:
        raise InvalidRequest(f'unknown agent id "{agent_id}"')


async def wake(call: MethodCall, p: WakeParams) -> dict[str, Any]:
    _known(call, p.agent_id)
    await call.gateway.heartbeats.wake(p.text, mode=p.mode, agent_id=p.agent_id, source="wake")
    return {"ok": True}


async def system_event(call: MethodCall, p: SystemEventParams) -> dict[str, Any]:
    _known(call, p.agent_id)
    await call.gateway.heartbeats.wake(p.text, mode=p.mode, agent_id=p.agent_id, source="system-event")
    return {"ok": True}


async def last_heartbeat(call: MethodCall, p: EmptyParams) -> dict[str, Any] | None:
    last = call.gateway.heartbeats.last
    return None if last is None else {k: v for k, v in last.items() if k != "text"}


async def set_heartbeats(call: MethodCall, p: SetHeartbeatsParams) -> dict[str, Any]:
    call.gateway.heartbeats.enabled = p.enabled
    return {"ok": True, "enabled": p.enabled}
