"""`chat.send` (ack `started`, then `chat` events), `chat.abort`, `chat.inject` (`chat.history` is
:mod:`homarus.gateway.methods.chat_history`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import Field

from homarus.agents.request import QueueMode, RunRequest
from homarus.errors import InvalidRequest, NotFound
from homarus.gateway.router import MethodCall, Params
from homarus.gateway.services.inbound import sanitize_message
from homarus.gateway.services.warm import runs_ready
from homarus.messages import AssistantMessage, TextContent
from homarus.protocol.compat import NO_BRANCHES, NO_FAST_MODE, NO_PERMISSION_MODES, ORIGIN_ONLY, compat_params
from homarus.security.scopes import READ
from homarus.sessions.keys import SessionKey
from homarus.usecases.commands import core_command, run_command
from homarus.usecases.runs import queue_position, run_and_finish, start_run
from homarus.usecases.session_events import emit_session_changed

__all__: list[str] = []

STOP_COMMANDS = frozenset({"/stop", "/abort", "stop!"})


@compat_params(
    inert={
        "fastMode": NO_FAST_MODE,
        "fastAutoOnSeconds": NO_FAST_MODE,
        "mentions": "mentions address people on a shared session board; Homarus has none",
        "workContext": "the Control UI page the user was on; Homarus does not put it in the prompt",
        "intent": "session goals are not a Homarus feature",
        "toolBindings": "per-message tool bindings are not a Homarus feature",
        "systemInputProvenance": "provenance of system-made inputs; only a caller's own text arrives here",
        "systemProvenanceReceipt": "provenance of system-made inputs; only a caller's own text arrives here",
        "originatingChannel": ORIGIN_ONLY,
        "originatingTo": ORIGIN_ONLY,
        "originatingAccountId": ORIGIN_ONLY,
        "originatingThreadId": ORIGIN_ONLY,
        "replyToId": ORIGIN_ONLY,
        "expectedLeafEntryId": NO_BRANCHES,
        "expectedSessionRoutingContract": "session routing contracts are not a Homarus feature",
        "expectedPermissionMode": NO_PERMISSION_MODES,
        "expectedToolOverrides": NO_PERMISSION_MODES,
    }
)
class ChatSendParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    agent_id: str | None = Field(default=None, alias="agentId", min_length=1, max_length=64)
    #: the session the client shows: a message for a session that was replaced since is refused
    session_id: str | None = Field(default=None, alias="sessionId", min_length=1, max_length=128)
    message: str = Field(max_length=2_000_000)
    idempotency_key: str = Field(alias="idempotencyKey", min_length=1, max_length=256)
    thinking: str | None = Field(default=None, max_length=20)
    deliver: bool | None = None
    attachments: list[dict[str, Any]] | None = Field(default=None, max_length=8)
    timeout_ms: int | None = Field(default=None, alias="timeoutMs", ge=1000, le=86_400_000)
    queue_mode: QueueMode | None = Field(default=None, alias="queueMode")
    #: the message is text for the model, even when it starts with "/"
    suppress_command_interpretation: bool | None = Field(default=None, alias="suppressCommandInterpretation")


class AbortParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    run_id: str | None = Field(default=None, alias="runId", max_length=256)


class SessionAbortParams(Params):
    key: str = Field(min_length=1, max_length=512)
    run_id: str | None = Field(default=None, alias="runId", min_length=1, max_length=256)
    agent_id: str | None = Field(default=None, alias="agentId", min_length=1, max_length=64)
    clear_queued: bool | None = Field(default=None, alias="clearQueued")


class InjectParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    agent_id: str | None = Field(default=None, alias="agentId", min_length=1, max_length=64)
    message: str = Field(min_length=1, max_length=1_000_000)
    label: str | None = Field(default=None, max_length=100)


async def chat_send(call: MethodCall, p: ChatSendParams) -> dict[str, Any]:
    await runs_ready()  # a cold gateway imports the agent loop off the event loop
    gw = call.gateway
    message = sanitize_message(p.message)
    if not message.strip() and not p.attachments:
        raise InvalidRequest("message or attachment required")
    key = gw.sessions.resolve_key(p.session_key, p.agent_id)
    if p.session_id is not None:
        current = await asyncio.to_thread(gw.sessions.get, key)
        if current is not None and current.entry.session_id != p.session_id:
            raise InvalidRequest(
                f"session {key.canonical} was replaced (now {current.entry.session_id}); reload it and send again"
            )
    commands = not p.suppress_command_interpretation
    if commands and message.strip().lower() in STOP_COMMANDS:
        run_ids = gw.runtime.abort(key.canonical, origin="stop-command")
        await gw.hookmd.trigger(
            "command",
            "stop",
            {"type": "command", "action": "stop", "sessionKey": key.canonical, "messages": [], "context": {}},
        )
        return {"ok": True, "aborted": bool(run_ids), "runIds": run_ids}
    run_id = p.idempotency_key
    gw.bus.own_run(run_id, call.client.conn_id)  # a targeted client gets this run's events
    by = call.client.display_name or call.client.client_id or "chat"
    reply = core_command(gw, call.client.scopes, by, message.strip()) if commands else None
    if reply is None and commands:
        reply = await run_command(gw, message.strip(), key.canonical)
    if reply is not None:  # a chat command answers without a model run
        gw.bus.session_event(
            "chat",
            {
                "runId": run_id,
                "sessionKey": key.canonical,
                "seq": 0,
                "state": "final",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": reply}],
                    "timestamp": int(time.time() * 1000),
                },
            },
            session_key=key.canonical,
            run_id=run_id,
            guard=READ,
        )
        gw.bus.release_run(run_id)
        return {"runId": run_id, "status": "ok", "command": True}
    cached = gw.dedupe.get(f"chat:{run_id}")
    if cached is not None:
        if not cached.terminal:
            return {"runId": run_id, "status": "in_flight"}
        if not cached.ok:
            raise InvalidRequest(str((cached.error or {}).get("message", "run failed")))
        return {"runId": run_id, "status": "ok"}
    record = gw.journal.get(run_id)
    if record is not None:
        return {"runId": run_id, "status": "ok" if record.status == "ok" else record.status}
    req = RunRequest(
        run_id=run_id,
        session_key=key,
        message=message,
        thinking=p.thinking,
        timeout_s=p.timeout_ms / 1000 if p.timeout_ms else None,
        queue_mode=p.queue_mode,
        channel="webchat",
        origin=call.client.origin(),
    )
    ref = await asyncio.to_thread(gw.sessions.ensure, key)
    ahead = queue_position(gw, req)
    await start_run(gw, req, "chat", p.model_dump(by_alias=True, exclude_none=True), admit=True)
    gw.dedupe.put(f"chat:{run_id}", "started")
    emit_session_changed(gw, key, "create" if ref.created else "send", runId=run_id)
    _ = gw.spawn(run_and_finish(gw, req, "chat"))  # the reply streams as `chat` events
    # the runs it waits for (its session's, its lane's beyond the free slots): where a busy gateway stands
    return {"runId": run_id, "status": "started", **({"queuePosition": ahead} if ahead else {})}


async def chat_abort(call: MethodCall, p: AbortParams) -> dict[str, Any]:
    return _abort(call, call.gateway.sessions.resolve_key(p.session_key), p.run_id, "chat.abort")


async def sessions_abort(call: MethodCall, p: SessionAbortParams) -> dict[str, Any]:
    """``sessions.abort``: the session's run stops; with ``clearQueued`` the runs waiting behind it
    end too (each as an error saying so, in the journal and to ``agent.wait``)."""
    gw = call.gateway
    key = gw.sessions.resolve_key(p.key, p.agent_id)
    out = _abort(call, key, p.run_id, "sessions.abort")
    if p.clear_queued and gw.built("runtime"):
        out["clearedQueued"] = gw.runtime.lanes.clear(f"session:{key.canonical}")
    return out


def _abort(call: MethodCall, key: SessionKey, run_id: str | None, origin: str) -> dict[str, Any]:
    gw = call.gateway
    if run_id:
        run = gw.runtime.runs.by_run_id(run_id)
        if run is None:
            return {"ok": True, "aborted": False, "runIds": []}
        if run.session_key != key.canonical:
            raise InvalidRequest("runId does not match sessionKey")
    run_ids = gw.runtime.abort(key.canonical, run_id, origin=origin)
    if run_ids:
        emit_session_changed(gw, key, "abort", runId=run_ids[0])
    return {"ok": True, "aborted": bool(run_ids), "runIds": run_ids}


async def chat_inject(call: MethodCall, p: InjectParams) -> dict[str, Any]:
    gw = call.gateway
    key = gw.sessions.resolve_key(p.session_key, p.agent_id)

    def write() -> str:
        ref = gw.sessions.get(key)
        if ref is None:
            raise NotFound("session not found")
        message = AssistantMessage(
            [TextContent(p.message)], api="gateway", provider="homarus", model="gateway-injected"
        )
        data = message.to_json()
        if p.label:
            data["label"] = p.label
        return str(gw.sessions.transcript_for(ref).append({"type": "message", "message": data})["id"])

    message_id = await asyncio.to_thread(write)
    gw.bus.session_event(
        "chat",
        {
            "runId": f"inject-{message_id}",
            "sessionKey": key.canonical,
            "seq": 0,
            "state": "final",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": p.message}],
                "timestamp": int(time.time() * 1000),
            },
        },
        session_key=key.canonical,
        run_id=f"inject-{message_id}",
        guard=READ,
    )
    return {"ok": True, "messageId": message_id}
