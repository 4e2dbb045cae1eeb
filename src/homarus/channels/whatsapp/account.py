"""One WhatsApp Business Cloud number: webhooks in, the Graph API out, media both ways.

Receiving: Meta POSTs notifications to ``webhookPath``; one is checked against the app secret
(``X-Hub-Signature-256``, 401 otherwise), normalized, and its messages committed before the 200
(a 500 when the commit fails, and Meta delivers again; a delivery of a committed message is
dropped by the inbox's unique key). The callback URL's verification GET is answered with the
verify token. Sending: Markdown becomes WhatsApp's formatting; a file is uploaded and sent by
media id with the text as its caption. Graph errors map to the layer's: the rate limits wait,
the 24-hour customer-service window closing is permanent and says so (a template message would
be needed to reach someone who has not written for a day), as are a bad token or number.

"Typing": the Cloud API shows it only together with marking a received message read, so the
last message of each person is remembered (bounded) and ``typing`` marks it read with the
indicator (unless ``sendReadReceipts: false``).
"""

from __future__ import annotations

import json
import mimetypes
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from homarus.channels.account_status import AccountStatus
from homarus.channels.adapter import SendFailed
from homarus.channels.credentials import read_secret
from homarus.channels.media_files import fetch_file, kept_attachment, named_by_type
from homarus.channels.model import Attachment, OutboundMessage, SendReceipt, Target, attachment_kind
from homarus.channels.whatsapp.api import DEFAULT_API_ROOT, GraphApi, GraphApiError, GraphNetworkError
from homarus.channels.whatsapp.format import to_whatsapp
from homarus.channels.whatsapp.inbound import normalize_notification
from homarus.channels.whatsapp.webhook import DEFAULT_WEBHOOK_PATH, challenge_answer, verify_signature

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, Transmitted

__all__ = ["ACCESS_TOKEN_ENV", "APP_SECRET_ENV", "VERIFY_TOKEN_ENV", "WhatsAppAccount"]

ACCESS_TOKEN_ENV: Final = "WHATSAPP_ACCESS_TOKEN"  # noqa: S105 - the variable's name
APP_SECRET_ENV: Final = "WHATSAPP_APP_SECRET"  # noqa: S105 - the variable's name
VERIFY_TOKEN_ENV: Final = "WHATSAPP_VERIFY_TOKEN"  # noqa: S105 - the variable's name
#: people whose last message is remembered for the read receipt and typing indicator
MAX_REMEMBERED: Final = 10_000
#: re-engagement: more than 24 hours since the person last wrote
WINDOW_CLOSED: Final = 131047
#: codes no retry fixes: bad token or permissions, unknown number or recipient, unsupported
#: or too large media, a parameter WhatsApp refuses, the account restricted
_PERMANENT: Final = frozenset({190, 10, 200, 100, 33, 131008, 131009, 131021, 131026, 131031, 131051, 131052, 131053})
_KINDS: Final = {"image": "image", "audio": "audio", "voice": "audio", "video": "video", "document": "document"}


class WhatsAppAccount(AccountStatus):
    channel_id = "whatsapp"

    def __init__(self, ctx: AccountContext) -> None:
        self._init_account(ctx, DEFAULT_API_ROOT)
        self.mode = "cloud"
        self.api: GraphApi | None = None
        self.number = ""
        self._app_secret: str | None = None
        self._verify_token: str | None = None
        self._last_message: OrderedDict[str, str] = OrderedDict()
        self.delivery_failures = 0

    # -- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.state = "starting"
        phone_number_id = str(self.settings.get("phone_number_id") or "")
        try:
            if not phone_number_id:
                raise SendFailed("no phoneNumberId: set channels.whatsapp.phoneNumberId", permanent=True)
            token = read_secret(self.ctx, "access_token", ACCESS_TOKEN_ENV, what="access token", file_key="token_file")
            self._app_secret = read_secret(self.ctx, "app_secret", APP_SECRET_ENV, what="app secret")
            self._verify_token = read_secret(self.ctx, "verify_token", VERIFY_TOKEN_ENV, what="verify token")
            self.api = GraphApi(token, phone_number_id, self.api_root)
            info = await self.api.phone_number()
        except GraphApiError as exc:
            fatal = exc.code in _PERMANENT or exc.status in (400, 401, 403, 404)
            self.failed(f"the access token or number was refused ({exc})" if fatal else f"WhatsApp refused: {exc}")
            raise SendFailed(self.last_error or "start failed", permanent=fatal) from None
        except (GraphNetworkError, SendFailed) as exc:
            self.failed(str(exc))
            raise SendFailed(self.last_error or "start failed", permanent=getattr(exc, "permanent", False)) from None
        self.number = str(info.get("display_phone_number") or "")
        self.state = "running"
        self.last_error = None

    async def stop(self) -> None:
        await self._stopped(None, self.api)
        self.api = None

    async def logout(self) -> None:
        await self.stop()

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.status_fields(), "mode": self.mode, "webhookPath": self.webhook_path()}
        if self.number:
            out["identity"] = {"id": str(self.settings.get("phone_number_id") or ""), "username": self.number}
        out["details"] = {"deliveryFailures": self.delivery_failures}
        return out

    # -- receiving --------------------------------------------------------------------------------------
    def webhook_path(self) -> str | None:
        return str(self.settings.get("webhook_path") or DEFAULT_WEBHOOK_PATH)

    async def webhook_challenge(self, query: Mapping[str, str]) -> tuple[int, bytes]:
        """The callback URL's verification GET."""
        return challenge_answer(self._verify_token, query)

    async def webhook(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        if self._app_secret is None or not verify_signature(self._app_secret, headers, body):
            self.log.warning("whatsapp[%s]: refused a webhook with a missing or wrong signature", self.account_id)
            return 401, b'{"error":"invalid signature"}'
        try:
            data = json.loads(body)
        except ValueError:
            return 400, b'{"error":"invalid json"}'
        note = normalize_notification(
            data, account_id=self.account_id, phone_number_id=str(self.settings.get("phone_number_id") or "")
        )
        for what, why in note.skipped:
            self.log.debug("whatsapp[%s]: %s skipped: %s", self.account_id, what, why)
        for recipient, why in note.failures:
            self.delivery_failures += 1
            self.log.warning("whatsapp[%s]: WhatsApp could not deliver to %s: %s", self.account_id, recipient, why)
        if note.messages:
            for msg in note.messages:  # before the commit: the run (and its typing) may start at once
                self._remember(msg.chat_id, msg.message_id)
            await self.ctx.sink.receive(list(note.messages))  # raising: 500, Meta delivers again
            self.received()
        return 200, b'{"ok":true}'

    def _remember(self, chat_id: str, message_id: str) -> None:
        self._last_message[chat_id] = message_id
        self._last_message.move_to_end(chat_id)
        while len(self._last_message) > MAX_REMEMBERED:
            self._last_message.popitem(last=False)

    # -- sending ----------------------------------------------------------------------------------------
    async def send(self, message: OutboundMessage, on_transmitted: Transmitted) -> SendReceipt:
        if self.api is None:
            raise SendFailed("the account is not running")
        to = message.target.chat_id.removeprefix("+")
        text = to_whatsapp(message.text) if message.markdown and message.text else message.text
        payload: dict[str, Any]
        try:
            if message.media_path:
                file = Path(message.media_path)
                await self.outgoing_size(file, 50)
                mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
                kind = _KINDS.get(message.media_kind or "", "") or attachment_kind(mime)
                media: dict[str, Any] = {"id": await self.api.upload_media(file, mime)}
                if text and kind != "audio":  # WhatsApp takes no caption on audio
                    media["caption"] = text
                if kind == "document":
                    media["filename"] = file.name
                payload = {"to": to, "type": kind, kind: media}
            else:
                payload = {"to": to, "type": "text", "text": {"preview_url": False, "body": text}}
            if message.reply_to_id:
                payload["context"] = {"message_id": message.reply_to_id}
            sent = await self.api.send_message(payload, on_transmitted=on_transmitted)
        except GraphApiError as exc:
            raise _send_failed(exc) from None
        except GraphNetworkError as exc:
            raise SendFailed(str(exc)) from None
        self.sent()
        ids = [m.get("id") for m in sent.get("messages") or () if isinstance(m, dict)]
        return SendReceipt(str(ids[0]) if ids and ids[0] else None)

    async def typing(self, target: Target) -> None:
        message_id = self._last_message.pop(target.chat_id, None)  # once per message: WhatsApp refuses more
        if self.api is None or message_id is None or self.settings.get("send_read_receipts") is False:
            return
        try:
            await self.api.mark_read(message_id, typing=True)
        except (GraphApiError, GraphNetworkError) as exc:
            self.log.debug("whatsapp[%s]: no typing indicator: %s", self.account_id, exc)

    async def download(self, attachment: Attachment, dest_dir: Path, max_bytes: int) -> Attachment:
        """Look the media id up (a URL valid five minutes), then fetch it through the SSRF-guarded
        client; the token goes only to Meta's hosts (or the configured API root's)."""
        if self.api is None:
            raise SendFailed("the account is not running")
        try:
            info = await self.api.media_info(attachment.ref)
        except GraphApiError as exc:
            raise SendFailed(f"WhatsApp has no such media: {exc}", permanent=exc.status in (400, 404)) from None
        except GraphNetworkError as exc:
            raise SendFailed(str(exc)) from None
        size = info.get("file_size")
        result = await fetch_file(
            self.ctx.fetch,
            str(info.get("url") or ""),
            api_root=self.api_root,
            max_bytes=max_bytes,
            size=size if isinstance(size, int) else None,
            token=self.api.token,
            token_domains=("facebook.com", "fbsbx.com", "whatsapp.net"),
        )
        mime = str(info.get("mime_type") or attachment.mime_type or "") or None
        return await kept_attachment(dest_dir, attachment, result.body, name=named_by_type(attachment, mime), mime=mime)


def _send_failed(exc: GraphApiError) -> SendFailed:
    if exc.retry_after is not None:
        return SendFailed(f"rate limited by WhatsApp: {exc.message}", retry_after=exc.retry_after)
    if exc.code == WINDOW_CLOSED:
        return SendFailed(
            "WhatsApp refused: more than 24 hours have passed since this person last wrote, and WhatsApp "
            "lets a business answer only inside that window (a template message would be needed); "
            "it opens again when they write",
            permanent=True,
        )
    permanent = exc.code in _PERMANENT or exc.status in (401, 403, 404)
    return SendFailed(f"WhatsApp refused: {exc}", permanent=permanent)
