"""A Discord REST client over httpx: the calls Homarus makes, their errors, and Discord's rate limits.

Written here rather than taken from discord.py, measured on this machine: importing discord.py
2.7.1 takes ~200 ms and adds 34 MiB (397 modules, aiohttp among them) where the issue's budget is
10 MB per channel, and its client owns the Gateway connection, its sequence numbers and the
resume, which Homarus must commit with each message it stores (``gateway.py``). What is left is
small: JSON (and multipart) requests to ``<apiRoot>/...`` with ``Authorization: Bot <token>``.

Rate limits, as Discord documents them: each route's bucket (``X-RateLimit-Bucket``, keyed with
the route's major parameter, the channel) remembers ``X-RateLimit-Remaining`` and
``X-RateLimit-Reset-After``, and a request to an exhausted bucket waits for its reset instead of
collecting a 429; a 429 answer (``retry_after`` in its body, ``global`` when every route must
wait) is raised with its wait, and a global one makes every later request wait too.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx

from homarus import __version__
from homarus.channels.transmit import marked, platform_client
from homarus.security.log_redaction import protect, redact_secrets

__all__ = ["DEFAULT_API_ROOT", "DiscordApi", "DiscordApiError", "DiscordNetworkError", "RateLimits"]

DEFAULT_API_ROOT: Final = "https://discord.com/api/v10"
#: the longest pre-emptive wait for a bucket's reset; a longer one is raised as a 429 would be
MAX_BUCKET_WAIT_S: Final = 30.0


class DiscordApiError(Exception):
    """Discord answered with an error (its JSON ``{code, message}``, or a 429's ``retry_after``)."""

    def __init__(self, status: int, message: str, *, code: int = 0, retry_after: float | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class DiscordNetworkError(Exception):
    """Discord could not be reached (or did not answer in time)."""


@dataclass(slots=True)
class _Bucket:
    remaining: int = 1
    reset_at: float = 0.0


class RateLimits:
    """Discord's buckets as its headers describe them, and the global limit; ``time`` is monotonic."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: route (method and path template) → the bucket hash Discord named for it
        self._bucket_of: dict[str, str] = {}
        #: (bucket hash, major parameter) → its state
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self.global_until = 0.0

    def wait_for(self, route: str, major: str) -> float:
        """Seconds to wait before a request on ``route`` (0: go now)."""
        now = self._clock()
        wait = max(0.0, self.global_until - now)
        bucket_id = self._bucket_of.get(route)
        bucket = self._buckets.get((bucket_id, major)) if bucket_id else None
        if bucket is not None and bucket.remaining <= 0 and bucket.reset_at > now:
            wait = max(wait, bucket.reset_at - now)
        return wait

    def update(self, route: str, major: str, headers: httpx.Headers) -> None:
        bucket_id = headers.get("x-ratelimit-bucket")
        if not bucket_id:
            return
        self._bucket_of[route] = bucket_id
        if len(self._buckets) > 10_000:  # one per channel written to: bounded all the same
            self._buckets.clear()
        bucket = self._buckets.setdefault((bucket_id, major), _Bucket())
        try:
            bucket.remaining = int(headers.get("x-ratelimit-remaining", "1"))
            bucket.reset_at = self._clock() + float(headers.get("x-ratelimit-reset-after", "0"))
        except ValueError:
            return

    def limited(self, retry_after: float, *, is_global: bool) -> None:
        if is_global:
            self.global_until = max(self.global_until, self._clock() + retry_after)


class DiscordApi:
    def __init__(self, token: str, api_root: str = DEFAULT_API_ROOT, *, timeout_s: float = 30.0) -> None:
        protect(token)
        self.api_root = api_root.rstrip("/")
        self.limits = RateLimits()
        self._client = platform_client(
            self.api_root,
            base_url=self.api_root + "/",
            headers={
                "authorization": f"Bot {token}",
                "user-agent": f"DiscordBot (https://github.com/homarus, {__version__})",
            },
            timeout_s=timeout_s,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request(
        self,
        method: str,
        route: str,
        major: str = "",
        *,
        path: str | None = None,
        json_body: dict[str, Any] | list[Any] | None = None,
        files: list[tuple[str, tuple[str, bytes, str]]] | None = None,
        on_transmitted: Callable[[], Awaitable[None]] | None = None,
    ) -> Any:
        """``method`` on ``path`` (the route template filled in); the decoded JSON answer."""
        key = f"{method} {route}"
        wait = self.limits.wait_for(key, major)
        if wait > MAX_BUCKET_WAIT_S:
            raise DiscordApiError(429, "rate limited", retry_after=wait)
        if wait > 0:
            await asyncio.sleep(wait)
        url = (path or route).lstrip("/")
        try:
            if files:
                data = {"payload_json": json.dumps(json_body if json_body is not None else {})}
                request = self._client.build_request(method, url, data=data, files=files)
            elif json_body is not None:
                request = self._client.build_request(method, url, json=json_body)
            else:
                request = self._client.build_request(method, url)
            if on_transmitted is not None:
                request = marked(self._client, request, on_transmitted)
            response = await self._client.send(request)
        except httpx.TimeoutException:
            raise DiscordNetworkError(f"{key}: no answer from Discord in time") from None
        except httpx.HTTPError as exc:
            raise DiscordNetworkError(f"{key}: {redact_secrets(type(exc).__name__ + ': ' + str(exc))}") from None
        self.limits.update(key, major, response.headers)
        return self._result(key, response)

    def _result(self, key: str, response: httpx.Response) -> Any:
        if response.status_code == 204:
            return None
        try:
            body = response.json()
        except ValueError:
            body = None
        if 200 <= response.status_code < 300:
            return body
        info = body if isinstance(body, dict) else {}
        message = redact_secrets(str(info.get("message") or f"HTTP {response.status_code}"))[:500]
        if response.status_code == 429:
            retry = info.get("retry_after")
            retry_after = float(retry) if isinstance(retry, int | float) else _header_float(response, "retry-after")
            is_global = bool(info.get("global")) or response.headers.get("x-ratelimit-global") == "true"
            self.limits.limited(retry_after or 1.0, is_global=is_global)
            raise DiscordApiError(429, message, retry_after=retry_after or 1.0)
        code = info.get("code")
        raise DiscordApiError(response.status_code, message, code=code if isinstance(code, int) else 0)

    # -- calls ------------------------------------------------------------------------------------------
    async def get_me(self) -> dict[str, Any]:
        return dict(await self.request("GET", "/users/@me"))

    async def get_gateway_bot(self) -> dict[str, Any]:
        return dict(await self.request("GET", "/gateway/bot"))

    async def get_channel(self, channel_id: str) -> dict[str, Any]:
        return dict(await self.request("GET", "/channels/{channel}", channel_id, path=f"/channels/{channel_id}"))

    async def create_message(
        self,
        channel_id: str,
        content: str,
        *,
        reply_to: str | None = None,
        file: Path | None = None,
        mime_type: str = "application/octet-stream",
        on_transmitted: Callable[[], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"content": content, "allowed_mentions": {"parse": [], "replied_user": False}}
        if reply_to:
            body["message_reference"] = {"message_id": reply_to, "fail_if_not_exists": False}
        files = None
        if file is not None:
            data = await asyncio.to_thread(file.read_bytes)
            body["attachments"] = [{"id": 0, "filename": file.name}]
            files = [("files[0]", (file.name, data, mime_type))]
        path = f"/channels/{channel_id}/messages"
        result = await self.request(
            "POST",
            "/channels/{channel}/messages",
            channel_id,
            path=path,
            json_body=body,
            files=files,
            on_transmitted=on_transmitted,
        )
        return dict(result)

    async def set_commands(self, application_id: str, commands: list[dict[str, Any]]) -> None:
        """Replace the application's global slash commands (``PUT``: idempotent across restarts)."""
        path = f"/applications/{application_id}/commands"
        await self.request("PUT", "/applications/{application}/commands", application_id, path=path, json_body=commands)

    async def answer_interaction(self, interaction_id: str, token: str, content: str) -> None:
        """Answer a slash command at once, visible to its user only (Discord waits 3 s at most)."""
        protect(token)
        path = f"/interactions/{interaction_id}/{token}/callback"
        body = {"type": 4, "data": {"content": content, "flags": 64, "allowed_mentions": {"parse": []}}}
        await self.request(
            "POST", "/interactions/{interaction}/{token}/callback", interaction_id, path=path, json_body=body
        )

    async def trigger_typing(self, channel_id: str) -> None:
        await self.request("POST", "/channels/{channel}/typing", channel_id, path=f"/channels/{channel_id}/typing")


def _header_float(response: httpx.Response, name: str) -> float | None:
    try:
        return float(response.headers[name])
    except (KeyError, ValueError):
        return None
