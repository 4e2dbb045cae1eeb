"""``message.action``: the original's one method for what its ``openclaw message …`` commands do
on a chat channel (``send``, ``read``, ``react``, ``poll``, …), as scripts and cron jobs call it.

``send`` goes out through the channel layer exactly as ``send`` does (chunked, through the
outbox, deduplicated by ``idempotencyKey``). Every other action is one Homarus's channels do not
offer: it is refused with the original's own wording ("Channel X does not support action Y.")
and ``details.code`` ``NOT_SUPPORTED``, never silently ignored. The CLI's own flags ride along in
``params`` (``json``, ``dryRun``, ``verbose``, …): accepted; ``dryRun`` sends nothing and answers
what would have been sent. Media and send options a text send cannot honour are refused by name.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.methods.channels import SendParams, channel_service, send
from homarus.gateway.router import MethodCall, Params

__all__: list[str] = []

#: what a text send of Homarus cannot do: refused when asked for (the CLI sends each as false)
_SEND_OPTIONS_REFUSED = {
    "media": "a file (send it from a run's message tool)",
    "mediaUrl": "a file (send it from a run's message tool)",
    "mediaUrls": "files (send them from a run's message tool)",
    "buffer": "a file (send it from a run's message tool)",
    "pin": "pinning",
    "silent": "a silent send",
    "gifPlayback": "GIF playback",
    "forceDocument": "sending as a document",
    "asVoice": "a voice note",
    "components": "interactive components",
    "presentation": "rich presentation",
    "poll": "polls",
}


class MessageActionParams(Params):
    """The original's ``MessageActionParams``: closed, as there."""

    channel: str = Field(min_length=1, max_length=64)
    action: str = Field(min_length=1, max_length=64)
    params: dict[str, Any] = Field(max_length=100)
    reply: dict[str, Any] | None = Field(default=None, max_length=10)
    account_id: str | None = Field(default=None, alias="accountId", max_length=64)
    requester_account_id: str | None = Field(default=None, alias="requesterAccountId", max_length=64)
    requester_sender_id: str | None = Field(default=None, alias="requesterSenderId", max_length=256)
    sender_is_owner: bool | None = Field(default=None, alias="senderIsOwner")
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    session_id: str | None = Field(default=None, alias="sessionId", max_length=128)
    inbound_turn_kind: Literal["user_request", "room_event"] | None = Field(default=None, alias="inboundTurnKind")
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    tool_context: dict[str, Any] | None = Field(default=None, alias="toolContext", max_length=50)
    conversation_read_origin: Literal["direct-operator"] | None = Field(default=None, alias="conversationReadOrigin")
    idempotency_key: str = Field(alias="idempotencyKey", min_length=1, max_length=256)


async def message_action(call: MethodCall, p: MessageActionParams) -> dict[str, Any]:
    if p.action != "send":
        raise InvalidRequest(
            f"Channel {p.channel} does not support action {p.action}.",
            details={"code": "NOT_SUPPORTED", "channel": p.channel, "action": p.action},
        )
    args = p.params
    for key, what in _SEND_OPTIONS_REFUSED.items():
        if args.get(key) not in (None, False, "", []):
            raise InvalidRequest(
                f"Channel {p.channel} cannot send {what} here: message.action send sends text",
                details={"code": "NOT_SUPPORTED", "channel": p.channel, "action": "send", "param": key},
            )
    to = _text(args, "to") or _text(args, "target")
    if to is None:
        raise InvalidRequest("message.action send: params.target is required")
    prefix = f"{p.channel}:"
    to = to[len(prefix) :] if to.startswith(prefix) else to
    message = _text(args, "message") or _text(args, "text") or ""
    account = p.account_id or _text(args, "accountId")
    thread = _text(args, "threadId")
    if args.get("dryRun") is True:
        target = channel_service(call).resolve_target(p.channel, to, account_id=account, thread_id=thread)
        return {"ok": True, "dryRun": True, "channel": target.channel, "to": target.chat_id, "message": message}
    sent = await send(
        call,
        SendParams.model_validate(
            {
                "to": to,
                "message": message,
                "channel": p.channel,
                "accountId": account,
                "threadId": thread,
                "idempotencyKey": p.idempotency_key,
            }
        ),
    )
    return {"action": "send", **sent}


def _text(args: dict[str, Any], key: str) -> str | None:
    """A string parameter (numbers as the CLI may send them: ``"limit": "5"``, an id as a number)."""
    value = args.get(key)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | str):
        text = str(value).strip()
        return text or None
    raise InvalidRequest(f"message.action: params.{key} must be a string")
