"""Webhook agent runs (``POST /hooks/agent`` and agent mappings): accepted, run, delivered.

A run is journaled before the 202 answer; :func:`accept_and_run` then starts it in the
background, and its reply goes to the main session as a system event (``deliver``, default
true). After a restart :func:`resume_hook_runs` runs again the ones that never started.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final

from homarus.agents.request import RunRequest
from homarus.errors import HomarusError
from homarus.gateway.services.runs import run_and_finish, start_run

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext, WakeMode
    from homarus.queue.journal import RunRecord

__all__ = ["KIND", "accept_and_run", "resume_hook_runs"]

log = logging.getLogger("homarus.hooks")

KIND: Final = "hook"


def _request_of(gateway: GatewayContext, run_id: str, params: dict[str, Any]) -> RunRequest:
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


async def accept_and_run(gateway: GatewayContext, run_id: str, params: dict[str, Any]) -> None:
    """Journal the run (a 202 then survives a restart) and start it in the background."""
    req = _request_of(gateway, run_id, params)
    await start_run(gateway, req, KIND, params)
    _ = gateway.spawn(_run_and_deliver(gateway, req, params))


async def _run_and_deliver(gateway: GatewayContext, req: RunRequest, params: dict[str, Any]) -> None:
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


async def resume_hook_runs(gateway: GatewayContext, interrupted: list[RunRecord]) -> int:
    """Runs a webhook got a 202 for but that never started (the gateway stopped first): run them now."""
    resumed = 0
    for record in interrupted:
        if record.kind != KIND or record.started_at is not None:
            continue
        params = record.params if isinstance(record.params, dict) else {}
        try:
            req = _request_of(gateway, record.run_id, params)
        except (HomarusError, KeyError) as exc:
            log.error("hook run %s cannot be resumed: %s", record.run_id, exc)
            continue
        log.warning("resuming hook run %s accepted before the restart", record.run_id)
        _ = gateway.spawn(_run_and_deliver(gateway, req, params))
        resumed += 1
    await asyncio.sleep(0)
    return resumed
