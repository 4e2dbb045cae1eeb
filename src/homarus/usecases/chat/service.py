"""The chat pipeline: the channel layer composed with runs, hooks, approvals and the egress.

Built on first use (the gateway's ``channels``) and started at gateway start when the config has a
``channels`` section. :class:`ChannelService` owns the :class:`ChannelManager` (accounts, inbox,
outbox, pairing, the sender), the inbound dispatcher and the chat commands, and is what the
``channels.*`` / ``send`` methods, the ``message`` tool and the webhook route talk to.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from homarus.agents.request import RunRequest
from homarus.channels.manager import ChannelManager
from homarus.channels.model import OutboundMessage, Target
from homarus.errors import InvalidRequest, NotFound, Unavailable
from homarus.plugins import events as ev
from homarus.usecases.chat.commands import ChannelCommands
from homarus.usecases.chat.inbound import InboundDispatcher
from homarus.usecases.chat.media import fetch_media
from homarus.usecases.chat.runs import KIND, compose_prompt, run_and_deliver, run_id_for
from homarus.usecases.runs import start_run

if TYPE_CHECKING:
    from homarus.channels.access import Decision
    from homarus.channels.db import ChannelStore
    from homarus.channels.inbox import InboxRow
    from homarus.channels.model import SendReceipt
    from homarus.channels.outbox import OutboxRow
    from homarus.channels.routing import Route
    from homarus.security.approvals import ApprovalRecord
    from homarus.usecases.chat.ports import ChatHost

__all__ = ["ChannelService"]

log = logging.getLogger("homarus.channels")

#: finished inbound rows (the redelivery dedupe window) and sent pieces are kept this long
RETENTION_MS: Final = 30 * 24 * 3600 * 1000
APPROVAL_TEXT: Final = (
    "Approval needed to run:\n{command}\n\nReply /approve {id} allow-once (or allow-always, or deny)."
)


class ChannelService:
    def __init__(self, host: ChatHost, db: ChannelStore | None = None) -> None:
        self.host = host
        specs = {channel_id: registered.spec for channel_id, registered in host.plugins.channels.items()}
        self.manager = ChannelManager(
            state_dir=host.paths.state_dir,
            specs=specs,
            config=lambda: host.config,
            fetch=self._fetch,
            env=dict(os.environ),
            db=db,
        )
        self.manager.delivery.on_sent = self._on_sent
        self.manager.delivery.on_dead = self._on_dead
        self.commands = ChannelCommands(host)
        self.dispatcher = InboundDispatcher(host, self)
        #: run id → its origin, while it runs (approval prompts go to its chat)
        self.active_runs: dict[str, dict[str, Any]] = {}
        self.started = False

    # -- lifecycle ----------------------------------------------------------------------------------
    async def start(self) -> None:
        await asyncio.to_thread(self._prune)
        await self.manager.start_all()
        self.dispatcher.start()
        self.started = True

    async def stop(self) -> None:
        await self.dispatcher.stop()
        await self.manager.close()
        self.started = False

    async def pause(self) -> None:
        """Stop receiving, answering and sending, keeping the stores (:meth:`start` resumes): what
        a gateway of a cluster does when another takes over the channels."""
        await self.dispatcher.stop()
        await self.manager.stop_accounts()
        self.started = False

    def _prune(self) -> None:
        self.manager.inbox.prune(RETENTION_MS)
        self.manager.outbox.prune(RETENTION_MS)

    async def _fetch(
        self, url: str, *, max_bytes: int, timeout_s: float, trusted_origin: str, headers: dict[str, str] | None = None
    ) -> Any:
        """The guarded egress, trusting exactly the platform API's origin (a local Bot API server);
        ``headers`` (a platform's authorization) are dropped by any redirect to another origin."""
        from homarus.security.ssrf_rules import SsrfPolicy

        parts = urlsplit(trusted_origin)
        policy = SsrfPolicy(trusted_origins=frozenset({f"{parts.scheme}://{parts.netloc}"}))
        return await self.host.web_client.fetch(
            url, max_bytes=max_bytes, timeout_s=timeout_s, policy=policy, headers=headers
        )

    # -- replies and sends ----------------------------------------------------------------------------
    async def reply(self, target: Target, text: str, *, key: str, markdown: bool = True) -> None:
        """Queue one message (no run behind it: a pairing code, a command's answer)."""
        await asyncio.to_thread(self.manager.outbox.enqueue, [(key, OutboundMessage(target, text, markdown))])
        self.manager.queued()

    async def send(
        self, target: Target, text: str, *, idempotency_key: str, media_path: str | None = None, wait_s: float = 30.0
    ) -> dict[str, Any]:
        """``send`` / the ``message`` tool: chunk, queue under the key, wait for the platform's answer."""
        if self.manager.account_for_target(target) is None:
            raise Unavailable(f"{target.channel} account {target.account_id!r} is not running")
        spec = self.manager.specs[target.channel]
        settings = self.manager.settings(target.channel, target.account_id)
        from homarus.channels.chunking import chunk_text

        limit = int(settings.get("text_chunk_limit") or spec.capabilities.text_limit)
        chunks = chunk_text(text, limit) if text.strip() else []
        pieces: list[tuple[str, OutboundMessage]] = []
        if media_path is not None:
            caption = chunks.pop(0) if chunks and len(chunks[0]) <= 1024 else ""
            pieces.append((f"send:{idempotency_key}:media", OutboundMessage(target, caption, True, None, media_path)))
        pieces += [(f"send:{idempotency_key}:{i}", OutboundMessage(target, c)) for i, c in enumerate(chunks)]
        if not pieces:
            raise InvalidRequest("nothing to send: give text or a file")
        await asyncio.to_thread(self.manager.outbox.enqueue, pieces)
        self.manager.queued()
        deadline = time.monotonic() + wait_s
        keys = [k for k, _ in pieces]
        while True:
            rows = await asyncio.to_thread(self._rows_by_key, keys)
            if rows and all(r.status in ("sent", "dead", "cancelled") for r in rows):
                break
            if time.monotonic() > deadline:
                return {"ok": True, "status": "queued", "channel": target.channel, "to": target.chat_id}
            await asyncio.sleep(0.05)
        dead = [r for r in rows if r.status != "sent"]
        if dead:
            raise Unavailable(f"{target.channel} refused the message: {dead[0].last_error}")
        return {
            "ok": True,
            "status": "sent",
            "channel": target.channel,
            "to": target.chat_id,
            "messageId": rows[-1].platform_id,
            "messageIds": [r.platform_id for r in rows],
        }

    def _rows_by_key(self, keys: list[str]) -> list[OutboxRow]:
        marks = ",".join("?" * len(keys))
        found = self.manager.db.query(f"SELECT id FROM outbox WHERE key IN ({marks}) ORDER BY id", tuple(keys))  # noqa: S608
        return [r for (row_id,) in found if (r := self.manager.outbox.get(int(row_id))) is not None]

    def channel_id(self, name: str) -> str:
        """The channel a caller names, by its id or one of its plugin's aliases (unknown: as given)."""
        if name in self.manager.specs:
            return name
        lowered = name.lower()
        return next((cid for cid, spec in self.manager.specs.items() if lowered in spec.aliases), name)

    def resolve_target(
        self, channel: str | None, to: str, *, account_id: str | None = None, thread_id: str | None = None
    ) -> Target:
        """``channel`` + ``to`` (a chat id, or ``<channel>:<chatId>``) as a target of a running account."""
        if not channel and ":" in to:
            channel, _, to = to.partition(":")
        if not channel:
            raise InvalidRequest("channel is required (or write to as <channel>:<chatId>)")
        channel = self.channel_id(channel)
        cfg = self.manager.channel_config(channel)
        if cfg is None or channel not in self.manager.specs:
            raise InvalidRequest(f"unknown channel: {channel}")
        account = account_id or cfg.primary_account
        if account not in cfg.account_ids():
            raise NotFound(f"channel {channel!r} has no account {account!r}")
        to = to.strip()
        if not to:
            raise InvalidRequest("to is required")
        return Target(channel, account, to, thread_id)

    # -- starting a batch's run ---------------------------------------------------------------------
    async def runs_start(self, batch: list[InboxRow], decision: Decision, route: Route) -> None:
        host = self.host
        messages = [r.message for r in batch]
        first, last = messages[0], messages[-1]
        run_id = run_id_for(first)
        key = host.sessions.resolve_key(route.session_key)
        # a redelivered batch already has its run: looked up first only when there is media to
        # fetch (start_run itself refuses a run id it knows)
        has_media = any(m.attachments for m in messages)
        existing = await asyncio.to_thread(host.journal.get, run_id) if has_media else None
        if existing is None:
            workspace = host.workspace_dir(route.agent_id)
            media = await fetch_media(self, messages, key.canonical, workspace, owner=decision.owner)
            req = RunRequest(
                run_id=run_id,
                session_key=key,
                message=compose_prompt(messages, media.notes, shared=not decision.owner and route.dm_scope == "main")
                or "(an empty message)",
                images=media.images,
                channel=first.channel,
                trigger="user",
                origin={
                    "kind": KIND,
                    "target": first.target.to_json(),
                    "chatKind": first.chat_kind,
                    "replyTo": last.message_id,
                    "senderId": first.sender_id,
                    "senderName": first.sender_name,
                    "trust": decision.trust,
                    "owner": decision.owner,
                    "messageIds": [m.message_id for m in messages],
                    "route": route.matched_by,
                },
                policy_key=None
                if decision.trust == "owner"
                else self._policy_key(first, key.canonical, route.agent_id),
                external_delivery=True,
                session_fields=self.session_fields(first),
            )
            params = {
                "channel": first.channel,
                "accountId": first.account_id,
                "chatId": first.chat_id,
                "messages": len(messages),
            }
            created, _ = await start_run(host, req, KIND, params)
        else:
            created, req = False, None
        self._fire_received(messages, key.canonical, run_id, route.agent_id)
        if created and req is not None:  # journaled: it runs whatever happens to the inbox rows now
            _ = host.spawn(run_and_deliver(host, req))
        await asyncio.to_thread(self.manager.inbox.mark, [r.id for r in batch], "dispatched", run_id=run_id)

    def _policy_key(self, msg: Any, session_key: str, agent_id: str) -> Any:
        """The non-main key whose policy a non-owner's run gets (its own session's when that is
        already a group or per-sender key): the sender's own key, as routing names it."""
        from homarus.channels.routing import session_key_for
        from homarus.sessions.keys import parse_session_key

        if msg.chat_kind != "direct":
            return parse_session_key(session_key)
        own = session_key_for(
            msg,
            agent_id,
            main_key=self.host.config.session.main_key,
            dm_scope="per-account-channel-peer",
            identity_links={},
        )
        return parse_session_key(own)

    @staticmethod
    def session_fields(msg: Any) -> dict[str, Any]:
        """Where the session's conversation lives (``sessions.list`` shows it; replies route back);
        the run writes it into the session entry as it starts."""
        delivery = {"channel": msg.channel, "to": msg.chat_id, "accountId": msg.account_id}
        if msg.thread_id:
            delivery["threadId"] = msg.thread_id
        fields: dict[str, Any] = {
            "channel": msg.channel,
            "chatType": msg.chat_kind,
            "deliveryContext": delivery,
            "lastChannel": msg.channel,
            "lastTo": msg.chat_id,
            "lastAccountId": msg.account_id,
        }
        if msg.chat_kind != "direct" and msg.chat_title:
            fields["displayName"] = msg.chat_title[:200]
        return fields

    def _fire_received(self, messages: list[Any], session_key: str, run_id: str, agent_id: str) -> None:
        if not self.host.hooks.has("message_received"):
            return
        ctx = ev.HookContext(agent_id=agent_id, session_key=session_key, run_id=run_id, trigger="user")
        for m in messages:
            event = ev.MessageReceivedEvent(
                m.text,
                m.sender,
                m.channel,
                session_key,
                run_id,
                m.timestamp,
                {"accountId": m.account_id, "chatId": m.chat_id, "threadId": m.thread_id, "messageId": m.message_id},
                ctx,
            )
            _ = self.host.spawn(self.host.hooks.void("message_received", event))

    # -- after a send -------------------------------------------------------------------------------
    async def _on_sent(self, row: OutboxRow, receipt: SendReceipt) -> None:
        index, _, total = row.key.rpartition(":")[2].partition("/")
        if not row.run_id or not total or int(index) != int(total) - 1:
            return  # message_sent fires once per reply, after its last piece
        await self._fire_sent(row, True, receipt.message_id, None)

    async def _on_dead(self, row: OutboxRow, error: str) -> None:
        if row.run_id:
            await self._fire_sent(row, False, None, error)

    async def _fire_sent(self, row: OutboxRow, ok: bool, message_id: str | None, error: str | None) -> None:
        if not self.host.hooks.has("message_sent"):
            return
        pieces = await asyncio.to_thread(self.manager.outbox.by_run, row.run_id or "")
        content = "\n\n".join(p.message.text for p in pieces)
        target = row.message.target
        ctx = ev.HookContext(session_key=row.session_key, run_id=row.run_id)
        event = ev.MessageSentEvent(
            f"{target.channel}:{target.chat_id}", content, ok, message_id, error, row.session_key, ctx
        )
        await self.host.hooks.void("message_sent", event)

    # -- approvals asked from a chat ------------------------------------------------------------------
    def can_route(self, payload: dict[str, Any]) -> bool:
        """Whether the run asking is an owner's chat run (then the owner decides there)."""
        origin = self.active_runs.get(str(payload.get("runId")))
        return bool(origin and origin.get("owner"))

    def notify(self, record: ApprovalRecord) -> None:
        origin = self.active_runs.get(str(record.request.get("runId")))
        if not origin or not origin.get("owner"):
            return
        target = Target.from_json(origin["target"])
        text = APPROVAL_TEXT.format(command=str(record.request.get("commandPreview") or "?"), id=record.id)
        _ = self.host.spawn(self.reply(target, text, key=f"approval:{record.id}", markdown=False))

    def status(self) -> dict[str, Any]:
        out = self.manager.status()
        out["dispatched"] = self.dispatcher.dispatched
        out["sent"] = self.manager.delivery.sent
        return out
