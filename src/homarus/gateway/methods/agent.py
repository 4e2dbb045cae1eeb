"""`agent` (accepted res, events, final res with the same id) and `agent.wait`.

An accepted run is first written to the run journal, so a restart can never lose it, and to the
idempotency cache: a retry with the same ``idempotencyKey`` gets the same run, never a second one.
"""

from __future__ import annotations

import asyncio
import copy
import time
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from homarus.agents.request import RunRequest
from homarus.errors import InvalidRequest, Unavailable
from homarus.gateway.router import MethodCall, Params
from homarus.gateway.services.warm import runs_ready
from homarus.patterns import Pattern
from homarus.protocol.compat import INTERNAL, Unsupported, compat_params
from homarus.security.scopes import ADMIN
from homarus.usecases.commands import run_command
from homarus.usecases.runs import RunFailed, final_payload, queue_position, run_and_finish, start_run
from homarus.usecases.session_events import emit_session_changed

if TYPE_CHECKING:
    from homarus.queue.journal import RunRecord
    from homarus.sessions.manager import SessionRef

__all__ = ["agent", "agent_wait"]

_Idem = Field(alias="idempotencyKey", min_length=1, max_length=256)


_DELIVERY = "delivery goes to channel/to/replyTo; account, thread and group routing are not supported here"


@compat_params(
    inert={
        name: INTERNAL
        for name in (
            "acpTurnSource",
            "bootstrapContextRunKind",
            "cleanupBundleMcpOnRunEnd",
            "execApprovalFollowupExpectedSessionId",
            "forceCodeModeTools",
            "forceRestartSafeTools",
            "inputProvenance",
            "internalEvents",
            "internalExecutionIdentityRecoveryAttempt",
            "internalExecutionIdentityRetry",
            "internalRuntimeHandoffId",
            "sessionEffects",
            "sourceReplyDeliveryMode",
            "voiceWakeTrigger",
            "swarmOutputSchema",
        )
    }
    | {"expectedExistingSessionId": "Homarus has one writer per session store; compare-and-set guards are not needed"},
    unsupported={
        "accountId": Unsupported(_DELIVERY),
        "replyAccountId": Unsupported(_DELIVERY),
        "replyChannel": Unsupported(_DELIVERY),
        "threadId": Unsupported(_DELIVERY),
        "groupId": Unsupported(_DELIVERY),
        "groupChannel": Unsupported(_DELIVERY),
        "groupSpace": Unsupported(_DELIVERY),
        "cwd": Unsupported("runs work in their agent's workspace"),
        "promptMode": Unsupported("the system prompt is always built in full (its size is bounded)", "full"),
        "bootstrapContextMode": Unsupported("the workspace's bootstrap files are always part of the prompt"),
        "disableMessageTool": Unsupported("tool policy comes from the config (tools.deny)", False),
        "suppressPromptPersistence": Unsupported("every Homarus run keeps its transcript on disk", False),
        "modelRun": Unsupported("every run is an agent run with its tools", False),
        "swarmCollector": Unsupported("agent swarms are not a Homarus feature", False),
    },
)
class AgentParams(Params):
    message: str = Field(min_length=1, max_length=2_000_000)
    idempotency_key: str = _Idem
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    session_id: str | None = Field(default=None, alias="sessionId", max_length=128)
    provider: str | None = Field(default=None, max_length=100)
    model: str | None = Field(default=None, max_length=200)
    thinking: str | None = Field(default=None, max_length=20)
    deliver: bool | None = None
    channel: str | None = Field(default=None, max_length=64)
    to: str | None = Field(default=None, max_length=512)
    reply_to: str | None = Field(default=None, alias="replyTo", max_length=512)
    timeout: int | None = Field(default=None, ge=1, le=86_400)
    best_effort_deliver: bool | None = Field(default=None, alias="bestEffortDeliver")
    lane: Annotated[str, Pattern("^(main|subagent|cron|nested)$")] | None = None
    extra_system_prompt: str | None = Field(default=None, alias="extraSystemPrompt", max_length=100_000)
    label: str | None = Field(default=None, max_length=100)
    attachments: list[dict[str, Any]] | None = Field(default=None, max_length=8)


class WaitParams(Params):
    run_id: str = Field(alias="runId", min_length=1, max_length=256)
    timeout_ms: int = Field(default=30_000, alias="timeoutMs", ge=0, le=3_600_000)


def _model_ref(p: AgentParams) -> str | None:
    if p.provider and p.model:
        return f"{p.provider}/{p.model}"
    return p.model


async def agent(call: MethodCall, p: AgentParams) -> dict[str, Any]:
    gw = call.gateway
    await runs_ready()  # a cold gateway imports the agent loop off the event loop
    run_id = p.idempotency_key
    cached = gw.dedupe.get(f"agent:{run_id}")
    if cached is not None:
        return await _replay(call, run_id, cached.status, cached.payload, cached.error)
    record = gw.journal.get(run_id)  # a read never waits for a writer: no worker thread
    if record is not None:  # known from before a reconnect or a restart
        return await _replay(call, run_id, record.status, record.result, record.error)
    model = _model_ref(p)
    if model and ADMIN not in call.client.scopes:
        raise InvalidRequest("provider/model overrides are not authorized for this caller.")
    if p.agent_id is not None and p.agent_id not in gw.sessions.agent_ids:
        raise InvalidRequest(f'unknown agent id "{p.agent_id}"')
    if p.message.strip() in ("/new", "/reset") and ADMIN not in call.client.scopes:
        raise InvalidRequest("missing scope: operator.admin")
    key = gw.sessions.resolve_key(p.session_key, p.agent_id)
    gw.bus.own_run(run_id, call.client.conn_id)  # a targeted client gets this run's events
    reply = await run_command(gw, p.message.strip(), key.canonical)
    if reply is not None:  # a plugin's chat command answers without a model run
        now = int(time.time() * 1000)
        return {
            "runId": run_id,
            "status": "ok",
            "summary": "completed",
            "result": {
                "payloads": [{"text": reply}] if reply else [],
                "meta": {"durationMs": 0, "command": True, "startedAt": now},
            },
        }
    if model:
        gw.models.resolve(model)  # unknown model: refuse now, not after "accepted"
    req = RunRequest(
        run_id=run_id,
        session_key=key,
        message=p.message,
        model=model,
        thinking=p.thinking,
        timeout_s=float(p.timeout) if p.timeout else None,
        lane=p.lane or "main",
        extra_system_prompt=p.extra_system_prompt,
        channel=p.channel,
        origin=call.client.origin(),
    )
    ahead = queue_position(gw, req)
    params = p.model_dump(by_alias=True, exclude_none=True)
    ref = gw.sessions.get_if_open(key)  # an existing session: nothing to create, no worker thread
    if ref is None:
        refs: list[SessionRef] = []
        prepare = lambda: refs.append(gw.sessions.ensure(key, label=p.label))  # noqa: E731
        await start_run(gw, req, "agent", params, admit=True, prepare=prepare)
        ref = refs[0]
    else:
        await start_run(gw, req, "agent", params, admit=True)
    gw.dedupe.put(f"agent:{run_id}", "accepted")
    emit_session_changed(gw, key, "create" if ref.created else "send", runId=run_id)
    call.ack(
        {
            "runId": run_id,
            "sessionKey": key.canonical,
            "agentId": key.agent_id,
            "status": "accepted",
            "acceptedAt": int(time.time() * 1000),
            # the runs this one waits for: its session's, and its lane's beyond the free slots
            **({"queuePosition": ahead} if ahead else {}),
        }
    )
    # the gateway owns the run: a caller that goes away after "accepted" must not take it down
    outcome = await asyncio.shield(gw.spawn(run_and_finish(gw, req, "agent")))
    payload = final_payload(outcome)
    if outcome.status == "error":
        raise RunFailed(
            outcome.error or "run failed",
            {"runId": run_id, "status": "error", "summary": outcome.error or "run failed"},
        )
    return payload


async def _replay(call: MethodCall, run_id: str, status: str, payload: Any, error: Any) -> dict[str, Any]:
    gw = call.gateway
    if status in ("accepted", "running", "started", "in_flight"):
        call.ack({"runId": run_id, "status": "accepted", "meta": {"cached": True}})
        recorded = await gw.run_events.wait_recorded(run_id, 3600.0)  # its outcome stored, not only announced
        cached = gw.dedupe.get(f"agent:{run_id}")
        record = None if cached is not None and cached.terminal else gw.journal.get(run_id)
        if cached is not None and cached.terminal:
            status, payload, error = cached.status, cached.payload, cached.error
        elif record is not None and record.terminal:  # it ran on another gateway of the cluster
            status, payload, error = record.status, record.result, record.error
        elif not recorded:
            raise Unavailable("run is still in progress", retryable=True)
    if status == "interrupted":
        raise RunFailed(
            "run was interrupted by a gateway restart",
            {"runId": run_id, "status": "error", "summary": "interrupted", "interrupted": True},
        )
    if status == "error":
        message = (error or {}).get("message") if isinstance(error, dict) else None
        raise RunFailed(message or "run failed", {"runId": run_id, "status": "error", "summary": message or "error"})
    result: dict[str, Any] = copy.deepcopy(payload) if payload else {"runId": run_id, "status": "ok", "result": {}}
    inner = result.setdefault("result", {})
    if isinstance(inner, dict):
        inner.setdefault("meta", {})["cached"] = True
    return result


async def agent_wait(call: MethodCall, p: WaitParams) -> dict[str, Any]:
    """The run's end, or after ``timeoutMs`` ``status: timeout`` with where it stands (``state``:
    queued, running or resumed), as the journal knows it (so also after a restart)."""
    gw = call.gateway
    record = gw.journal.get(p.run_id)
    for prefix in ("agent", "chat"):
        cached = gw.dedupe.get(f"{prefix}:{p.run_id}")
        if cached is not None and cached.terminal:
            snap = gw.run_events.snapshots.get(p.run_id)
            return _wait_result(p.run_id, cached.status, snap, cached.error, record=record)
    if record is not None and record.terminal:
        return _wait_result(p.run_id, record.status, None, record.error, record=record)
    snap = await gw.run_events.wait(p.run_id, p.timeout_ms / 1000)
    if snap is None:
        out: dict[str, Any] = {"runId": p.run_id, "status": "timeout"}
        record = gw.journal.get(p.run_id)
        if record is not None:
            out["state"] = record.state
        return out
    return _wait_result(p.run_id, snap.status, snap, {"message": snap.error} if snap.error else None, record=record)


def _wait_result(run_id: str, status: str, snap: Any, error: Any, *, record: RunRecord | None) -> dict[str, Any]:
    mapped = {"ok": "ok", "aborted": "timeout", "timeout": "timeout"}.get(status, "error")
    out: dict[str, Any] = {"runId": run_id, "status": mapped}
    started, ended = (snap.started_at, snap.ended_at) if snap is not None else (None, None)
    if record is not None:
        started, ended = started or record.started_at, ended or record.ended_at
        if record.resumes:
            out["resumed"] = True  # it was cut short by a restart and continued from its transcript
    if started:
        out["startedAt"] = started
    if ended:
        out["endedAt"] = ended
    if mapped == "error":
        out["error"] = (error or {}).get("message") or (error or {}).get("reason") or status
        if status == "interrupted":
            out["interrupted"] = True
    return out
