"""Platform webhooks of chat channels (Telegram's ``webhookPath``, Slack's HTTP events, WhatsApp's
callback URL), served on the gateway port.

The route matches only the paths of running accounts in webhook mode, so it costs a dictionary
walk and exposes nothing when no channel uses a webhook. The account checks the platform's
secret (constant-time; 401 otherwise) and commits the update before the 200, which carries
``x-homarus-delivery-accepted: durable`` so a proxy can tell adoption from a generic 200. A
storage failure answers 500: the platform delivers again later. Bodies are capped at 1 MiB. A
``GET`` is the platform checking the URL (WhatsApp's verify-token handshake): answered by the
account's ``webhook_challenge`` when it has one, else 405.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match

from homarus.gateway.errors import error_response, plain_error
from homarus.gateway.http.common import BodyError, read_body

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from homarus.gateway.context import GatewayContext

__all__ = ["ChannelWebhooks"]

log = logging.getLogger("homarus.channels")

MAX_BODY: Final = 1024 * 1024


class ChannelWebhooks(BaseRoute):
    def __init__(self, gateway: GatewayContext) -> None:
        self.gateway = gateway

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or not self.gateway.built("channels"):
            return Match.NONE, {}
        account = self.gateway.channels.manager.webhook_account(scope["path"])
        return (Match.FULL, {}) if account is not None else (Match.NONE, {})

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        account = self.gateway.channels.manager.webhook_account(scope["path"])
        if account is None:
            response = plain_error(404, "Not Found")
        elif request.method == "GET" and hasattr(account, "webhook_challenge"):
            status, payload = await account.webhook_challenge(dict(request.query_params))
            response = Response(payload, status_code=status, media_type="text/plain")
        elif request.method != "POST":
            response = plain_error(405, "Method Not Allowed", headers={"Allow": "POST"})
        else:
            response = await self._post(request, account)
        await response(scope, receive, send)

    async def _post(self, request: Request, account: object) -> Response:
        try:
            body = await read_body(request, MAX_BODY)
        except BodyError as exc:
            return plain_error(exc.status, exc.message)
        try:
            status, payload = await account.webhook(dict(request.headers), body)  # type: ignore[attr-defined]
        except Exception:
            log.exception("channels: a webhook update could not be stored; the platform will retry")
            return error_response("hooks", 500, "storage")
        headers = {"x-homarus-delivery-accepted": "durable"} if status == 200 else None
        return Response(payload, status_code=status, media_type="application/json", headers=headers)
