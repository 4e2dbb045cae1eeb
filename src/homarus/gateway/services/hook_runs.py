"""Webhook agent runs (``POST /hooks/agent`` and agent mappings): accepted, run, delivered.

A run is journaled before the 202 answer; :func:`accept_and_run` then starts it in the
background, and its reply goes to the main session as a system event (``deliver``, default
true). After a restart the recovery rules (``run_recovery``) run again the ones that never started
and resume the ones that had, through :func:`run_and_deliver`.
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

__all__ = ["KIND", "accept_and_run", "completion_of_record", "request_of", "run_and_deliver", "wait_recorded"]

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


async def accept_and_run(
    gateway: GatewayContext, run_id: str, params: dict[str, Any]
) -> tuple[bool, asyncio.Task[dict[str, Any]] | None]:
    """Journal the run (a 202 then survives a restart) and start it in the background: (created,
    the task whose result is the run's completion).

    Not created when ``run_id`` is already in the journal (a retry with the same idempotency key,
    maybe across a restart): that run goes on as it was, nothing new starts.
    """
    req = request_of(gateway, run_id, params)
    created, _ = await start_run(gateway, req, KIND, params, admit=True)
    if not created:
        return False, None
    return True, gateway.spawn(run_and_deliver(gateway, req, params))


async def run_and_deliver(gateway: GatewayContext, req: RunRequest, params: dict[str, Any]) -> dict[str, Any]:
    """Run, deliver the reply (a system event in the main session), and say how it went in the
    original's ``completion`` shape (``waitForCompletion`` answers with it)."""
    outcome = await run_and_finish(gateway, req, KIND)
    text = outcome.text.strip()
    disposition = "silent" if outcome.silent else ("visible" if text else "empty")
    completion: dict[str, Any] = {
        "status": "ok" if outcome.status == "ok" else "error",
        "replyDisposition": disposition,
    }
    if outcome.status != "ok":
        completion["error"] = outcome.error or outcome.status
    if not params.get("deliver", True) or outcome.status != "ok" or disposition != "visible":
        return completion
    mode: WakeMode = "next-heartbeat" if params.get("wakeMode") == "next-heartbeat" else "now"
    message = f"Hook {params.get('name') or 'Hook'} ({req.session_key.canonical}): {text[:4000]}"
    completion["deliveryAttempted"] = True
    try:
        await gateway.heartbeats.wake(
            message, mode=mode, agent_id=req.session_key.agent_id, source=f"hook:{params.get('path')}"
        )
    except HomarusError:
        log.exception("could not deliver the reply of hook run %s", req.run_id)
        completion.update(delivered=False, deliveryError="delivery-failed")
        return completion
    completion["delivered"] = True
    return completion


def completion_of_record(record: Any) -> dict[str, Any]:
    """The completion of a run that another request started (known from the journal only)."""
    completion: dict[str, Any] = {"status": "ok" if record.status == "ok" else "error"}
    result = record.result if isinstance(record.result, dict) else {}
    payloads = ((result.get("result") or {}).get("payloads")) or []
    completion["replyDisposition"] = "visible" if any(p.get("text") for p in payloads) else "empty"
    if record.status != "ok":
        completion["error"] = (record.error or {}).get("message") if isinstance(record.error, dict) else record.status
    return completion


async def wait_recorded(gateway: GatewayContext, run_id: str, timeout_s: float) -> dict[str, Any] | None:
    """Wait for a journaled run to end; its completion, or None on timeout. The end is signalled
    (``RunEvents.wait_recorded``, set once the journal has it), not polled for."""
    record = await asyncio.to_thread(gateway.journal.get, run_id)
    if record is None or not record.terminal:
        if not await gateway.run_events.wait_recorded(run_id, timeout_s):
            return None
        record = await asyncio.to_thread(gateway.journal.get, run_id)
    return completion_of_record(record) if record is not None and record.terminal else None
