"""Webhook agent runs (``POST /hooks/agent`` and agent mappings): accepted, run, delivered.

A run is journaled before the 202 answer; :func:`accept_and_run` then starts it in the
background, and its reply goes to the main session as a system event (``deliver``, default
true). After a restart the recovery rules (``run_recovery``) run again the ones that never started
and resume the ones that had, through :func:`run_and_deliver`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from homarus.agents.request import RunRequest
from homarus.errors import HomarusError
from homarus.gateway.services.runs import run_and_finish, start_run

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext, WakeMode

__all__ = ["KIND", "accept_and_run", "request_of", "run_and_deliver"]

log = logging.getLogger("homarus.hooks")

KIND: Final = "hook"


def request_of(gateway: GatewayContext, run_id: str, params: dict[str, Any]) -> RunRequest:
    timeout = params.get("timeoutSeconds")
    return RunRequest(
        run_id=run_id,
        session_key=gateway.sessions.resolve_key(str(params["sessionKey"])),
        message=str(params["message"]),
        model=params.get("model"),
        thinking=params.get("thinking"),
        timeout_s=float(timeout) if timeout else None,
        lane="cron",
        channel="hook",
        trigger="hook",
        origin={"kind": "hook", "path": params.get("path"), "name": params.get("name")},
    )


async def accept_and_run(gateway: GatewayContext, run_id: str, params: dict[str, Any]) -> bool:
    """Journal the run (a 202 then survives a restart) and start it in the background.

    False when ``run_id`` is already in the journal (a retry with the same idempotency key, maybe
    across a restart): that run goes on as it was, nothing new starts.
    """
    req = request_of(gateway, run_id, params)
    created, _ = await start_run(gateway, req, KIND, params)
    if created:
        _ = gateway.spawn(run_and_deliver(gateway, req, params))
    return created


async def run_and_deliver(gateway: GatewayContext, req: RunRequest, params: dict[str, Any]) -> None:
    outcome = await run_and_finish(gateway, req, KIND)
    if not params.get("deliver", True) or outcome.status != "ok" or outcome.silent or not outcome.text.strip():
        return
    mode: WakeMode = "next-heartbeat" if params.get("wakeMode") == "next-heartbeat" else "now"
    text = f"Hook {params.get('name') or 'Hook'} ({req.session_key.canonical}): {outcome.text.strip()[:4000]}"
    try:
        await gateway.heartbeats.wake(
            text, mode=mode, agent_id=req.session_key.agent_id, source=f"hook:{params.get('path')}"
        )
    except HomarusError:
        log.exception("could not deliver the reply of hook run %s", req.run_id)
