"""The bundled ``channels`` plugin: the ``message`` tool, through the same API as any plugin's tool.

``message`` sends text and/or a workspace file to a chat: by default the conversation the
current run answers (or the session's last chat), or any ``channel`` + ``to`` the gateway's
accounts can reach. A run asked for by someone other than an owner may only write to its own
conversation. The tool is offered only when the config has a ``channels`` section.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus import __version__
from homarus.errors import InvalidRequest, Unavailable

if TYPE_CHECKING:
    from homarus.plugins.api import PluginApi

__all__ = ["manifest", "message", "register"]

manifest: dict[str, Any] = {
    "id": "channels",
    "name": "Chat channels",
    "version": __version__,
    "description": "The message tool: send text and files to chat channels.",
    "configSchema": {"type": "object", "additionalProperties": False},
    "contracts": {"tools": ["message"]},
}


async def message(
    ctx: Any,
    *,
    text: str = "",
    channel: str | None = None,
    to: str | None = None,
    thread_id: str | None = None,
    file: str | None = None,
) -> str:
    """Send a chat message (and optionally a file from the workspace) to a channel; default: this conversation.

    to: the chat id (or <channel>:<chatId>). file: a path inside the workspace.
    """
    get = ctx.services.channels
    service = get() if callable(get) else None
    if service is None:
        raise Unavailable("no chat channel is configured")
    origin = service.active_runs.get(ctx.run_id) or {}
    here = origin.get("target")
    if to is None and channel is None:
        if here is None:
            here = _session_target(ctx)
        if here is None:
            raise InvalidRequest("no conversation to answer here: give channel and to")
        channel, to, thread_id = here["channel"], here["chatId"], thread_id or here.get("threadId")
        account = here.get("accountId")
    else:
        account = None
    target = service.resolve_target(channel, to or "", account_id=account, thread_id=thread_id)
    if origin and not origin.get("owner") and here is not None:
        mine = (here["channel"], here["chatId"])
        if (target.channel, target.chat_id) != mine:
            raise InvalidRequest("this conversation may only send messages to itself")
    media = None
    if file:
        media = _workspace_file(ctx, file)
    result = await service.send(
        target, text, idempotency_key=f"tool:{ctx.run_id}:{ctx.tool_call_id}:{uuid.uuid4().hex[:8]}", media_path=media
    )
    if result.get("status") != "sent":
        return f"Queued for {target.channel}:{target.chat_id} (the platform has not answered yet)."
    return f"Sent to {target.channel}:{target.chat_id} (message id {result.get('messageId')})."


def _session_target(ctx: Any) -> dict[str, Any] | None:
    sessions = ctx.services.sessions
    if sessions is None:
        return None
    ref = sessions.get(sessions.resolve_key(ctx.session_key))
    delivery = ref.entry.delivery_context if ref is not None else None
    if delivery is None or not delivery.channel or not delivery.to:
        return None
    return {
        "channel": delivery.channel,
        "chatId": delivery.to,
        "accountId": delivery.account_id,
        "threadId": delivery.thread_id,
    }


def _workspace_file(ctx: Any, file: str) -> str:
    root = Path(ctx.workspace).resolve()
    path = (root / file).resolve()
    if not path.is_relative_to(root):
        raise InvalidRequest("file must be inside the workspace")
    if not path.is_file():
        raise InvalidRequest(f"no such file in the workspace: {file}")
    return str(path)


def register(api: PluginApi) -> None:
    api.register_tool(message)
