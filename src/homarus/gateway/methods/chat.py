"""`chat.send` (ack `started`, then `chat` events), `chat.history`, `chat.abort`, `chat.inject`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from pydantic import Field

from homarus.agents.prompt import strip_silent
from homarus.agents.request import RunRequest
from homarus.errors import InvalidRequest, NotFound
from homarus.gateway.router import MethodCall, Params
from homarus.gateway.services.chat_commands import core_command
from homarus.gateway.services.inbound import sanitize_message
from homarus.gateway.services.plugins import run_command
from homarus.gateway.services.runs import run_and_finish, start_run
from homarus.gateway.services.session_events import emit_session_changed
from homarus.messages import AssistantMessage, TextContent
from homarus.security.scopes import READ
from homarus.sessions.views import visible_messages

__all__: list[str] = []

STOP_COMMANDS = frozenset({"/stop", "/abort", "stop!"})
HISTORY_DEFAULT_MAX_CHARS = 12_000
HISTORY_ROW_MAX_BYTES = 128 * 1024
HISTORY_TOTAL_MAX_BYTES = 6 * 1024 * 1024
OMITTED = "[chat.history omitted: message too large]"


class ChatSendParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    message: str = Field(max_length=2_000_000)
    idempotency_key: str = Field(alias="idempotencyKey", min_length=1, max_length=256)
    thinking: str | None = Field(default=None, max_length=20)
    deliver: bool | None = None
    attachments: list[dict[str, Any]] | None = Field(default=None, max_length=8)
    timeout_ms: int | None = Field(default=None, alias="timeoutMs", ge=1000, le=86_400_000)


class HistoryParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    limit: int = Field(default=200, ge=1, le=1000)
    max_chars: int | None = Field(default=None, alias="maxChars", ge=1, le=500_000)
    #: the original's (v4) bound, in bytes of UTF-8: taken as a bound on characters
    max_bytes: int | None = Field(default=None, alias="maxBytes", ge=1, le=10_000_000)
    #: the original's (v4) hint of the runs a client is waiting for (the history is the same)
    input_run_ids: list[str] | None = Field(default=None, alias="inputRunIds", max_length=100)


class AbortParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    run_id: str | None = Field(default=None, alias="runId", max_length=256)


class InjectParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    message: str = Field(min_length=1, max_length=1_000_000)
    label: str | None = Field(default=None, max_length=100)


async def chat_send(call: MethodCall, p: ChatSendParams) -> dict[str, Any]:
    gw = call.gateway
    message = sanitize_message(p.message)
    if not message.strip() and not p.attachments:
        raise InvalidRequest("message or attachment required")
    key = gw.sessions.resolve_key(p.session_key)
    if message.strip().lower() in STOP_COMMANDS:
        run_ids = gw.runtime.abort(key.canonical, origin="stop-command")
        await gw.hookmd.trigger(
            "command",
            "stop",
            {"type": "command", "action": "stop", "sessionKey": key.canonical, "messages": [], "context": {}},
        )
        return {"ok": True, "aborted": bool(run_ids), "runIds": run_ids}
    run_id = p.idempotency_key
    reply = core_command(gw, call.client, message.strip())
    if reply is None:
        reply = await run_command(gw, message.strip(), key.canonical)
    if reply is not None:  # a chat command answers without a model run
        gw.bus.broadcast(
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
            guard=READ,
        )
        return {"runId": run_id, "status": "ok", "command": True}
    cached = gw.dedupe.get(f"chat:{run_id}")
    if cached is not None:
        if not cached.terminal:
            return {"runId": run_id, "status": "in_flight"}
        if not cached.ok:
            raise InvalidRequest(str((cached.error or {}).get("message", "run failed")))
        return {"runId": run_id, "status": "ok"}
    record = await asyncio.to_thread(gw.journal.get, run_id)
    if record is not None:
        return {"runId": run_id, "status": "ok" if record.status == "ok" else record.status}
    req = RunRequest(
        run_id=run_id,
        session_key=key,
        message=message,
        thinking=p.thinking,
        timeout_s=p.timeout_ms / 1000 if p.timeout_ms else None,
        channel="webchat",
        origin=call.client.origin(),
    )
    ref = await asyncio.to_thread(gw.sessions.ensure, key)
    await start_run(gw, req, "chat", p.model_dump(by_alias=True, exclude_none=True))
    gw.dedupe.put(f"chat:{run_id}", "started")
    emit_session_changed(gw, key, "create" if ref.created else "send", runId=run_id)
    _ = gw.spawn(run_and_finish(gw, req, "chat"))  # the reply streams as `chat` events
    return {"runId": run_id, "status": "started"}


async def chat_history(call: MethodCall, p: HistoryParams) -> dict[str, Any]:
    gw = call.gateway
    key = gw.sessions.resolve_key(p.session_key)
    max_chars = p.max_chars or (min(p.max_bytes, 500_000) if p.max_bytes else HISTORY_DEFAULT_MAX_CHARS)

    def read() -> dict[str, Any]:
        ref = gw.sessions.get(key)
        if ref is None:
            return {"sessionKey": key.canonical, "messages": []}
        view = gw.sessions.transcript_for(ref).read()
        rows = [_display(m, max_chars) for m in visible_messages(view.entries)]
        kept = [r for r in rows if r is not None][-p.limit :]
        total = 0
        out: list[dict[str, Any]] = []
        for row in reversed(kept):  # newest first, so the oldest are dropped past the budget
            size = len(orjson.dumps(row))
            if total + size > HISTORY_TOTAL_MAX_BYTES:
                break
            total += size
            out.append(row)
        out.reverse()
        return {
            "sessionKey": key.canonical,
            "sessionId": ref.entry.session_id,
            "messages": out,
            "thinkingLevel": ref.entry.thinking_level,
            "verboseLevel": ref.entry.verbose_level,
        }

    return await asyncio.to_thread(read)


def _display(message: dict[str, Any], max_chars: int) -> dict[str, Any] | None:
    if message.get("role") == "assistant":
        text = "".join(
            b.get("text", "") for b in message.get("content", []) if isinstance(b, dict) and b.get("type") == "text"
        )
        has_calls = any(isinstance(b, dict) and b.get("type") == "toolCall" for b in message.get("content", []))
        if text and not has_calls and strip_silent(text) is None:
            return None  # a silent reply is not shown
    if len(orjson.dumps(message)) > HISTORY_ROW_MAX_BYTES:
        return {
            "role": message.get("role"),
            "content": [{"type": "text", "text": OMITTED}],
            "timestamp": message.get("timestamp"),
        }
    row = dict(message)
    content = row.get("content")
    if isinstance(content, str) and len(content) > max_chars:
        row["content"] = content[:max_chars]
    elif isinstance(content, list):
        blocks = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and len(block.get("text", "")) > max_chars:
                block = {**block, "text": block["text"][:max_chars]}
            blocks.append(block)
        row["content"] = blocks
    return row


async def chat_abort(call: MethodCall, p: AbortParams) -> dict[str, Any]:
    gw = call.gateway
    key = gw.sessions.resolve_key(p.session_key)
    if p.run_id:
        run = gw.runtime.runs.by_run_id(p.run_id)
        if run is None:
            return {"ok": True, "aborted": False, "runIds": []}
        if run.session_key != key.canonical:
            raise InvalidRequest("runId does not match sessionKey")
    run_ids = gw.runtime.abort(key.canonical, p.run_id, origin="chat.abort")
    if run_ids:
        emit_session_changed(gw, key, "abort", runId=run_ids[0])
    return {"ok": True, "aborted": bool(run_ids), "runIds": run_ids}


async def chat_inject(call: MethodCall, p: InjectParams) -> dict[str, Any]:
    gw = call.gateway
    key = gw.sessions.resolve_key(p.session_key)

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
    gw.bus.broadcast(
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
        guard=READ,
    )
    return {"ok": True, "messageId": message_id}
