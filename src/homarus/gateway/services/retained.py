"""What the running gateway holds per run, per session and per connection, as counts.

Everything here has a bound (``gateway.memory``, ``session.transcriptCacheMb``, the heartbeat's
per-session queue, the idempotency cache): the report is how a test or an operator checks that a
gateway that has served a hundred thousand sessions holds no more than one that served a thousand.
Services not built yet are not built for it (an unused subsystem holds nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["retained"]


def retained(gw: GatewayContext) -> dict[str, int]:
    out: dict[str, int] = {
        "connections": len(gw.connections),
        "lanes": gw.lanes.kept(),
        "idempotencyKeys": len(gw.dedupe),
        **gw.bus.retained(),
    }
    if gw.built("sessions"):
        out.update(gw.sessions.retained())
    if gw.built("run_events"):
        out.update(gw.run_events.retained())
    if gw.built("runtime"):
        out["activeRuns"] = len(gw.runtime.runs)
    if gw.built("heartbeats"):
        out["systemEventSessions"] = len(gw.heartbeats.events)
    return out
