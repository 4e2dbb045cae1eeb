"""One Telegram bot account: long polling (default) or a webhook, sending, typing, downloads.

Long polling commits each batch with the offset that acknowledges it, in one transaction, and
only then asks for the next batch with that offset — Telegram forgets an update only once a
``getUpdates`` carries an offset past it, so a crash at any point loses nothing and the unique
message key makes a redelivery harmless. A lost network backs off (1 s doubling to 60 s) and
resumes from the committed offset; ``429`` waits its ``retry_after``; ``401`` stops the account
(the token was revoked) with that reason in its status; ``409`` (another poller or a webhook)
backs off and says so.

Webhook mode sets the webhook at start with its secret; a POST whose
``X-Telegram-Bot-Api-Secret-Token`` does not match (constant-time) gets 401; a malformed or
unsupported update is acknowledged and skipped (Telegram would otherwise redeliver it forever);
a good one is committed before the 200.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import mimetypes
import random
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from homarus.channels import credentials
from homarus.channels.account_status import AccountStatus
from homarus.channels.adapter import SendFailed
from homarus.channels.media_files import kept_attachment
from homarus.channels.model import Attachment, InboundMessage, OutboundMessage, SendReceipt, Target
from homarus.channels.telegram.api import DEFAULT_API_ROOT, BotApi, TelegramApiError, TelegramNetworkError, parse_update
from homarus.channels.telegram.format import markdown_to_html, markdown_to_text
from homarus.channels.telegram.inbound import GENERAL_TOPIC, normalize_update

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, Transmitted
    from homarus.channels.telegram.models import User

__all__ = ["TelegramAccount"]

POLL_TIMEOUT_S: Final = 25
ALLOWED_UPDATES: Final = ["message", "channel_post"]
DEFAULT_WEBHOOK_PATH: Final = "/telegram-webhook"
SECRET_HEADER: Final = "x-telegram-bot-api-secret-token"  # noqa: S105 (a header name)
#: Telegram's own caps: a photo up to 10 MB, a caption up to 1024 characters
PHOTO_MAX_BYTES: Final = 10 * 1024 * 1024
_PERMANENT: Final = (
    "chat not found",
    "bot was blocked",
    "user is deactivated",
    "not enough rights",
    "have no rights",
    "bot was kicked",
    "bot is not a member",
    "message thread not found",
    "topic_closed",
    "chat_write_forbidden",
)


class TelegramAccount(AccountStatus):
    channel_id = "telegram"

    def __init__(self, ctx: AccountContext) -> None:
        self._init_account(ctx, DEFAULT_API_ROOT)
        self.api: BotApi | None = None
        self.bot: User | None = None
        self.mode = "webhook" if self.settings.get("webhook_url") else "polling"
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    # -- lifecycle ------------------------------------------------------------------------------------
    def _token(self) -> str:
        return credentials.read(
            self.settings,
            self.account_id,
            self.ctx.env,
            key="bot_token",
            env_var="TELEGRAM_BOT_TOKEN",
            where="channels.telegram.botToken",
        )

    async def start(self) -> None:
        self._stopping = False
        self.state = "starting"
        try:
            self.api = BotApi(self._token(), self.api_root)
            self.bot = await self.api.get_me()
        except TelegramApiError as exc:
            self.failed("the bot token was rejected (getMe 401)" if exc.code == 401 else f"getMe failed: {exc}")
            raise SendFailed(self.last_error or "getMe failed", permanent=exc.code == 401) from None
        except (TelegramNetworkError, SendFailed) as exc:
            self.failed(str(exc))
            raise SendFailed(self.last_error or "start failed") from None
        with contextlib.suppress(TelegramApiError, TelegramNetworkError):
            await self.api.set_my_commands(
                [
                    {"command": "new", "description": "Start a new conversation"},
                    {"command": "status", "description": "Session status"},
                    {"command": "help", "description": "What I can do"},
                ]
            )
        if self.mode == "webhook":
            secret = self.settings["webhook_secret"].get_secret_value()
            await self.api.set_webhook(str(self.settings["webhook_url"]), secret, ALLOWED_UPDATES)
        else:
            await self.api.delete_webhook()  # getUpdates is refused while a webhook is set
            self._task = asyncio.create_task(self._poll(), name=f"telegram-poll:{self.account_id}")
        self.state = "running"
        self.last_error = None

    async def stop(self) -> None:
        self._stopping = True
        await self._stopped(self._task, self.api)
        self._task, self.api = None, None

    async def logout(self) -> None:
        """Stop, and remove the webhook this account set (the bot itself stays as BotFather made it)."""
        if self.api is not None and self.mode == "webhook":
            with contextlib.suppress(TelegramApiError, TelegramNetworkError):
                await self.api.delete_webhook()
        await self.stop()

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.status_fields(), "mode": self.mode}
        if self.bot is not None:
            out["identity"] = {"id": str(self.bot.id), "username": self.bot.username, "name": self.bot.first_name}
        if self.mode == "webhook":
            out["webhookPath"] = self.webhook_path()
        return out

    # -- receiving --------------------------------------------------------------------------------------
    async def _poll(self) -> None:
        assert self.api is not None and self.bot is not None
        raw = await self.ctx.sink.cursor("telegram", self.account_id, "offset")
        offset = int(raw) if raw and raw.lstrip("-").isdigit() else None
        backoff = 1.0
        while not self._stopping:
            try:
                updates = await self.api.get_updates(offset, POLL_TIMEOUT_S, ALLOWED_UPDATES)
            except TelegramApiError as exc:
                if exc.code == 401:
                    self.failed("the bot token was revoked (getUpdates 401); polling stopped")
                    return
                wait = exc.retry_after if exc.retry_after is not None else backoff
                note = "another poller or a webhook uses this bot (409)" if exc.code == 409 else str(exc)
                self._degraded(note, wait)
                await asyncio.sleep(wait)
                backoff = min(60.0, backoff * 2)
                continue
            except TelegramNetworkError as exc:
                self._degraded(str(exc), backoff)
                await asyncio.sleep(backoff * (0.8 + 0.4 * random.random()))  # noqa: S311 (jitter)
                backoff = min(60.0, backoff * 2)
                continue
            if not updates:
                self._recovered()
                continue
            messages = self._normalize_all(updates)
            next_offset = max(int(u.get("update_id", 0)) for u in updates) + 1
            try:
                await self.ctx.sink.receive(messages, ("telegram", self.account_id, "offset", str(next_offset)))
            except Exception as exc:  # not committed: keep the offset, Telegram redelivers the batch
                self._degraded(f"could not store updates: {type(exc).__name__}", backoff)
                await asyncio.sleep(backoff)
                backoff = min(60.0, backoff * 2)
                continue
            offset = next_offset
            backoff = 1.0
            self._recovered()
            if messages:
                self.received()

    def _normalize_all(self, updates: list[dict[str, Any]]) -> list[InboundMessage]:
        assert self.bot is not None
        out: list[InboundMessage] = []
        for raw in updates:
            try:
                update = parse_update(raw)
            except ValidationError as exc:
                self.ctx.log.warning("telegram[%s]: skipped a malformed update: %s", self.account_id, _first_error(exc))
                continue
            msg, why = normalize_update(update, account_id=self.account_id, bot=self.bot)
            if msg is None:
                self.ctx.log.debug("telegram[%s]: update %s skipped: %s", self.account_id, update.update_id, why)
                continue
            out.append(msg)
        return out

    def _degraded(self, message: str, wait: float) -> None:
        if self.last_error != message[:300]:
            self.ctx.log.warning("telegram[%s]: %s; retrying in %.0fs", self.account_id, message, wait)
        self.last_error = message[:300]
        self.state = "degraded"

    def _recovered(self) -> None:
        if self.state == "degraded":
            self.ctx.log.info("telegram[%s]: polling again", self.account_id)
        self.state = "running"
        self.last_error = None

    def webhook_path(self) -> str | None:
        return str(self.settings.get("webhook_path") or DEFAULT_WEBHOOK_PATH) if self.mode == "webhook" else None

    async def webhook(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        expected = self.settings.get("webhook_secret")
        given = headers.get(SECRET_HEADER, "")
        if expected is None or not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
            return 401, b'{"ok":false,"error":"unauthorized"}'
        if self.bot is None:
            return 503, b'{"ok":false,"error":"starting"}'
        try:
            raw = json.loads(body)
            update = parse_update(raw if isinstance(raw, dict) else {})
        except (ValueError, ValidationError):
            self.ctx.log.warning("telegram[%s]: webhook: skipped a malformed update", self.account_id)
            return 200, b""  # acknowledged: redelivering it would not make it valid
        msg, _why = normalize_update(update, account_id=self.account_id, bot=self.bot)
        if msg is not None:
            await self.ctx.sink.receive([msg])  # raises: the route answers 500 and Telegram retries
            self.received()
        return 200, b""

    # -- sending ----------------------------------------------------------------------------------------
    async def send(self, message: OutboundMessage, on_transmitted: Transmitted) -> SendReceipt:
        if self.api is None:
            raise SendFailed("the account is not running")
        target = message.target
        thread = target.thread_id if target.thread_id and target.thread_id != GENERAL_TOPIC else None
        try:
            if message.media_path:
                sent = await self._send_file(message, thread, on_transmitted)
                self.sent()
                return SendReceipt(str(sent.message_id))
            text = markdown_to_html(message.text) if message.markdown else message.text
            try:
                sent = await self.api.send_message(
                    target.chat_id,
                    text,
                    parse_mode="HTML" if message.markdown else None,
                    thread_id=thread,
                    reply_to=message.reply_to_id,
                    on_transmitted=on_transmitted,
                )
                plain = False
            except TelegramApiError as exc:
                if not (exc.cannot_parse_entities and message.markdown):
                    raise
                # the formatted text was refused (nothing was sent): the same words as plain text
                sent = await self.api.send_message(
                    target.chat_id,
                    markdown_to_text(message.text),
                    parse_mode=None,
                    thread_id=thread,
                    reply_to=message.reply_to_id,
                    on_transmitted=on_transmitted,
                )
                plain = True
        except TelegramApiError as exc:
            raise _send_failed(exc) from None
        except TelegramNetworkError as exc:
            raise SendFailed(str(exc)) from None
        self.sent()
        return SendReceipt(str(sent.message_id), plain_fallback=plain)

    async def _send_file(self, message: OutboundMessage, thread: str | None, on_transmitted: Transmitted) -> Any:
        assert self.api is not None and message.media_path is not None
        path = Path(message.media_path)
        size = await self.outgoing_size(path, 100)
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        kind = message.media_kind or ("image" if mime.startswith("image/") else "document")
        method, field = {
            "image": ("sendPhoto", "photo"),
            "voice": ("sendVoice", "voice"),
            "audio": ("sendAudio", "audio"),
            "video": ("sendVideo", "video"),
        }.get(kind, ("sendDocument", "document"))
        if method == "sendPhoto" and (size > PHOTO_MAX_BYTES or mime in ("image/gif", "image/svg+xml")):
            method, field = "sendDocument", "document"
        caption = markdown_to_html(message.text) if message.text and message.markdown else (message.text or None)
        return await self.api.send_file(
            method,
            field,
            message.target.chat_id,
            path,
            caption=caption,
            parse_mode="HTML" if message.markdown else None,
            thread_id=thread,
            reply_to=message.reply_to_id,
            mime_type=mime,
            on_transmitted=on_transmitted,
        )

    async def typing(self, target: Target) -> None:
        if self.api is None:
            return
        with contextlib.suppress(TelegramApiError, TelegramNetworkError):
            # the General topic needs its id here (unlike sends), or the indicator does not show
            await self.api.send_chat_action(target.chat_id, "typing", target.thread_id)

    async def download(self, attachment: Attachment, dest_dir: Path, max_bytes: int) -> Attachment:
        """Fetch a file through the SSRF-guarded client (the API root is trusted) into ``dest_dir``."""
        if self.api is None or self.ctx.fetch is None:
            raise SendFailed("the account is not running")
        if attachment.size is not None and attachment.size > max_bytes:
            raise SendFailed(f"too large ({attachment.size // 1_048_576} MB)", permanent=True)
        try:
            info = await self.api.get_file(attachment.ref)
        except (TelegramApiError, TelegramNetworkError) as exc:
            raise SendFailed(f"getFile failed: {exc}") from None
        if info.file_size is not None and info.file_size > max_bytes:
            raise SendFailed(f"too large ({info.file_size // 1_048_576} MB)", permanent=True)
        file_path = info.file_path or ""
        if not file_path or ".." in file_path.split("/") or file_path.startswith("/") or "://" in file_path:
            raise SendFailed("the Bot API gave no usable file path", permanent=True)
        result = await self.ctx.fetch(
            self.api.file_url(file_path), max_bytes=max_bytes + 1, timeout_s=120.0, trusted_origin=self.api_root
        )
        if result.status != 200:
            raise SendFailed(f"file download answered HTTP {result.status}")
        if result.truncated or len(result.body) > max_bytes:
            raise SendFailed(f"too large (over {max_bytes // 1_048_576} MB)", permanent=True)
        name = attachment.file_name or Path(file_path).name or None
        return await kept_attachment(dest_dir, attachment, result.body, name=name)


def _send_failed(exc: TelegramApiError) -> SendFailed:
    text = exc.description.lower()
    if exc.code == 429:
        return SendFailed(f"flood control: {exc.description}", retry_after=exc.retry_after or 5.0)
    permanent = exc.code in (401, 403) or (exc.code == 400 and any(p in text for p in _PERMANENT))
    return SendFailed(f"Telegram refused: {exc}", permanent=permanent, format_rejected=exc.cannot_parse_entities)


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "invalid"
    first = errors[0]
    return f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg', '')}"
