"""A Telegram Bot API client over httpx: the methods Homarus calls, and their errors.

Written here rather than taken from python-telegram-bot or aiogram, measured on this machine:
importing python-telegram-bot 22.8 adds 15 MB of resident memory (its package imports every Bot
API type), aiogram 3.31 adds 144 MB, and the issue's budget for a polling bot is 10 MB over a
gateway without it. Neither library's dispatcher fits either: Homarus must commit each update
before it acknowledges it (the next ``getUpdates`` offset), so it runs its own loop. What is left
is small: JSON or multipart POSTs to ``<apiRoot>/bot<token>/<method>`` and the error object
``{ok: false, error_code, description, parameters: {retry_after?}}``.

The token is part of every URL (the Bot API's design): it is registered with the log redaction
at construction, and no error raised here contains a URL.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import httpx

from homarus.channels.telegram.models import File, Message, Update, User
from homarus.channels.transmit import marked, platform_client
from homarus.security.log_redaction import protect, redact_secrets

__all__ = ["DEFAULT_API_ROOT", "BotApi", "TelegramApiError", "TelegramNetworkError"]

#: connections to the Bot API at once, and kept open between calls (either transport)

DEFAULT_API_ROOT: Final = "https://api.telegram.org"
#: what a long poll may take beyond its own ``timeout`` before the client gives up
POLL_MARGIN_S: Final = 15.0


class TelegramApiError(Exception):
    """The Bot API answered ``ok: false`` (or not with JSON)."""

    def __init__(self, code: int, description: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"{code}: {description}")
        self.code = code
        self.description = description
        self.retry_after = retry_after

    @property
    def cannot_parse_entities(self) -> bool:
        return self.code == 400 and "can't parse entities" in self.description.lower()


class TelegramNetworkError(Exception):
    """The Bot API could not be reached (or did not answer in time)."""


class BotApi:
    def __init__(
        self,
        token: str,
        api_root: str = DEFAULT_API_ROOT,
        *,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        protect(token)
        self.api_root = api_root.rstrip("/")
        self._token = token
        self._timeout = timeout_s
        self._client = platform_client(
            self.api_root, base_url=f"{self.api_root}/bot{token}/", timeout_s=timeout_s, transport=transport
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def file_url(self, file_path: str) -> str:
        """The download URL of a ``getFile`` path (it holds the token: never log or show it)."""
        return f"{self.api_root}/file/bot{self._token}/{file_path.lstrip('/')}"

    # -- transport ------------------------------------------------------------------------------------
    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        files: dict[str, tuple[str, bytes, str]] | None = None,
        timeout_s: float | None = None,
        on_transmitted: Callable[[], Awaitable[None]] | None = None,
    ) -> Any:
        """POST ``method``; the ``result`` of an ``ok`` answer, else raises TelegramApiError."""
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        timeout = httpx.Timeout(timeout_s, connect=10.0) if timeout_s is not None else None
        try:
            if files:
                data = {k: v if isinstance(v, str) else json.dumps(v) for k, v in clean.items()}
                request = self._client.build_request(
                    "POST", method, data=data, files=files, timeout=timeout or self._timeout
                )
            else:
                request = self._client.build_request("POST", method, json=clean, timeout=timeout or self._timeout)
            if on_transmitted is not None:
                request = marked(self._client, request, on_transmitted)
            response = await self._client.send(request)
        except httpx.TimeoutException:
            raise TelegramNetworkError(f"{method}: no answer from the Bot API in time") from None
        except httpx.HTTPError as exc:
            raise TelegramNetworkError(f"{method}: {redact_secrets(type(exc).__name__ + ': ' + str(exc))}") from None
        return _result(method, response)

    # -- methods ----------------------------------------------------------------------------------------
    async def get_me(self) -> User:
        return User.model_validate(await self.call("getMe"))

    async def get_updates(self, offset: int | None, timeout_s: int, allowed: list[str]) -> list[dict[str, Any]]:
        """Raw updates (each parsed by the caller, so one malformed update cannot hide the rest)."""
        result = await self.call(
            "getUpdates",
            {"offset": offset, "timeout": timeout_s, "allowed_updates": allowed},
            timeout_s=timeout_s + POLL_MARGIN_S,
        )
        if not isinstance(result, list):
            raise TelegramApiError(502, "getUpdates answered something that is not a list")
        return [u for u in result if isinstance(u, dict)]

    async def send_message(
        self,
        chat_id: str,
        text: str,
        *,
        parse_mode: str | None,
        thread_id: str | None = None,
        reply_to: str | None = None,
        on_transmitted: Callable[[], Awaitable[None]] | None = None,
    ) -> Message:
        params: dict[str, Any] = {
            "chat_id": chat_id,
            "text": text,
            "parse_mode": parse_mode,
            "message_thread_id": int(thread_id) if thread_id else None,
            "link_preview_options": {"is_disabled": True},
        }
        if reply_to:
            params["reply_parameters"] = {"message_id": int(reply_to), "allow_sending_without_reply": True}
        return Message.model_validate(await self.call("sendMessage", params, on_transmitted=on_transmitted))

    async def send_file(
        self,
        method: str,
        field: str,
        chat_id: str,
        path: Path,
        *,
        caption: str | None,
        parse_mode: str | None,
        thread_id: str | None = None,
        reply_to: str | None = None,
        mime_type: str = "application/octet-stream",
        on_transmitted: Callable[[], Awaitable[None]] | None = None,
    ) -> Message:
        params: dict[str, Any] = {
            "chat_id": chat_id,
            "caption": caption or None,
            "parse_mode": parse_mode if caption else None,
            "message_thread_id": str(int(thread_id)) if thread_id else None,
        }
        if reply_to:
            params["reply_parameters"] = {"message_id": int(reply_to), "allow_sending_without_reply": True}
        files = {field: (path.name, await asyncio.to_thread(path.read_bytes), mime_type)}
        result = await self.call(method, params, files=files, timeout_s=120.0, on_transmitted=on_transmitted)
        return Message.model_validate(result)

    async def send_chat_action(self, chat_id: str, action: str = "typing", thread_id: str | None = None) -> None:
        await self.call(
            "sendChatAction",
            {"chat_id": chat_id, "action": action, "message_thread_id": int(thread_id) if thread_id else None},
        )

    async def get_file(self, file_id: str) -> File:
        return File.model_validate(await self.call("getFile", {"file_id": file_id}))

    async def set_webhook(self, url: str, secret: str, allowed: list[str]) -> None:
        await self.call("setWebhook", {"url": url, "secret_token": secret, "allowed_updates": allowed})

    async def delete_webhook(self) -> None:
        await self.call("deleteWebhook", {"drop_pending_updates": False})

    async def set_my_commands(self, commands: list[dict[str, str]]) -> None:
        await self.call("setMyCommands", {"commands": commands})


def parse_update(raw: dict[str, Any]) -> Update:
    return Update.model_validate(raw)


def _result(method: str, response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        raise TelegramApiError(
            response.status_code, f"{method}: the Bot API answered HTTP {response.status_code} without JSON"
        ) from None
    if not isinstance(body, dict):
        raise TelegramApiError(response.status_code, f"{method}: unexpected answer shape")
    if body.get("ok") is True:
        return body.get("result")
    params = body.get("parameters") if isinstance(body.get("parameters"), dict) else {}
    retry = params.get("retry_after") if isinstance(params, dict) else None
    raw_code = body.get("error_code")
    code = raw_code if isinstance(raw_code, int) else response.status_code
    description = redact_secrets(str(body.get("description") or "unknown error"))[:500]
    raise TelegramApiError(code, description, retry_after=float(retry) if isinstance(retry, int | float) else None)
