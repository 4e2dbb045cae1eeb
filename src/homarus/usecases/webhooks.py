"""Webhook work (``POST /hooks/wake``, ``/hooks/agent`` and mappings): the wake, the agent run, its
policy, its delivery.

The HTTP edge checks the request and parses it into one :class:`HookAction`; :meth:`Webhooks.submit`
does the rest. Policy first: the agent (``hooks.allowedAgentIds``) and the session key
(``hooks.allowRequestSessionKey``, ``defaultSessionKey``, ``allowedSessionKeyPrefixes``; a key is
always rebound to the target agent). External text is wrapped as untrusted content unless the
mapping sets ``allowUnsafeExternalContent``. An agent run is journaled before the answer and runs
in the background; its reply goes to the main session as a system event (``deliver``, default
true). After a restart the recovery rules (``recovery``) run again the ones that never started and
resume the ones that had, through :func:`run_and_deliver`.

One idempotency key gives one answer: for 5 minutes from memory (``wake`` too), and for an agent
run as long as the journal keeps it (the key names the run), so a retry after a crash or a restart
never starts a second run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from homarus.agents.request import RunRequest
from homarus.errors import HomarusError, InvalidRequest
from homarus.queue.dedupe import DedupeCache
from homarus.security.external_content import wrap_external_content
from homarus.sessions.keys import AGENT_ID_RE
from homarus.usecases.ports import Spawner
from homarus.usecases.runs import RunHost, run_and_finish, start_run

if TYPE_CHECKING:
    from homarus.config.automation import HooksConfig
    from homarus.config.schema import HomarusConfig
    from homarus.sessions.manager import SessionManager
    from homarus.usecases.heartbeat import Heartbeats
    from homarus.usecases.ports import WakeMode

__all__ = [
    "KIND",
    "HookAction",
    "HookAnswer",
    "WebhookHost",
    "Webhooks",
    "completion_of_record",
    "request_of",
    "run_and_deliver",
]

log = logging.getLogger("homarus.hooks")

KIND: Final = "hook"
SESSION_KEY_DISABLED: Final = (
    "sessionKey is disabled for external /hooks/agent payloads; set hooks.allowRequestSessionKey=true to enable"
)


class WebhookHost(RunHost, Spawner, Protocol):
    """What a webhook's work uses: the run services, sessions, and the heartbeat (delivery, wake)."""

    sessions: SessionManager
    heartbeats: Heartbeats


@dataclass(slots=True)
class HookAction:
    """One webhook's work, as the edge parsed it from a body or a mapping rendered it."""

    kind: str  # agent | wake | ignore
    message: str = ""
    text: str = ""
    mode: str = "now"
    name: str = "Hook"
    agent_id: str | None = None
    session_key: str | None = None
    deliver: bool = True
    allow_unsafe: bool = False
    model: str | None = None
    thinking: str | None = None
    timeout_seconds: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """What the edge answers: ``payload`` with ``status``; ``completion`` when the caller waited."""

    status: int
    payload: dict[str, Any]


class Webhooks:
    def __init__(self, host: WebhookHost) -> None:
        self.host = host
        #: idempotency keys of the last five minutes (wakes have no journal to answer from)
        self.dedupe = DedupeCache(ttl_s=300.0, max_entries=1000)

    async def submit(self, path: str, action: HookAction, idempotency_key: str | None) -> HookAnswer:
        """Do ``action`` (arrived at ``<hooks.path>/<path>``) once per idempotency key."""
        agent_id = agent_for(self.host.config, action.agent_id)
        dedupe_key = None
        if idempotency_key is not None:
            scope = json.dumps({"path": path, "agent": agent_id, "kind": action.kind}, sort_keys=True)
            dedupe_key = hashlib.sha256(f"{scope}\x00{idempotency_key}".encode()).hexdigest()
            cached = self.dedupe.get(dedupe_key)
            if cached is not None:
                if action.kind == "agent" and action.extra.get("wait"):
                    return await self._completed(str(cached.payload["runId"]), None, action)
                return HookAnswer(200 if action.kind == "wake" else 202, cached.payload)
        if action.kind == "wake":
            text = action.text if action.allow_unsafe else wrap_external_content(action.text, source="Webhook")
            mode: WakeMode = "next-heartbeat" if action.mode == "next-heartbeat" else "now"
            await self.host.heartbeats.wake(text, mode=mode, source="hook")
            payload: dict[str, Any] = {"ok": True, "mode": action.mode}
            if dedupe_key is not None:
                self.dedupe.put(dedupe_key, "accepted", payload=payload)
            return HookAnswer(200, payload)
        # a key names its run for good: a retry after a crash or restart finds it in the journal
        run_id = str(uuid.UUID(dedupe_key[:32])) if dedupe_key is not None else str(uuid.uuid4())
        params = {
            "message": action.message
            if action.allow_unsafe
            else wrap_external_content(action.message, source="Webhook"),
            "sessionKey": session_key_for(self.host.config.hooks, action, agent_id),
            "name": action.name,
            "deliver": action.deliver,
            "wakeMode": action.mode,
            "model": action.model,
            "thinking": action.thinking,
            "timeoutSeconds": action.timeout_seconds,
            "path": path,
        }
        _created, task = await accept_and_run(self.host, run_id, params)
        payload = {"ok": True, "runId": run_id}
        if dedupe_key is not None:
            self.dedupe.put(dedupe_key, "accepted", payload=payload)
        if action.extra.get("wait"):
            return await self._completed(run_id, task, action)
        return HookAnswer(202, payload)

    async def _completed(
        self, run_id: str, task: asyncio.Task[dict[str, Any]] | None, action: HookAction
    ) -> HookAnswer:
        """``waitForCompletion``: 200 ``{ok, runId, completion}`` once the run ended (the original's
        answer); a run that outlives its own timeout and a margin is answered 202 as if not waited."""
        limit = float(action.timeout_seconds or self.host.config.agents.defaults.timeout_seconds) + 30.0
        completion: dict[str, Any] | None
        if task is not None:
            try:
                async with asyncio.timeout(limit):
                    completion = await asyncio.shield(task)
            except TimeoutError:
                completion = None
        else:  # a retry of a run already accepted: the journal says when it ends
            completion = await wait_recorded(self.host, run_id, limit)
        if completion is None:
            return HookAnswer(202, {"ok": True, "runId": run_id, "pending": True})
        return HookAnswer(200, {"ok": True, "runId": run_id, "completion": completion})


# -- policy ----------------------------------------------------------------------------------------
def agent_for(config: HomarusConfig, requested: str | None) -> str:
    """The agent a webhook runs: the one asked for when it exists and ``hooks.allowedAgentIds``
    allows it, else the default (which the allowlist must allow too)."""
    default = config.agents.default_id
    candidate = requested.strip().lower() if requested and AGENT_ID_RE.match(requested.strip().lower()) else None
    allowed = config.hooks.allowed_agent_ids
    if candidate is not None and allowed is not None and "*" not in allowed and candidate not in allowed:
        raise InvalidRequest("agentId is not allowed by hooks.allowedAgentIds")
    agent = candidate if candidate in config.agents.ids else default
    if allowed is not None and "*" not in allowed and agent not in allowed:
        raise InvalidRequest("agentId is not allowed by hooks.allowedAgentIds")
    return agent


def session_key_for(cfg: HooksConfig, action: HookAction, agent_id: str) -> str:
    """The run's session: its own (``hook:<uuid>``) unless the policy lets the caller name one."""
    if action.extra.get("requestSessionKey") and not cfg.allow_request_session_key:
        raise InvalidRequest(SESSION_KEY_DISABLED)
    key = (action.session_key or "").strip() or cfg.default_session_key or f"hook:{uuid.uuid4()}"
    prefixes = [p.lower() for p in cfg.allowed_session_key_prefixes]
    if prefixes and not any(key.lower().startswith(p) for p in prefixes):
        raise InvalidRequest(f"sessionKey must start with one of: {', '.join(cfg.allowed_session_key_prefixes)}")
    parts = key.split(":")
    if parts[0] == "agent" and len(parts) >= 3:  # rebound to the target agent, never another one
        key = ":".join(parts[2:])
    return f"agent:{agent_id}:{key}"


# -- the run ---------------------------------------------------------------------------------------
def request_of(sessions: SessionManager, run_id: str, params: dict[str, Any]) -> RunRequest:
    timeout = params.get("timeoutSeconds")
    return RunRequest(
        run_id=run_id,
        session_key=sessions.resolve_key(str(params["sessionKey"])),
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
    host: WebhookHost, run_id: str, params: dict[str, Any]
) -> tuple[bool, asyncio.Task[dict[str, Any]] | None]:
    """Journal the run (a 202 then survives a restart) and start it in the background: (created,
    the task whose result is the run's completion).

    Not created when ``run_id`` is already in the journal (a retry with the same idempotency key,
    maybe across a restart): that run goes on as it was, nothing new starts.
    """
    req = request_of(host.sessions, run_id, params)
    created, _ = await start_run(host, req, KIND, params, admit=True)
    if not created:
        return False, None
    return True, host.spawn(run_and_deliver(host, req, params))


async def run_and_deliver(host: WebhookHost, req: RunRequest, params: dict[str, Any]) -> dict[str, Any]:
    """Run, deliver the reply (a system event in the main session), and say how it went in the
    original's ``completion`` shape (``waitForCompletion`` answers with it)."""
    outcome = await run_and_finish(host, req, KIND)
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
        await host.heartbeats.wake(
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


async def wait_recorded(host: RunHost, run_id: str, timeout_s: float) -> dict[str, Any] | None:
    """Wait for a journaled run to end; its completion, or None on timeout. The end is signalled
    (``RunEvents.wait_recorded``, set once the journal has it), not polled for."""
    record = await asyncio.to_thread(host.journal.get, run_id)
    if record is None or not record.terminal:
        if not await host.run_events.wait_recorded(run_id, timeout_s):
            return None
        record = await asyncio.to_thread(host.journal.get, run_id)
    return completion_of_record(record) if record is not None and record.terminal else None
