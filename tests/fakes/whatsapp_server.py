"""A fake WhatsApp Business Cloud API on 127.0.0.1 that speaks Meta's real wire formats, both ways.

Graph API (HTTP/1.1 under ``/v21.0``, ``Authorization: Bearer``; errors are ``{"error":
{"message", "type", "code", "fbtrace_id"}}``): ``GET /me``, ``GET /<phone number id>``,
``POST /<phone number id>/messages`` (text, media by id, and read receipts with the typing
indicator; a body over 4,096 characters is code 100, a person outside the 24-hour window code
131047, a throttled send code 130429), ``POST /<phone number id>/media`` (multipart ``file``),
``GET /<media id>`` (a URL to fetch it) and that URL (Bearer only; 401 otherwise).

Webhooks (Meta → the gateway): each notification is ``POST``ed to the callback URL with
``X-Hub-Signature-256`` over its raw body, in order, and delivered again (0.2 s apart here, with
backoff for days at Meta) until the gateway answers 200 — so a gateway that is down or killed
gets every notification once it is back. :meth:`FakeWhatsApp.verify_url` is Meta's handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.parser
import email.policy
import hashlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from homarus.channels.whatsapp.webhook import sign
from tests.fakes.http_wire import json_answer as _json
from tests.fakes.http_wire import serve_requests
from tests.fakes.threaded import in_thread

__all__ = ["ACCESS_TOKEN", "APP_SECRET", "PHONE_NUMBER_ID", "VERIFY_TOKEN", "FakeWhatsApp", "run_fake_whatsapp"]

ACCESS_TOKEN = "EAAGfakeWhatsAppAccessTokenForTests0123456789abcdefZZ"  # a fake
APP_SECRET = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # a fake
VERIFY_TOKEN = "homarus-verify-phrase"  # a fake
PHONE_NUMBER_ID = "106540352242922"
WABA_ID = "102290129340398"
VERSION = "v21.0"


@dataclass
class Sent:
    to: str
    type: str
    text: str
    body: dict[str, Any]
    media: tuple[str, bytes] | None = None
    id: str = ""
    at: float = 0.0


@dataclass
class _Pending:
    body: bytes
    attempts: int = 0


class FakeWhatsApp:
    def __init__(self, token: str = ACCESS_TOKEN, app_secret: str = APP_SECRET) -> None:
        self.token = token
        self.app_secret = app_secret
        self.host = "127.0.0.1"
        self.port = 0
        #: where notifications go (the gateway's callback URL); None: held until set
        self.callback_url: str | None = None
        self.sent: list[Sent] = []
        self.reads: list[tuple[str, bool]] = []
        self.media: dict[str, tuple[str, bytes, str]] = {}
        #: people whose 24-hour window has closed (sends to them are refused)
        self.window_closed: set[str] = set()
        self.webhook_statuses: list[int] = []
        self._queue: list[_Pending] = []
        self._ids = itertools.count(1)
        self._limited = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._lock = threading.Lock()

    # -- test controls --------------------------------------------------------------------------------
    @property
    def api_root(self) -> str:
        return f"http://{self.host}:{self.port}/{VERSION}"

    def notification(self, messages: list[dict[str, Any]], contacts: list[dict[str, Any]]) -> dict[str, Any]:
        value = {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550100000", "phone_number_id": PHONE_NUMBER_ID},
            "contacts": contacts,
            "messages": messages,
        }
        return {
            "object": "whatsapp_business_account",
            "entry": [{"id": WABA_ID, "changes": [{"value": value, "field": "messages"}]}],
        }

    def user_message(self, wa_id: str, text: str = "", *, name: str = "Someone", **extra: Any) -> str:
        """A person's message (text, or ``type``/``image``… given in ``extra``) delivered as a webhook;
        its ``wamid``."""
        message_id = f"wamid.HBgL{next(self._ids):012d}"
        message: dict[str, Any] = {"from": wa_id, "id": message_id, "timestamp": str(int(time.time()))}
        message.update(extra or {"type": "text", "text": {"body": text}})
        self.deliver(self.notification([message], [{"profile": {"name": name}, "wa_id": wa_id}]))
        return message_id

    def deliver(self, body: dict[str, Any] | bytes) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        with self._lock:
            self._queue.append(_Pending(raw))
        self._poke()

    def add_media(self, data: bytes, mime: str) -> str:
        media_id = str(1_000_000_000 + next(self._ids))
        self.media[media_id] = ("received", data, mime)
        return media_id

    def limit_next(self, count: int = 1) -> None:
        self._limited += count

    def texts_to(self, wa_id: str) -> list[str]:
        return [s.text for s in list(self.sent) if s.to == wa_id]

    @property
    def undelivered(self) -> int:
        with self._lock:
            return len(self._queue)

    def _poke(self) -> None:
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    # -- webhooks: Meta → the gateway -----------------------------------------------------------------
    async def deliverer(self) -> None:
        import httpx

        self._wake = asyncio.Event()
        async with httpx.AsyncClient(timeout=5.0) as client:
            while True:
                with self._lock:
                    head = self._queue[0] if self._queue else None
                if head is None or self.callback_url is None:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(0.2):
                            await self._wake.wait()
                    continue
                head.attempts += 1
                headers = {"content-type": "application/json", "x-hub-signature-256": sign(self.app_secret, head.body)}
                try:
                    answer = await client.post(self.callback_url, content=head.body, headers=headers)
                    status = answer.status_code
                except Exception:
                    status = 0
                self.webhook_statuses.append(status)
                if status == 200:
                    with self._lock:
                        self._queue.pop(0)
                else:
                    await asyncio.sleep(0.2)  # Meta backs off; the order stays

    # -- Graph API ------------------------------------------------------------------------------------
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_requests(reader, writer, self._route)

    def _route(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str], str]:
        path = target.split("?", 1)[0]
        if headers.get("authorization") != f"Bearer {self.token}":
            return _error(401, 190, "Invalid OAuth access token - Cannot parse access token", "OAuthException")
        if path.startswith("/media-download/"):
            found = self.media.get(path.rsplit("/", 1)[1])
            return (200, found[1], {}, found[2]) if found else _error(404, 100, "Unsupported get request")
        parts = path.removeprefix(f"/{VERSION}/").strip("/").split("/")
        if method == "GET" and parts == ["me"]:
            return _json({"id": "100000000000001", "name": "Homarus Test System User"})
        if method == "GET" and parts == [PHONE_NUMBER_ID]:
            return _json(
                {
                    "verified_name": "Homarus Test",
                    "display_phone_number": "+1 555-010-0000",
                    "id": PHONE_NUMBER_ID,
                    "quality_rating": "GREEN",
                }
            )
        if method == "GET" and len(parts) == 1 and parts[0] in self.media:
            _, data, mime = self.media[parts[0]]
            return _json(
                {
                    "messaging_product": "whatsapp",
                    "url": f"http://{self.host}:{self.port}/media-download/{parts[0]}",
                    "mime_type": mime,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "file_size": len(data),
                    "id": parts[0],
                }
            )
        if method == "POST" and parts == [PHONE_NUMBER_ID, "media"]:
            return self._upload(headers, body)
        if method == "POST" and parts == [PHONE_NUMBER_ID, "messages"]:
            return self._message(json.loads(body or b"{}"))
        if parts and parts[0] != PHONE_NUMBER_ID and parts[0].isdigit() and len(parts) == 1:
            return _error(400, 100, f"Unsupported get request. Object with ID '{parts[0]}' does not exist")
        return _error(400, 100, "Unknown path components")

    def _upload(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes, dict[str, str], str]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"content-type: " + headers.get("content-type", "").encode() + b"\r\n\r\n" + body
        )
        fields: dict[str, str] = {}
        upload: tuple[str, bytes, str] | None = None
        for part in message.iter_parts():
            name = str(part.get_param("name", header="content-disposition"))
            raw = part.get_payload(decode=True)
            data = raw if isinstance(raw, bytes) else b""
            if name == "file":
                upload = (str(part.get_filename() or "file"), data, part.get_content_type())
            else:
                fields[name] = data.decode()
        if upload is None or fields.get("messaging_product") != "whatsapp":
            return _error(400, 100, "Param file is required")
        media_id = str(2_000_000_000 + next(self._ids))
        self.media[media_id] = upload
        return _json({"id": media_id})

    def _message(self, body: dict[str, Any]) -> tuple[int, bytes, dict[str, str], str]:
        if body.get("messaging_product") != "whatsapp":
            return _error(400, 100, "The parameter messaging_product is required.")
        if body.get("status") == "read":
            self.reads.append((str(body.get("message_id")), "typing_indicator" in body))
            return _json({"success": True})
        if self._limited > 0:
            self._limited -= 1
            return _error(400, 130429, "Rate limit hit", "OAuthException")
        to, kind = str(body.get("to") or ""), str(body.get("type") or "")
        if to in self.window_closed:
            return _error(400, 131047, "Re-engagement message", "OAuthException")
        media = None
        if kind == "text":
            text = str((body.get("text") or {}).get("body") or "")
            if len(text) > 4096:
                return _error(400, 100, "Param text['body'] must be at most 4096 characters long.")
        else:
            item = body.get(kind) or {}
            found = self.media.get(str(item.get("id") or ""))
            if found is None:
                return _error(400, 131053, "Media upload error")
            media = (found[0], found[1])
            text = str(item.get("caption") or "")
        message_id = f"wamid.OUT{next(self._ids):012d}"
        self.sent.append(Sent(to, kind, text, body, media, message_id, time.time()))
        return _json(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to}],
                "messages": [{"id": message_id}],
            }
        )


def _error(
    status: int, code: int, message: str, kind: str = "GraphMethodException"
) -> tuple[int, bytes, dict[str, str], str]:
    error = {"message": message, "type": kind, "code": code, "fbtrace_id": "AbCdEfGhIjK"}
    return _json({"error": error}, status)


@contextlib.contextmanager
def run_fake_whatsapp(token: str = ACCESS_TOKEN, app_secret: str = APP_SECRET) -> Iterator[FakeWhatsApp]:
    fake = FakeWhatsApp(token, app_secret)

    async def main(stop: asyncio.Event, ready: Callable[[], None]) -> None:
        fake._loop = asyncio.get_running_loop()
        api = await asyncio.start_server(fake.handle, fake.host, 0, limit=1 << 24)
        fake.port = api.sockets[0].getsockname()[1]
        deliverer = asyncio.create_task(fake.deliverer())
        ready()
        await stop.wait()
        deliverer.cancel()
        api.close()

    with in_thread("fake-whatsapp", main):
        yield fake
