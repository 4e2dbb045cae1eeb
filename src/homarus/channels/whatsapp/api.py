"""The WhatsApp Business Cloud API (Meta's Graph API) over httpx: the calls Homarus makes and their
errors, as Meta documents them.

Sends are ``POST <apiRoot>/<phone number id>/messages`` with a Bearer access token; a file is
uploaded first (``POST /<phone number id>/media``, multipart) and sent by its media id; a received
file is looked up (``GET /<media id>``: a short-lived URL) and fetched from that URL with the same
token. Errors are ``{"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}``; the
codes that mean "too fast" (``4``, ``80007``, ``130429``, ``131056``) are raised with a wait,
since the Graph API gives no ``Retry-After``.

Written here rather than taken from a library: the Cloud API is five JSON calls, and the Python
SDKs on PyPI (``pywa``, ``heyoo``) bring their own web servers and models for what Homarus's
channel layer already does.
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import httpx

from homarus import __version__
from homarus.channels.transmit import marked, platform_client
from homarus.security.log_redaction import protect, redact_secrets

__all__ = ["DEFAULT_API_ROOT", "RATE_LIMIT_CODES", "GraphApi", "GraphApiError", "GraphNetworkError"]

DEFAULT_API_ROOT: Final = "https://graph.facebook.com/v21.0"
#: application, business-account, throughput and pair rate limits
RATE_LIMIT_CODES: Final = frozenset({4, 80007, 130429, 131056})
#: how long to wait after one (the Graph API names no wait; the pair limit is one message per 6 s)
RATE_LIMIT_WAIT_S: Final = 6.0


class GraphApiError(Exception):
    """The Graph API answered with its ``error`` object (or an HTTP error without one)."""

    def __init__(self, status: int, message: str, *, code: int = 0, retry_after: float | None = None) -> None:
        super().__init__(f"{status}: {message}" + (f" (code {code})" if code else ""))
        self.status = status
        self.message = message
        self.code = code
        self.retry_after = retry_after


class GraphNetworkError(Exception):
    """The Graph API could not be reached (or did not answer in time)."""


class GraphApi:
    def __init__(self, token: str, phone_number_id: str, api_root: str = DEFAULT_API_ROOT, *, timeout_s: float = 30.0):
        protect(token)
        self.token = token
        self.phone_number_id = phone_number_id
        self.api_root = api_root.rstrip("/")
        self._client = platform_client(
            self.api_root,
            base_url=self.api_root + "/",
            headers={"authorization": f"Bearer {token}", "user-agent": f"Homarus/{__version__} (whatsapp)"},
            timeout_s=timeout_s,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _send(self, what: str, request: httpx.Request) -> Any:
        try:
            response = await self._client.send(request)
        except httpx.TimeoutException:
            raise GraphNetworkError(f"{what}: no answer from the Graph API in time") from None
        except httpx.HTTPError as exc:
            raise GraphNetworkError(f"{what}: {redact_secrets(type(exc).__name__ + ': ' + str(exc))}") from None
        return _result(response)

    # -- calls ------------------------------------------------------------------------------------------
    async def me(self) -> dict[str, Any]:
        """Who the token belongs to (a system user: ``id``, ``name``)."""
        return dict(await self._send("me", self._client.build_request("GET", "me")))

    async def phone_number(self) -> dict[str, Any]:
        """The business number the token sends from (``display_phone_number``, ``verified_name``)."""
        return dict(await self._send("phone number", self._client.build_request("GET", self.phone_number_id)))

    async def send_message(
        self, payload: dict[str, Any], *, on_transmitted: Callable[[], Awaitable[None]] | None = None
    ) -> dict[str, Any]:
        body = {"messaging_product": "whatsapp", "recipient_type": "individual", **payload}
        request = self._client.build_request("POST", f"{self.phone_number_id}/messages", json=body)
        if on_transmitted is not None:
            request = marked(self._client, request, on_transmitted)
        return dict(await self._send("send", request))

    async def mark_read(self, message_id: str, *, typing: bool = False) -> None:
        """Mark a received message read (blue ticks), and show "typing…" for up to 25 s with it."""
        body: dict[str, Any] = {"messaging_product": "whatsapp", "status": "read", "message_id": message_id}
        if typing:
            body["typing_indicator"] = {"type": "text"}
        await self._send("read", self._client.build_request("POST", f"{self.phone_number_id}/messages", json=body))

    async def upload_media(self, file: Path, mime_type: str | None = None) -> str:
        """The media id of ``file`` once uploaded (valid 30 days)."""
        data = await asyncio.to_thread(file.read_bytes)
        mime = mime_type or mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        request = self._client.build_request(
            "POST",
            f"{self.phone_number_id}/media",
            data={"messaging_product": "whatsapp", "type": mime},
            files={"file": (file.name, data, mime)},
        )
        answer = await self._send("upload", request)
        media_id = str(answer.get("id") or "") if isinstance(answer, dict) else ""
        if not media_id:
            raise GraphApiError(200, "the upload answered no media id")
        return media_id

    async def media_info(self, media_id: str) -> dict[str, Any]:
        """``url`` (valid five minutes), ``mime_type``, ``sha256``, ``file_size`` of a received file."""
        return dict(await self._send("media", self._client.build_request("GET", media_id)))


def _result(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if 200 <= response.status_code < 300:
        return body if body is not None else {}
    error = body.get("error") if isinstance(body, dict) else None
    info: dict[str, Any] = error if isinstance(error, dict) else {}
    raw_code = info.get("code")
    code = raw_code if isinstance(raw_code, int) else 0
    message = redact_secrets(str(info.get("message") or f"HTTP {response.status_code}"))[:300]
    limited = response.status_code == 429 or code in RATE_LIMIT_CODES
    raise GraphApiError(response.status_code, message, code=code, retry_after=RATE_LIMIT_WAIT_S if limited else None)
