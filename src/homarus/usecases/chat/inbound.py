"""From committed inbound messages to agent runs: access, pairing, commands, debounce, routing.

One worker per conversation takes its ``received`` inbox rows in order (so a conversation's
messages are never reordered, and conversations do not wait for each other). For each message:

1. **access** (``channels/access.py``): drop, observe (a group message not addressed to the bot),
   answer an unknown DM sender with a pairing code, or admit — nothing else of a refused message
   happens: no hook that sees content, no model call, no tool;
2. ``inbound_claim``: a plugin may take the message (and answer it);
3. **chat commands** (``/new``, ``/status``, ``/model``, ``/approve``, … — owners only);
4. **debounce**: consecutive messages of one sender arriving within ``messages.inbound.debounceMs``
   of each other (at most 12, at most 7.5 s from the first) become one turn;
5. **route** and **run**: the batch's attachments are fetched, the run is journaled under an id
   derived from its first message, the rows are marked ``dispatched``, ``message_received``
   fires once per message, and the run starts (``channel_runs``).

A crash at any point leaves rows ``received`` (done again: every step is idempotent) or
``dispatched`` (the run journal and its recovery rule take over).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Final

from homarus.channels.access import Decision, decide
from homarus.channels.routing import resolve_route
from homarus.errors import HomarusError
from homarus.plugins import events as ev
from homarus.security.scopes import PAIRING
from homarus.tasks import cancel_and_wait

if TYPE_CHECKING:
    from homarus.channels.inbox import InboxRow
    from homarus.channels.model import InboundMessage
    from homarus.usecases.chat.ports import ChatHost, ChatService

__all__ = ["InboundDispatcher"]

log = logging.getLogger("homarus.channels")

MAX_BATCH: Final = 12
MAX_BATCH_MS: Final = 7_500
PAIRING_TEXT: Final = (
    "Hi! I don't know you yet.\n\nYour {label} user id: {sender}\nPairing code: {code}\n\n"
    "Ask my owner to approve it:\nhomarus pairing approve {channel} {code}"
)


def _now_ms() -> int:
    return int(time.time() * 1000)


class InboundDispatcher:
    def __init__(self, host: ChatHost, service: ChatService) -> None:
        self.host = host
        self.service = service
        self.manager = service.manager
        self._task: asyncio.Task[None] | None = None
        self._workers: dict[str, asyncio.Task[None]] = {}
        self.dispatched = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="channel-inbound")

    async def stop(self) -> None:
        await cancel_and_wait(self._task, *self._workers.values())
        self._task = None
        self._workers.clear()

    async def idle(self, timeout_s: float = 30.0) -> None:
        """Wait until no row is ``received`` and no worker runs (tests, benchmarks)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self._workers and not await asyncio.to_thread(self.manager.inbox.received, 1):
                return
            await asyncio.sleep(0.02)

    async def _loop(self) -> None:
        while True:
            await self.manager.inbound_ready.wait()
            self.manager.inbound_ready.clear()
            try:
                waiting = await asyncio.to_thread(self.manager.inbox.conversations_waiting)
            except Exception:
                log.exception("channels: reading the inbox failed")
                await asyncio.sleep(1.0)
                self.manager.inbound_ready.set()
                continue
            for conversation in waiting:
                if conversation not in self._workers:
                    task = asyncio.create_task(self._work(conversation), name=f"channel-in:{conversation}")
                    self._workers[conversation] = task

    async def _work(self, conversation: str) -> None:
        try:
            while True:
                try:
                    rows = await asyncio.to_thread(self.manager.inbox.received_in, conversation)
                except Exception as exc:  # the store away (a cluster's database): the rows wait there
                    log.warning("channels: reading %s from the inbox failed (%s); retrying", conversation, exc)
                    await asyncio.sleep(2.0)
                    continue
                if not rows:
                    return
                try:
                    await self._handle(rows)
                except Exception:
                    log.exception("channels: handling a message of %s failed; it is retried", conversation)
                    await asyncio.sleep(2.0)
        finally:
            self._workers.pop(conversation, None)
            try:
                more = bool(await asyncio.to_thread(self.manager.inbox.received_in, conversation, 1))
            except Exception:
                more = True  # cannot tell: look again
            if more:
                self.manager.inbound_ready.set()  # a row came in while this worker was finishing

    # -- one message at the head of a conversation ----------------------------------------------
    async def _handle(self, rows: list[InboxRow]) -> None:
        head = rows[0]
        msg = head.message
        decision = self._decide(msg)
        if decision.verdict == "drop":
            await asyncio.to_thread(self.manager.inbox.mark, [head.id], "denied", reason=decision.reason)
            return
        if decision.verdict == "observe":
            await asyncio.to_thread(self.manager.inbox.mark, [head.id], "observed", reason=decision.reason)
            return
        if decision.verdict == "pair":
            await self._pair(head)
            return
        route = self._route(msg, decision)
        if await self._claimed(head):
            return
        reply = await self.service.commands.handle(msg, decision, route.session_key)
        if reply is not None:
            await self.service.reply(
                msg.target, reply, key=f"cmd:{msg.channel}:{msg.account_id}:{msg.chat_id}:{msg.message_id}"
            )
            await asyncio.to_thread(self.manager.inbox.mark, [head.id], "command")
            return
        batch = await self._debounce(head, decision)
        await self.service.runs_start(batch, decision, route)
        self.dispatched += len(batch)

    def _decide(self, msg: InboundMessage) -> Decision:
        cfg = self.host.config
        spec = self.manager.specs.get(msg.channel)
        prefixes = spec.capabilities.id_prefixes if spec is not None else ()
        try:
            settings = self.manager.settings(msg.channel, msg.account_id)
        except HomarusError:
            return Decision("drop", "the account is no longer configured")

        def paired(sender: str) -> bool:
            return self.manager.pairing.is_allowed(msg.channel, msg.account_id, sender)

        return decide(msg, settings, owners=cfg.commands.owner_allow_from, prefixes=prefixes, paired=paired)

    def _route(self, msg: InboundMessage, decision: Decision) -> Any:
        cfg = self.host.config
        channel_cfg = self.manager.channel_config(msg.channel)
        spec = self.manager.specs.get(msg.channel)
        return resolve_route(
            msg,
            bindings=cfg.bindings,
            default_agent=cfg.agents.default_id,
            main_key=cfg.session.main_key,
            dm_scope=cfg.session.dm_scope,
            identity_links=cfg.session.identity_links,
            primary_account=channel_cfg.primary_account if channel_cfg is not None else "default",
            thread_word=spec.thread_word if spec is not None else "thread",
            pinned_agent=decision.topic_agent,
            owner=decision.owner,
            share_main=cfg.session.share_main_with_non_owners,
        )

    async def _pair(self, row: InboxRow) -> None:
        msg = row.message
        meta = {"name": msg.sender_name, **{k: v for k, v in msg.metadata.items() if k == "username"}}
        request, created = await asyncio.to_thread(
            self.manager.pairing.request, msg.channel, msg.account_id, msg.sender_id, meta
        )
        await asyncio.to_thread(self.manager.inbox.mark, [row.id], "pairing", reason="created" if created else "known")
        if request is None or not created:
            return  # the queue is full, or this sender already has a live code: stay quiet
        spec = self.manager.specs.get(msg.channel)
        label = spec.label if spec is not None else msg.channel
        text = PAIRING_TEXT.format(label=label, sender=msg.sender_id, code=request.code, channel=msg.channel)
        await self.service.reply(
            msg.target, text, key=f"pairing:{msg.channel}:{msg.account_id}:{request.code}", markdown=False
        )
        log.info(
            "channels: pairing request %s from %s/%s sender %s",
            request.code,
            msg.channel,
            msg.account_id,
            msg.sender_id,
        )
        self.host.bus.broadcast(
            "channels.pairing.requested",
            {
                "requestId": request.code,
                "channel": msg.channel,
                "accountId": msg.account_id,
                "senderId": msg.sender_id,
                "senderLabel": msg.sender_name or msg.sender_id,
                "expiresAtMs": request.expires_at,
            },
            guard=PAIRING,
        )
        if self.host.hooks.has("channel_pairing_requested"):
            event = ev.ChannelPairingRequestedEvent(msg.channel, msg.sender_id, request.code, msg.account_id, meta)
            _ = self.host.spawn(self.host.hooks.void("channel_pairing_requested", event))

    async def _claimed(self, row: InboxRow) -> bool:
        if not self.host.hooks.has("inbound_claim"):
            return False
        msg = row.message
        event = ev.InboundClaimEvent(
            msg.text,
            msg.channel,
            msg.account_id,
            msg.chat_id,
            msg.sender_id,
            msg.thread_id,
            msg.message_id,
            msg.chat_kind != "direct",
            {"senderName": msg.sender_name},
        )
        result, plugin = await self.host.hooks.claim("inbound_claim", event)
        if result is None:
            return False
        if result.reply:
            await self.service.reply(
                msg.target,
                str(result.reply),
                key=f"claim:{msg.channel}:{msg.account_id}:{msg.chat_id}:{msg.message_id}",
            )
        await asyncio.to_thread(self.manager.inbox.mark, [row.id], "claimed", reason=f"by {plugin}")
        return True

    async def _debounce(self, head: InboxRow, decision: Decision) -> list[InboxRow]:
        """``head`` and the next messages of its sender that arrive while the burst goes on."""
        msg = head.message
        quiet = self.host.config.messages.inbound.debounce_for(msg.channel)
        batch = [head]
        while quiet > 0 and len(batch) < MAX_BATCH:
            rows = await asyncio.to_thread(self.manager.inbox.received_in, msg.target.conversation, MAX_BATCH + 1)
            known = {r.id for r in batch}
            nxt = next((r for r in rows if r.id not in known), None)
            if nxt is not None:
                if (
                    nxt.message.sender_id != msg.sender_id
                    or nxt.message.command
                    or nxt.received_at - batch[-1].received_at > quiet
                    or self._decide(nxt.message).verdict != "admit"
                ):
                    break  # someone else spoke, a pause, or a command: the burst is over
                batch.append(nxt)
                continue
            waited = _now_ms() - batch[-1].received_at
            if waited >= quiet or _now_ms() - batch[0].received_at >= MAX_BATCH_MS:
                break
            await asyncio.sleep(min(quiet - waited, MAX_BATCH_MS) / 1000)
        return batch
