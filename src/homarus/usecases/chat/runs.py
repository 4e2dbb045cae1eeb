"""A chat message's agent run: its prompt, the run, and its reply into the outbox — once.

The run is journaled (kind ``channel``) under an id derived from the first message it answers,
so dispatching the same messages again after a crash finds the run instead of starting another.
Its reply is written to the outbox (one piece per chunk, keyed ``<runId>:<n>``) *before* the run
is recorded as finished: a crash in between resumes the run, which has already answered (its
final message is in the transcript) and only re-records the same pieces, which the outbox
ignores. A run folded into another (a message steered into a running turn) delivers nothing of
its own: the run it joined answers for both.

While the run works the chat shows "typing…" (renewed every 4 s, as the platforms let it fade).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from typing import TYPE_CHECKING, Any, Final

from homarus.agents.runs import RunOutcome
from homarus.channels.chunking import chunk_text
from homarus.channels.model import OutboundMessage, Target
from homarus.plugins import events as ev
from homarus.security.external_content import wrap_external_content
from homarus.usecases.runs import final_payload, record_end, run_to_outcome

if TYPE_CHECKING:
    from homarus.agents.request import RunRequest
    from homarus.channels.model import InboundMessage
    from homarus.usecases.chat.ports import ChatRunHost

__all__ = ["KIND", "compose_prompt", "run_and_deliver", "run_id_for"]

log = logging.getLogger("homarus.channels")

KIND: Final = "channel"
TYPING_EVERY_S: Final = 4.0
#: a reply this quick needs no typing indicator (and the request would only delay it)
TYPING_AFTER_S: Final = 0.25
ERROR_TEXT: Final = "Sorry, something went wrong while answering ({reason}). Please try again."


def run_id_for(first: InboundMessage) -> str:
    """The run of a batch, named by its first message (stable across a re-dispatch)."""
    key = f"{first.channel}\x00{first.account_id}\x00{first.chat_id}\x00{first.message_id}"
    return str(uuid.UUID(hashlib.sha256(key.encode()).hexdigest()[:32]))


def compose_prompt(messages: list[InboundMessage], notes: dict[str, list[str]], *, shared: bool = False) -> str:
    """The user's turn: their words as theirs; forwarded and quoted text marked as someone else's.

    In a group each message is prefixed with its sender, so the model knows who speaks; so is a
    non-owner's message in a DM session they share with the owner (``shared``), marked as not the
    owner's, so that the owner's later turns never read it as their own words.
    ``notes``: per message id, lines about its attachments (saved paths, refusals).
    """
    parts: list[str] = []
    for msg in messages:
        lines: list[str] = []
        if msg.reply_to_id and msg.reply_to_text:
            quoted = wrap_external_content(msg.reply_to_text, source="Quoted message (the reply refers to it)")
            lines.append(quoted)
        if msg.forwarded_from:
            lines.append(wrap_external_content(msg.text, source=f"Forwarded message from {msg.forwarded_from}"))
        elif msg.text:
            lines.append(msg.text)
        lines.extend(notes.get(msg.message_id, ()))
        body = "\n".join(lines).strip()
        if msg.chat_kind != "direct":
            body = f"[{msg.sender_name or msg.sender_id}]: {body}"
        elif shared:
            who = f"{msg.sender_name} ({msg.sender})" if msg.sender_name else msg.sender
            body = f"[Message from {who}, not the owner]: {body}"
        parts.append(body)
    return "\n\n".join(p for p in parts if p)


def _origin(req: RunRequest) -> dict[str, Any]:
    return req.origin if isinstance(req.origin, dict) else {}


async def _typing(host: ChatRunHost, target: Target, run_id: str) -> None:
    """The typing indicator while the run works: not while it waits for its turn (a chat with ten
    messages queued, a hundred chats waiting for a model slot), which would only flood the platform."""
    while True:
        await asyncio.sleep(TYPING_AFTER_S)
        if host.runtime.runs.by_run_id(run_id) is None:
            continue
        account = host.channels.manager.account_for_target(target)
        if account is not None:
            with contextlib.suppress(Exception):
                await account.typing(target)
        await asyncio.sleep(TYPING_EVERY_S - TYPING_AFTER_S)


async def run_and_deliver(host: ChatRunHost, req: RunRequest) -> RunOutcome:
    """Run ``req`` (already journaled), put its reply in the outbox, then record its end."""
    origin = _origin(req)
    target = Target.from_json(origin["target"])
    host.channels.active_runs[req.run_id] = origin
    typing = asyncio.create_task(_typing(host, target, req.run_id))
    try:
        outcome = await run_to_outcome(host, req)
    finally:
        typing.cancel()
        host.channels.active_runs.pop(req.run_id, None)
    if outcome.run_id == req.run_id:  # a folded run's answer is its host's: the host delivers it
        await _enqueue_reply(host, req, target, origin, outcome)
    await record_end(host, KIND, req.run_id, outcome.status, final_payload(outcome), outcome)
    return outcome


async def _enqueue_reply(
    host: ChatRunHost, req: RunRequest, target: Target, origin: dict[str, Any], outcome: RunOutcome
) -> None:
    reply_to = origin.get("replyTo") if origin.get("chatKind") != "direct" else None
    text: str | None = None
    if outcome.status == "ok" and not outcome.silent and outcome.text.strip():
        text = await _outgoing(host, req, target, outcome.text, reply_to)
    elif outcome.status in ("error", "timeout"):
        reason = "it took too long" if outcome.status == "timeout" else (outcome.error or "error")[:200]
        text = ERROR_TEXT.format(reason=reason)
    if not text:
        return
    spec = host.channels.manager.specs.get(target.channel)
    settings = host.channels.manager.settings(target.channel, target.account_id)
    limit = int(settings.get("text_chunk_limit") or (spec.capabilities.text_limit if spec else 4000))
    chunks = chunk_text(text, limit)
    pieces = [
        (f"{req.run_id}:{i}/{len(chunks)}", OutboundMessage(target, chunk, True, reply_to if i == 0 else None))
        for i, chunk in enumerate(chunks)
    ]
    await asyncio.to_thread(
        host.channels.manager.outbox.enqueue, pieces, run_id=req.run_id, session_key=req.session_key.canonical
    )
    host.channels.manager.queued()


async def _outgoing(host: ChatRunHost, req: RunRequest, target: Target, text: str, reply_to: str | None) -> str | None:
    """``message_sending`` then ``reply_payload_sending``: the text to send, or None (cancelled)."""
    hooks = host.hooks
    ctx = ev.HookContext(agent_id=req.session_key.agent_id, session_key=req.session_key.canonical, run_id=req.run_id)
    to = f"{target.channel}:{target.chat_id}"
    if hooks.has("message_sending"):
        event = ev.MessageSendingEvent(to, text, reply_to, target.thread_id, {"accountId": target.account_id}, ctx)
        result: ev.MessageSendingResult = (await hooks.modify("message_sending", event)).result
        if result.cancel:
            log.info(
                "channels: reply of %s cancelled by a plugin (%s)", req.run_id, result.cancel_reason or "no reason"
            )
            return None
        text = result.content if result.content is not None else text
    if hooks.has("reply_payload_sending"):
        payload = {"text": text, **target.to_json(), "replyToId": reply_to}
        outcome: ev.ReplyPayloadSendingResult = (
            await hooks.modify("reply_payload_sending", ev.ReplyPayloadSendingEvent(payload, ctx))
        ).result
        if outcome.cancel:
            return None
        if outcome.payload is not None:
            text = str(outcome.payload.get("text") or "")
    return text
