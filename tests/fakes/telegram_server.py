"""A fake Telegram Bot API server on 127.0.0.1 that speaks the real wire format.

Routes are the Bot API's: ``POST|GET /bot<token>/<method>`` with a JSON, form or multipart body,
answered ``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code", "description",
"parameters"?}``, and file downloads at ``GET /file/bot<token>/<file_path>``. Implemented:
getMe, getUpdates (offset confirms, long-poll ``timeout``, 409 while a webhook is set),
sendMessage (HTML entities checked: a bad tag is 400 "can't parse entities"; over 4096
characters after parsing is 400 "message is too long"), sendChatAction, sendPhoto / sendDocument /
sendVoice / sendAudio / sendVideo (multipart), getFile, setWebhook, deleteWebhook, getWebhookInfo,
setMyCommands. A wrong token is 401; an unknown method 404.

Own loop in a background thread (like the fake LLM), so sync and async tests, and gateways in
other processes, all reach it. Test controls: :meth:`FakeTelegram.user_message` queues an update,
``flood_after`` answers 429 with ``retry_after``, ``blocked`` chats answer 403, ``fail_next``
queues errors for a method, ``delay_s`` slows a method.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.parser
import email.policy
import html.parser
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, unquote

from tests.fakes.http_wire import read_request
from tests.fakes.threaded import in_thread

__all__ = ["BOT_ID", "FakeTelegram", "SentMessage", "run_fake_telegram"]

BOT_ID = 7_000_000_001
BOT_USERNAME = "homarus_test_bot"
_ALLOWED_TAGS = {
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "code",
    "pre",
    "a",
    "blockquote",
    "tg-spoiler",
    "span",
}


@dataclass
class SentMessage:
    method: str
    chat_id: str
    text: str
    params: dict[str, Any]
    message_id: int
    thread_id: int | None = None
    file_name: str | None = None
    file_bytes: bytes | None = None


@dataclass
class _Call:
    method: str
    params: dict[str, Any]
    files: dict[str, tuple[str, bytes]]
    at: float


class _HtmlCheck(html.parser.HTMLParser):
    """Telegram's HTML rules: known tags only, every tag closed; the text length after parsing."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.error: str | None = None
        self.text_len = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _ALLOWED_TAGS and self.error is None:
            self.error = f'Unsupported start tag "{tag}" at byte offset {self.getpos()[1]}'
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            if self.error is None:
                self.error = f'Unexpected end tag "{tag}" at byte offset {self.getpos()[1]}'
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text_len += len(data)


def check_html(text: str) -> tuple[str | None, int]:
    checker = _HtmlCheck()
    checker.feed(text)
    checker.close()
    if checker.error is None and checker.stack:
        checker.error = f'Can\'t find end tag corresponding to start tag "{checker.stack[-1]}"'
    return checker.error, checker.text_len


class FakeTelegram:
    def __init__(self, token: str) -> None:
        self.token = token
        self.host = "127.0.0.1"
        self.port = 0
        self._lock = threading.Lock()
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self.confirmed_offset = 0
        self.sent: list[SentMessage] = []
        self.calls: list[_Call] = []
        self.actions: list[dict[str, Any]] = []
        self.files: dict[str, tuple[str, bytes]] = {}
        self.webhook: dict[str, Any] | None = None
        self.commands: list[Any] = []
        self.blocked: set[str] = set()
        #: 429 for sends once this many went out within ``flood_window_s`` (None: never)
        self.flood_after: int | None = None
        self.flood_window_s = 1.0
        self.flood_retry_after = 1
        self._recent_sends: deque[float] = deque()
        self._failures: dict[str, deque[tuple[int, str, dict[str, Any] | None]]] = {}
        self.delay_s: dict[str, float] = {}
        self._new_update: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.me: dict[str, Any] = {
            "id": BOT_ID,
            "is_bot": True,
            "first_name": "Homarus Test",
            "username": BOT_USERNAME,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
        }

    @property
    def api_root(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- test controls ------------------------------------------------------------------------------
    def user_message(
        self,
        chat_id: int,
        text: str | None = None,
        *,
        user_id: int | None = None,
        first_name: str = "Ann",
        chat_type: str = "private",
        title: str | None = None,
        thread_id: int | None = None,
        is_forum: bool = False,
        reply_to: dict[str, Any] | None = None,
        entities: list[dict[str, Any]] | None = None,
        photo_file: tuple[str, bytes] | None = None,
        document_file: tuple[str, bytes, str] | None = None,
        voice_file: tuple[str, bytes] | None = None,
        caption: str | None = None,
        forward_from: str | None = None,
        from_bot: bool = False,
        queue: bool = True,
    ) -> dict[str, Any]:
        """Build (and by default queue for getUpdates) an update of a person's message."""
        uid = user_id if user_id is not None else chat_id
        chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat["first_name"] = first_name
        else:
            chat["title"] = title or f"Group {chat_id}"
            if is_forum:
                chat["is_forum"] = True
        msg: dict[str, Any] = {
            "message_id": next(self._message_ids),
            "from": {"id": uid, "is_bot": from_bot, "first_name": first_name, "username": f"user{uid}"},
            "chat": chat,
            "date": int(time.time()),
        }
        if text is not None:
            msg["text"] = text
        if caption is not None:
            msg["caption"] = caption
        if entities:
            msg["entities" if text is not None else "caption_entities"] = entities
        if thread_id is not None:
            msg["message_thread_id"] = thread_id
            msg["is_topic_message"] = True
        if reply_to is not None:
            msg["reply_to_message"] = reply_to
        if forward_from is not None:
            msg["forward_origin"] = {"type": "hidden_user", "date": int(time.time()), "sender_user_name": forward_from}
        if photo_file is not None:
            fid = self.add_file(*photo_file)
            msg["photo"] = [
                {"file_id": fid + "s", "file_unique_id": "s", "width": 90, "height": 90, "file_size": 10},
                {"file_id": fid, "file_unique_id": fid, "width": 800, "height": 600, "file_size": len(photo_file[1])},
            ]
        if document_file is not None:
            name, data, mime = document_file
            fid = self.add_file(name, data)
            msg["document"] = {
                "file_id": fid,
                "file_unique_id": fid,
                "file_name": name,
                "mime_type": mime,
                "file_size": len(data),
            }
        if voice_file is not None:
            fid = self.add_file(*voice_file)
            msg["voice"] = {
                "file_id": fid,
                "file_unique_id": fid,
                "duration": 2,
                "mime_type": "audio/ogg",
                "file_size": len(voice_file[1]),
            }
        update = {"update_id": next(self._update_ids), "message": msg}
        if queue:
            self.queue_update(update)
        return update

    def queue_update(self, update: dict[str, Any]) -> None:
        with self._lock:
            self._updates.append(update)
        if self._loop is not None and self._new_update is not None:
            self._loop.call_soon_threadsafe(self._new_update.set)

    def add_file(self, name: str, data: bytes) -> str:
        fid = f"file{len(self.files) + 1}"
        with self._lock:
            self.files[fid] = (f"documents/{name}", data)
        return fid

    def fail_next(
        self, method: str, code: int, description: str, parameters: dict[str, Any] | None = None, times: int = 1
    ) -> None:
        with self._lock:
            q = self._failures.setdefault(method, deque())
            for _ in range(times):
                q.append((code, description, parameters))

    def texts_to(self, chat_id: int | str) -> list[str]:
        with self._lock:
            return [m.text for m in self.sent if m.chat_id == str(chat_id)]

    @property
    def pending_updates(self) -> int:
        with self._lock:
            return len(self._updates)

    def method_calls(self, method: str) -> list[_Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    # -- HTTP ------------------------------------------------------------------------------------------
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    method, target, headers, body = await read_request(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                status, ctype, payload = await self._route(method, target, headers, body)
                keep = headers.get("connection", "").lower() != "close"
                writer.write(_response(status, ctype, payload, keep))
                await writer.drain()
                if not keep:
                    return
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _route(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        path = unquote(target.split("?")[0])
        if path.startswith("/file/bot"):
            token, _, file_path = path[len("/file/bot") :].partition("/")
            if token != self.token:
                return _error(401, "Unauthorized")
            for stored_path, data in self.files.values():
                if stored_path == file_path:
                    return 200, "application/octet-stream", data
            return _error(404, "Not Found")
        if not path.startswith("/bot"):
            return _error(404, "Not Found")
        token, _, api_method = path[4:].partition("/")
        if token != self.token:
            return _error(401, "Unauthorized")
        params, files = _parse_body(headers, body, target)
        with self._lock:
            self.calls.append(_Call(api_method, params, files, time.time()))
            failures = self._failures.get(api_method)
            failure = failures.popleft() if failures else None
        if api_method in self.delay_s:
            await asyncio.sleep(self.delay_s[api_method])
        if failure is not None:
            code, description, parameters = failure
            return _error(code, description, parameters)
        handler = getattr(self, f"_m_{api_method}", None)
        if handler is None:
            return _error(404, "Not Found")
        result = await handler(params, files)
        if isinstance(result, tuple):
            return result
        return 200, "application/json", json.dumps({"ok": True, "result": result}).encode()

    # -- methods ---------------------------------------------------------------------------------------
    async def _m_getMe(self, params: dict[str, Any], files: Any) -> Any:
        return self.me

    async def _m_getUpdates(self, params: dict[str, Any], files: Any) -> Any:
        if self.webhook is not None:
            return _error(
                409,
                "Conflict: can't use getUpdates method while webhook is active;"
                " use deleteWebhook to delete the webhook first",
            )
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if offset:
                    self.confirmed_offset = max(self.confirmed_offset, offset)
                    self._updates = [u for u in self._updates if u["update_id"] >= offset]
                ready = self._updates[:limit]
            if ready or time.monotonic() >= deadline:
                return ready
            assert self._new_update is not None
            self._new_update.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new_update.wait(), max(0.0, deadline - time.monotonic()))

    def _flooded(self) -> bool:
        if self.flood_after is None:
            return False
        now = time.monotonic()
        while self._recent_sends and now - self._recent_sends[0] > self.flood_window_s:
            self._recent_sends.popleft()
        if len(self._recent_sends) >= self.flood_after:
            return True
        self._recent_sends.append(now)
        return False

    def _send_checks(self, params: dict[str, Any]) -> tuple[int, str, bytes] | None:
        chat = str(params.get("chat_id", ""))
        if not chat:
            return _error(400, "Bad Request: chat_id is empty")
        if chat in self.blocked:
            return _error(403, "Forbidden: bot was blocked by the user")
        if self._flooded():
            r = self.flood_retry_after
            return _error(429, f"Too Many Requests: retry after {r}", {"retry_after": r})
        if str(params.get("message_thread_id") or "") == "1":
            return _error(400, "Bad Request: message thread not found")
        return None

    def _message(
        self,
        method: str,
        params: dict[str, Any],
        text: str,
        extra: dict[str, Any],
        file: tuple[str, bytes] | None = None,
    ) -> dict[str, Any]:
        mid = next(self._message_ids)
        chat = str(params["chat_id"])
        thread = params.get("message_thread_id")
        with self._lock:
            self.sent.append(
                SentMessage(
                    method,
                    chat,
                    text,
                    params,
                    mid,
                    int(thread) if thread else None,
                    file[0] if file else None,
                    file[1] if file else None,
                )
            )
        out = {
            "message_id": mid,
            "from": self.me,
            "chat": {"id": int(chat) if chat.lstrip("-").isdigit() else chat, "type": "private"},
            "date": int(time.time()),
            **extra,
        }
        if text:
            out["text"] = text
        return out

    async def _m_sendMessage(self, params: dict[str, Any], files: Any) -> Any:
        refused = self._send_checks(params)
        if refused:
            return refused
        text = str(params.get("text") or "")
        length = len(text)
        if params.get("parse_mode") == "HTML":
            error, length = check_html(text)
            if error is not None:
                return _error(400, f"Bad Request: can't parse entities: {error}")
        if not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if length > 4096:
            return _error(400, "Bad Request: message is too long")
        return self._message("sendMessage", params, text, {})

    async def _send_file(
        self, method: str, field_name: str, params: dict[str, Any], files: dict[str, tuple[str, bytes]]
    ) -> Any:
        refused = self._send_checks(params)
        if refused:
            return refused
        if field_name not in files:
            return _error(400, f"Bad Request: there is no {field_name} in the request")
        caption = str(params.get("caption") or "")
        if caption and params.get("parse_mode") == "HTML":
            error, _ = check_html(caption)
            if error is not None:
                return _error(400, f"Bad Request: can't parse entities: {error}")
        name, data = files[field_name]
        return self._message(
            method, params, caption, {field_name: {"file_id": "sent", "file_unique_id": "sent"}}, (name, data)
        )

    async def _m_sendPhoto(self, params: dict[str, Any], files: Any) -> Any:
        return await self._send_file("sendPhoto", "photo", params, files)

    async def _m_sendDocument(self, params: dict[str, Any], files: Any) -> Any:
        return await self._send_file("sendDocument", "document", params, files)

    async def _m_sendVoice(self, params: dict[str, Any], files: Any) -> Any:
        return await self._send_file("sendVoice", "voice", params, files)

    async def _m_sendAudio(self, params: dict[str, Any], files: Any) -> Any:
        return await self._send_file("sendAudio", "audio", params, files)

    async def _m_sendVideo(self, params: dict[str, Any], files: Any) -> Any:
        return await self._send_file("sendVideo", "video", params, files)

    async def _m_sendChatAction(self, params: dict[str, Any], files: Any) -> Any:
        with self._lock:
            self.actions.append(dict(params))
        return True

    async def _m_getFile(self, params: dict[str, Any], files: Any) -> Any:
        fid = str(params.get("file_id") or "")
        found = self.files.get(fid)
        if found is None:
            return _error(400, "Bad Request: invalid file_id")
        path, data = found
        return {"file_id": fid, "file_unique_id": fid, "file_size": len(data), "file_path": path}

    async def _m_setWebhook(self, params: dict[str, Any], files: Any) -> Any:
        url = str(params.get("url") or "")
        if not url.startswith("https://"):
            return _error(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
        self.webhook = dict(params)
        return True

    async def _m_deleteWebhook(self, params: dict[str, Any], files: Any) -> Any:
        self.webhook = None
        return True

    async def _m_getWebhookInfo(self, params: dict[str, Any], files: Any) -> Any:
        return {
            "url": (self.webhook or {}).get("url", ""),
            "has_custom_certificate": False,
            "pending_update_count": len(self._updates),
        }

    async def _m_setMyCommands(self, params: dict[str, Any], files: Any) -> Any:
        self.commands = list(params.get("commands") or [])
        return True


def _error(code: int, description: str, parameters: dict[str, Any] | None = None) -> tuple[int, str, bytes]:
    body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
    if parameters:
        body["parameters"] = parameters
    return code, "application/json", json.dumps(body).encode()


def _parse_body(
    headers: dict[str, str], body: bytes, target: str
) -> tuple[dict[str, Any], dict[str, tuple[str, bytes]]]:
    ctype = headers.get("content-type", "")
    params: dict[str, Any] = dict(parse_qsl(target.partition("?")[2]))
    files: dict[str, tuple[str, bytes]] = {}
    if ctype.startswith("application/json") and body:
        params.update(json.loads(body))
    elif ctype.startswith("application/x-www-form-urlencoded"):
        params.update(parse_qsl(body.decode()))
    elif ctype.startswith("multipart/form-data"):
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body
        )
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            filename = part.get_filename()
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
            if filename is not None:
                files[str(name)] = (filename, data)
            else:
                value = data.decode()
                try:
                    params[str(name)] = json.loads(value) if value[:1] in "{[" else value
                except ValueError:
                    params[str(name)] = value
    return params, files


def _response(status: int, ctype: str, body: bytes, keep: bool) -> bytes:
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Status"
    head = [f"HTTP/1.1 {status} {phrase}", f"content-type: {ctype}", f"content-length: {len(body)}"]
    head.append("connection: keep-alive" if keep else "connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


FAKE_TOKEN = "123456789:AAEhBP0av28fakeFAKEfakeFAKEfake0123"


@contextlib.contextmanager
def run_fake_telegram(token: str = FAKE_TOKEN) -> Iterator[FakeTelegram]:
    fake = FakeTelegram(token)

    async def main(stop: asyncio.Event, ready: Callable[[], None]) -> None:
        fake._loop = asyncio.get_running_loop()
        fake._new_update = asyncio.Event()
        server = await asyncio.start_server(fake.handle, fake.host, 0, limit=1 << 24)
        fake.port = server.sockets[0].getsockname()[1]
        ready()
        await stop.wait()
        server.close()

    with in_thread("fake-telegram", main):
        yield fake
