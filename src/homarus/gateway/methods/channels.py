"""``channels.status|start|stop|logout``, ``channels.pairing.list|approve|dismiss``, the outbox's
dead letters (``channels.outbox.list|replay|drop``) and ``send`` (names, params and scopes of the
original's where it has them).

Nothing here shows a secret: account snapshots carry where a token comes from, never the token.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from homarus.channels.pairing import MAX_PENDING, TTL_MS
from homarus.errors import InvalidRequest, NotFound
from homarus.gateway.router import MethodCall, Params
from homarus.patterns import Pattern
from homarus.protocol.compat import Unsupported, compat_params
from homarus.security.scopes import ADMIN, PAIRING

__all__: list[str] = []

_Name = Field(min_length=1, max_length=64)


class StatusParams(Params):
    probe: bool | None = None
    timeout_ms: int | None = Field(default=None, alias="timeoutMs", ge=0, le=120_000)
    channel: str | None = Field(default=None, min_length=1, max_length=64)


class AccountParams(Params):
    channel: str = _Name
    account_id: str | None = Field(default=None, alias="accountId", max_length=64)


class PairingListParams(Params):
    channel: str | None = Field(default=None, min_length=1, max_length=64)
    account_id: str | None = Field(default=None, alias="accountId", min_length=1, max_length=64)


class PairingApproveParams(Params):
    channel: str = _Name
    account_id: str = Field(alias="accountId", min_length=1, max_length=64)
    request_id: str = Field(alias="requestId", min_length=1, max_length=64)
    notify: bool | None = None
    bootstrap_command_owner: bool | None = Field(default=None, alias="bootstrapCommandOwner")


class PairingDismissParams(Params):
    channel: str = _Name
    account_id: str = Field(alias="accountId", min_length=1, max_length=64)
    request_id: str = Field(alias="requestId", min_length=1, max_length=64)


class OutboxListParams(Params):
    limit: int = Field(default=50, ge=1, le=500)


class OutboxItemParams(Params):
    id: int = Field(ge=1)


_TEXT_ONLY = "the send method sends text; media goes out from a run's message tool"


@compat_params(
    unsupported={
        "mediaUrl": Unsupported(_TEXT_ONLY),
        "mediaUrls": Unsupported(_TEXT_ONLY, []),
        "buffer": Unsupported(_TEXT_ONLY),
        "filename": Unsupported(_TEXT_ONLY),
        "contentType": Unsupported(_TEXT_ONLY),
        "asVoice": Unsupported(_TEXT_ONLY, False),
        "gifPlayback": Unsupported(_TEXT_ONLY, False),
        "forceDocument": Unsupported(_TEXT_ONLY, False),
        "silent": Unsupported("messages are sent with the platform's default notification", False),
    }
)
class SendParams(Params):
    to: str = Field(min_length=1, max_length=512)
    message: str | None = Field(default=None, max_length=100_000)
    channel: str | None = Field(default=None, max_length=64)
    account_id: str | None = Field(default=None, alias="accountId", max_length=64)
    thread_id: str | None = Field(default=None, alias="threadId", max_length=128)
    reply_to_id: str | None = Field(default=None, alias="replyToId", max_length=128)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    parse_mode: Annotated[str, Pattern("^HTML$")] | None = Field(default=None, alias="parseMode")
    idempotency_key: str = Field(alias="idempotencyKey", min_length=1, max_length=256)


def channel_service(call: MethodCall) -> Any:
    gw = call.gateway
    if not gw.config.present("channels") and not gw.built("channels"):
        raise InvalidRequest(
            "no chat channel is configured "
            "(add one: homarus channels list --available, then homarus channels add <channel>)"
        )
    return gw.channels


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def channels_status(call: MethodCall, p: StatusParams) -> dict[str, Any]:
    gw = call.gateway
    ts = int(time.time() * 1000)
    empty: dict[str, Any] = {"ts": ts, "channelOrder": [], "channelLabels": {}, "channels": {}, "channelAccounts": {}}
    if not gw.config.present("channels"):
        return {**empty, "channelDefaultAccountId": {}}
    service = gw.channels
    summary = await asyncio.to_thread(service.status)
    out: dict[str, Any] = {**empty, "channelDefaultAccountId": {}}
    for channel in summary["channels"]:
        cid = channel["id"]
        if p.channel is not None and cid != p.channel:
            continue
        cfg = service.manager.channel_config(cid)
        out["channelOrder"].append(cid)
        out["channelLabels"][cid] = channel["label"]
        out["channelDefaultAccountId"][cid] = cfg.primary_account if cfg is not None else "default"
        accounts = []
        for acc in channel["accounts"]:
            settings = service.manager.settings(cid, acc["accountId"]) if cfg is not None else {}
            row: dict[str, Any] = {
                "accountId": acc["accountId"],
                "name": settings.get("name") or acc["accountId"],
                "enabled": channel["enabled"] and settings.get("enabled") is not False,
                "configured": True,
                "running": acc.get("state") in ("running", "degraded"),
                "connected": acc.get("state") == "running",
                "healthState": acc.get("state"),
                "lastError": acc.get("lastError"),
                "lastInboundAt": acc.get("lastInboundAt"),
                "lastOutboundAt": acc.get("lastOutboundAt"),
                "mode": acc.get("mode"),
                "dmPolicy": acc.get("dmPolicy"),
                "allowFrom": list(settings.get("allow_from") or []),
                "webhookPath": acc.get("webhookPath"),
                "identity": acc.get("identity"),
                "groupPolicy": acc.get("groupPolicy"),
                "groups": acc.get("groups"),
                "requireMention": acc.get("requireMention"),
            }
            if acc.get("details"):
                row["details"] = acc["details"]  # the channel's own runtime facts (its connection)
            spec = service.manager.specs.get(cid)
            if spec is not None and spec.status_fields is not None:
                row.update(spec.status_fields(settings, acc["accountId"]))  # the channel's own fields
            accounts.append(row)
        out["channelAccounts"][cid] = accounts
        out["channels"][cid] = {"configured": True, "registered": channel["registered"], "enabled": channel["enabled"]}
    out["delivery"] = {
        "inbound": summary["inbound"],
        "outbox": summary["outbox"],
        "deadLetters": summary["deadLetters"],
        "dispatched": summary["dispatched"],
        "sent": summary["sent"],
    }
    out["pairing"] = summary["pairing"]
    return out


async def channels_start(call: MethodCall, p: AccountParams) -> dict[str, Any]:
    service = channel_service(call)
    status: dict[str, Any] = await service.manager.start(p.channel, p.account_id)
    return {"ok": status.get("state") != "error", **status}


async def channels_stop(call: MethodCall, p: AccountParams) -> dict[str, Any]:
    stopped = await channel_service(call).manager.stop(p.channel, p.account_id, hold=True)
    return {"ok": True, "channel": p.channel, "stopped": stopped}


async def channels_logout(call: MethodCall, p: AccountParams) -> dict[str, Any]:
    done = await channel_service(call).manager.logout(p.channel, p.account_id)
    return {"ok": True, "channel": p.channel, "loggedOut": done}


async def pairing_list(call: MethodCall, p: PairingListParams) -> dict[str, Any]:
    service = channel_service(call)
    manager = service.manager
    requests = await asyncio.to_thread(manager.pairing.pending, p.channel)
    accounts = []
    for cid, cfg in call.gateway.config.channels.configured().items():
        if p.channel is not None and cid != p.channel:
            continue
        spec = manager.specs.get(cid)
        for account_id in cfg.account_ids():
            if p.account_id is not None and account_id != p.account_id:
                continue
            if (cfg.account(account_id).get("dm_policy") or "pairing") != "pairing":
                continue
            label = spec.label if spec is not None else cid
            accounts.append({"channel": cid, "channelLabel": label, "accountId": account_id, "notifySupported": True})
    rows = []
    for r in requests:
        if p.account_id is not None and r.account_id != p.account_id:
            continue
        spec = manager.specs.get(r.channel)
        rows.append(
            {
                "requestId": r.code,
                "channel": r.channel,
                "channelLabel": spec.label if spec is not None else r.channel,
                "accountId": r.account_id,
                "senderId": r.sender_id,
                "senderLabel": str(r.meta.get("name") or r.sender_id),
                "metadata": {k: str(v) for k, v in r.meta.items()},
                "createdAt": _iso(r.created_at),
                "lastSeenAt": _iso(r.created_at),
                "expiresAt": _iso(r.expires_at),
                "notifySupported": True,
            }
        )
    return {
        "accounts": accounts,
        "requests": rows,
        "commandOwnerConfigured": bool(call.gateway.config.commands.owner_allow_from),
        "limits": {"pendingPerAccount": MAX_PENDING, "ttlMs": TTL_MS},
    }


async def pairing_approve(call: MethodCall, p: PairingApproveParams) -> dict[str, Any]:
    if p.bootstrap_command_owner and ADMIN not in call.client.scopes:
        raise InvalidRequest("missing scope: operator.admin (bootstrapCommandOwner)")
    service = channel_service(call)
    by = call.client.display_name or call.client.client_id
    request = await asyncio.to_thread(
        service.manager.pairing.approve, p.channel, p.request_id, account_id=p.account_id, by=by
    )
    _resolved(call, request, "approved")
    bootstrap = "not-requested"
    if p.bootstrap_command_owner:
        bootstrap = await bootstrap_owner(call.gateway, f"{request.channel}:{request.sender_id}")
    notification = "not-requested"
    if p.notify:
        notification = await notify_approved(call.gateway, request)
    return {
        "requestId": request.code,
        "senderId": request.sender_id,
        "notification": notification,
        "commandOwnerBootstrap": bootstrap,
    }


async def bootstrap_owner(gw: Any, owner: str) -> str:
    """Make ``owner`` the command owner when there is none yet (the first approval's convenience)."""
    if gw.config.commands.owner_allow_from:
        return "already-configured"
    await asyncio.to_thread(gw.config_store.patch, {"commands": {"ownerAllowFrom": [owner]}})
    gw.on_config_replaced()  # on the loop: it may start or restart services
    return "configured"


async def notify_approved(gw: Any, request: Any) -> str:
    from homarus.channels.model import Target

    target = Target(request.channel, request.account_id, request.sender_id)
    if gw.channels.manager.account_for_target(target) is None:
        return "unsupported"
    text = "You're approved: you can talk to me now."
    await gw.channels.reply(
        target, text, key=f"paired:{request.channel}:{request.account_id}:{request.code}", markdown=False
    )
    return "sent"


async def pairing_dismiss(call: MethodCall, p: PairingDismissParams) -> dict[str, Any]:
    service = channel_service(call)
    request = await asyncio.to_thread(service.manager.pairing.dismiss, p.channel, p.request_id, account_id=p.account_id)
    _resolved(call, request, "dismissed")
    return {"requestId": request.code, "senderId": request.sender_id}


def _resolved(call: MethodCall, request: Any, decision: str) -> None:
    payload = {
        "requestId": request.code,
        "channel": request.channel,
        "accountId": request.account_id,
        "senderId": request.sender_id,
        "decision": decision,
    }
    call.gateway.bus.broadcast("channels.pairing.resolved", payload, guard=PAIRING)


async def outbox_list(call: MethodCall, p: OutboxListParams) -> dict[str, Any]:
    service = channel_service(call)
    rows = await asyncio.to_thread(service.manager.outbox.dead_letters, p.limit)
    return {
        "deadLetters": [r.to_json() for r in rows],
        "counts": await asyncio.to_thread(service.manager.outbox.counts),
    }


async def outbox_replay(call: MethodCall, p: OutboxItemParams) -> dict[str, Any]:
    service = channel_service(call)
    if not await asyncio.to_thread(service.manager.outbox.replay, p.id):
        raise NotFound(f"no dead letter {p.id}")
    service.manager.queued()
    return {"ok": True, "id": p.id, "status": "pending"}


async def outbox_drop(call: MethodCall, p: OutboxItemParams) -> dict[str, Any]:
    service = channel_service(call)
    if not await asyncio.to_thread(service.manager.outbox.drop, p.id):
        raise NotFound(f"no dead letter {p.id}")
    return {"ok": True, "id": p.id, "status": "cancelled"}


async def send(call: MethodCall, p: SendParams) -> dict[str, Any]:
    gw = call.gateway
    cached = gw.dedupe.get(f"send:{p.idempotency_key}")
    if cached is not None and cached.terminal and cached.payload is not None:
        return dict(cached.payload)
    if not (p.message or "").strip():
        raise InvalidRequest("message is required")
    service = channel_service(call)
    target = service.resolve_target(p.channel, p.to, account_id=p.account_id, thread_id=p.thread_id)
    result: dict[str, Any] = await service.send(target, p.message or "", idempotency_key=p.idempotency_key)
    out = {"runId": p.idempotency_key, **result}
    gw.dedupe.put(f"send:{p.idempotency_key}", "ok", payload=out)
    return out
