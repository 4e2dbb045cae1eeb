"""A Slack Web API client over httpx: the methods Homarus calls, their errors and Slack's 429s.

Written here rather than taken from slack_sdk, measured on this machine: ``import slack_sdk.web``
takes ~180 ms and 17 MiB (its package imports the whole sync client), its Socket Mode client
over websockets ~490 ms and 30 MiB, and its async Web client needs aiohttp (~400 ms, 28 MiB),
where the issue's budget is 10 MB per channel. Socket Mode must also acknowledge an envelope
only after Homarus committed it (``socket.py``), which the SDK's listeners leave to the caller
anyway. What is left is small: ``POST <apiRoot>/<method>`` with ``Authorization: Bearer``, and
Slack's ``{"ok": false, "error": "..."}`` answers.

Rate limits, as Slack documents them: a method over its tier answers HTTP 429 with
``Retry-After`` (seconds); that wait is raised with the error, and the outbox honours it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import httpx

from homarus import __version__
from homarus.channels.transmit import marked, platform_client
from homarus.security.log_redaction import protect, redact_secrets

__all__ = ["DEFAULT_API_ROOT", "SlackApi", "SlackApiError", "SlackNetworkError"]

DEFAULT_API_ROOT: Final = "https://slack.com/api"


class SlackApiError(Exception):
    """Slack answered ``ok: false`` (its ``error`` code), or with an HTTP error (a 429's wait)."""

    def __init__(self, error: str, *, status: int = 200, retry_after: float | None = None) -> None:
        super().__init__(error if status == 200 else f"{status}: {error}")
        self.error = error
        self.status = status
        self.retry_after = retry_after


class SlackNetworkError(Exception):
    """Slack could not be reached (or did not answer in time)."""


class SlackApi:
    def __init__(self, token: str, api_root: str = DEFAULT_API_ROOT, *, timeout_s: float = 30.0) -> None:
        protect(token)
        self.token = token
        self.api_root = api_root.rstrip("/")
        self._client = platform_client(
            self.api_root, headers={"user-agent": f"Homarus/{__version__} (slack)"}, timeout_s=timeout_s
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def call(
        self,
        method: str,
        *,
        json_body: dict[str, Any] | None = None,
        form: dict[str, str] | None = None,
        token: str | None = None,
        on_transmitted: Callable[[], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        """``POST <root>/<method>``; the answer when ``ok``, else :class:`SlackApiError`."""
        headers = {"authorization": f"Bearer {token or self.token}"}
        url = f"{self.api_root}/{method}"
        if json_body is not None:
            request = self._client.build_request("POST", url, json=json_body, headers=headers)
            request.headers["content-type"] = "application/json; charset=utf-8"
        else:
            request = self._client.build_request("POST", url, data=form or {}, headers=headers)
        if on_transmitted is not None:
            request = marked(self._client, request, on_transmitted)
        return _result(method, await self._send(method, request))

    async def _send(self, what: str, request: httpx.Request) -> httpx.Response:
        try:
            return await self._client.send(request)
        except httpx.TimeoutException:
            raise SlackNetworkError(f"{what}: no answer from Slack in time") from None
        except httpx.HTTPError as exc:
            raise SlackNetworkError(f"{what}: {redact_secrets(type(exc).__name__ + ': ' + str(exc))}") from None

    # -- calls ------------------------------------------------------------------------------------------
    async def auth_test(self) -> dict[str, Any]:
        """Who the bot token belongs to: ``user_id``, ``user``, ``team_id``, ``team``, ``bot_id``."""
        return await self.call("auth.test")

    async def open_connection(self, app_token: str) -> str:
        """A single-use Socket Mode URL (``apps.connections.open``, with the app-level token)."""
        protect(app_token)
        answer = await self.call("apps.connections.open", token=app_token)
        url = str(answer.get("url") or "")
        if not url.startswith(("wss://", "ws://")):
            raise SlackApiError("no_socket_url")
        return url

    async def post_message(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        mrkdwn: bool = True,
        on_transmitted: Callable[[], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"channel": channel, "text": text, "mrkdwn": mrkdwn, "unfurl_links": False}
        if thread_ts:
            body["thread_ts"] = thread_ts
        return await self.call("chat.postMessage", json_body=body, on_transmitted=on_transmitted)

    async def upload_file(
        self,
        channel: str,
        file: Path,
        *,
        comment: str = "",
        thread_ts: str | None = None,
        on_transmitted: Callable[[], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        """Slack's external upload: reserve (``files.getUploadURLExternal``), send the bytes to the
        URL it gave, then share in the channel (``files.completeUploadExternal``), the step that
        posts and so the one marked transmitted."""
        data = await asyncio.to_thread(file.read_bytes)
        slot = await self.call("files.getUploadURLExternal", form={"filename": file.name, "length": str(len(data))})
        upload_url, file_id = str(slot.get("upload_url") or ""), str(slot.get("file_id") or "")
        if not upload_url or not file_id:
            raise SlackApiError("no_upload_url")
        request = self._client.build_request(
            "POST", upload_url, files={"file": (file.name, data)}, headers={"authorization": f"Bearer {self.token}"}
        )
        response = await self._send("file upload", request)
        if response.status_code != 200:
            raise SlackApiError("upload_failed", status=response.status_code, retry_after=_retry_after(response))
        body: dict[str, Any] = {"files": [{"id": file_id, "title": file.name}], "channel_id": channel}
        if comment:
            body["initial_comment"] = comment
        if thread_ts:
            body["thread_ts"] = thread_ts
        return await self.call("files.completeUploadExternal", json_body=body, on_transmitted=on_transmitted)


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None


def _result(method: str, response: httpx.Response) -> dict[str, Any]:
    if response.status_code == 429:
        raise SlackApiError("ratelimited", status=429, retry_after=_retry_after(response) or 1.0)
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200 or not isinstance(body, dict):
        raise SlackApiError(f"http_{response.status_code}", status=response.status_code)
    if not body.get("ok"):
        raise SlackApiError(redact_secrets(str(body.get("error") or "unknown_error"))[:200])
    return body
