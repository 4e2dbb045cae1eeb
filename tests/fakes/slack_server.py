"""A fake Slack on 127.0.0.1 that speaks the real wire formats: Socket Mode and the Web API.

Web API (HTTP/1.1 under ``/api/<method>``, ``Authorization: Bearer``; Slack's answers are HTTP
200 with ``{"ok": false, "error": …}`` for a refused call): ``auth.test``,
``apps.connections.open`` (the app-level token only; a single-use ``ws://`` URL),
``chat.postMessage`` (JSON; ``channel_not_found``, ``no_text``, ``msg_too_long`` over 40,000
characters), ``files.getUploadURLExternal`` (form) with the upload URL it names (multipart ``file``),
``files.completeUploadExternal`` (JSON). A 429 is HTTP 429 with ``Retry-After``. Private file
URLs (``/files/<name>``) need the bot token; without it they answer Slack's sign-in page, HTML
with a 200, as Slack does.

Socket Mode (a WebSocket server at the URL ``apps.connections.open`` gave): ``hello`` on connect;
each event or slash command goes out as an envelope (``envelope_id``, ``type``, ``payload``,
``accepts_response_payload``, ``retry_attempt``, ``retry_reason``); an envelope not acknowledged
(``{"envelope_id": …}``) when its connection ends is sent again on the next one with
``retry_attempt`` one higher, as Slack retries. ``disconnect`` sends Slack's refresh message.

Own loop in a background thread, so a gateway in this process or another reaches it. HTTP events
mode is the other direction (Slack POSTs to the gateway): :func:`signed_headers` signs a body as
Slack does.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.parser
import email.policy
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from homarus.channels.slack.signing import sign
from tests.fakes.http_wire import json_answer as _json
from tests.fakes.http_wire import serve_requests
from tests.fakes.live_socket import LiveSocket
from tests.fakes.threaded import in_thread

__all__ = ["APP_TOKEN", "BOT_TOKEN", "BOT_USER", "TEAM", "FakeSlack", "Posted", "run_fake_slack", "signed_headers"]

BOT_TOKEN = "xoxb-0000000000-0000000000000-fakeslackbottokenfortests"  # a fake
APP_TOKEN = "xapp-1-A0000000001-0000000000000-fakeslackapptokenfortests"  # a fake
BOT_USER = "U0BOT00001"
BOT_ID = "B0BOT00001"
APP_ID = "A0000000001"
TEAM = "T0TEAM0001"
_LOGIN_PAGE = b"<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>"


@dataclass
class Posted:
    channel: str
    text: str
    thread_ts: str | None
    body: dict[str, Any]
    files: list[tuple[str, bytes]] = field(default_factory=list)
    ts: str = ""
    at: float = 0.0


def signed_headers(
    secret: str, body: bytes, *, timestamp: int | None = None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The headers Slack sends with an HTTP event (``X-Slack-Signature`` over ``body``), and ``extra``."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {"x-slack-request-timestamp": ts, "x-slack-signature": sign(secret, ts, body), **(extra or {})}


class FakeSlack(LiveSocket):
    def __init__(self, bot_token: str = BOT_TOKEN, app_token: str = APP_TOKEN) -> None:
        super().__init__()
        self.bot_token = bot_token
        self.app_token = app_token
        self.host = "127.0.0.1"
        self.port = 0
        self.ws_port = 0
        self.channels: set[str] = set()
        self.posted: list[Posted] = []
        self.files: dict[str, bytes] = {}
        self.uploads: dict[str, tuple[str, bytes]] = {}
        self.connections = 0
        self.acks: list[dict[str, Any]] = []
        #: envelope id → (envelope, retry count) not acknowledged yet
        self.unacked: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []
        self._tickets: set[str] = set()
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._limited: list[float] = []
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    # -- test controls --------------------------------------------------------------------------------
    @property
    def api_root(self) -> str:
        return f"http://{self.host}:{self.port}/api"

    def add_channel(self, *channel_ids: str) -> None:
        self.channels.update(channel_ids)

    def new_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    def event(self, event: dict[str, Any]) -> dict[str, Any]:
        """``event`` wrapped in its ``event_callback`` body."""
        return {
            "token": "verification-token-unused",
            "team_id": TEAM,
            "api_app_id": APP_ID,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{next(self._ids):08d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
        }

    def message_event(
        self,
        channel: str,
        user: str,
        text: str,
        *,
        channel_type: str | None = None,
        thread_ts: str | None = None,
        parent_user: str | None = None,
        mention_bot: bool = False,
        files: list[dict[str, Any]] | None = None,
        ts: str | None = None,
    ) -> dict[str, Any]:
        kind = channel_type or {"D": "im", "G": "group"}.get(channel[:1], "channel")
        event: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "user": user,
            "text": (f"<@{BOT_USER}> " if mention_bot else "") + text,
            "ts": ts or self.new_ts(),
            "channel_type": kind,
            "team": TEAM,
            "blocks": [],
        }
        event["event_ts"] = event["ts"]
        if thread_ts:
            event["thread_ts"] = thread_ts
            event["parent_user_id"] = parent_user or user
        if files:
            event["files"] = files
            event["subtype"] = "file_share"
        return event

    def user_message(self, channel: str, user: str, text: str, **kw: Any) -> str:
        """Send a ``message`` event (and, when the bot is mentioned in a channel, the
        ``app_mention`` Slack sends for the same message); its ``ts``."""
        event = self.message_event(channel, user, text, **kw)
        self.send_envelope("events_api", self.event(event))
        if kw.get("mention_bot") and event["channel_type"] != "im":
            mention = {k: v for k, v in event.items() if k not in ("channel_type", "subtype")}
            self.send_envelope("events_api", self.event({**mention, "type": "app_mention"}))
        return str(event["ts"])

    def slash_command(self, channel: str, user: str, command: str, text: str = "") -> str:
        trigger = f"{next(self._ids)}.{int(time.time())}.fake"
        payload = {
            "token": "verification-token-unused",
            "team_id": TEAM,
            "team_domain": "homarus-test",
            "channel_id": channel,
            "channel_name": "directmessage" if channel.startswith("D") else "general",
            "user_id": user,
            "user_name": "someone",
            "command": command,
            "text": text,
            "api_app_id": APP_ID,
            "response_url": f"http://{self.host}:{self.port}/commands/respond",
            "trigger_id": trigger,
        }
        self.send_envelope("slash_commands", payload, accepts_response_payload=True)
        return trigger

    def send_envelope(
        self, kind: str, payload: dict[str, Any], *, accepts_response_payload: bool = False, retry_attempt: int = 0
    ) -> str:
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "payload": payload,
            "type": kind,
            "accepts_response_payload": accepts_response_payload,
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        with self._lock:
            self.unacked[envelope_id] = envelope
        self._call(self._deliver, envelope)
        return envelope_id

    def send_raw(self, frame: str) -> None:
        """A frame exactly as given (malformed ones included)."""
        self._call(self._send_frame, frame)

    def disconnect(self, reason: str = "refresh_requested") -> None:
        frame = {"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-fake"}}
        self._call(self._send_frame, json.dumps(frame))

    def limit_next(self, retry_after: int, *, count: int = 1) -> None:
        with self._lock:
            self._limited.extend([float(retry_after)] * count)

    def posted_to(self, channel: str, thread_ts: str | None = None) -> list[str]:
        return [p.text for p in list(self.posted) if p.channel == channel and p.thread_ts == thread_ts]

    # -- Socket Mode ----------------------------------------------------------------------------------
    def _deliver(self, envelope: dict[str, Any]) -> None:
        if self._current is None:
            self._pending.append(envelope)
            return
        self._send_frame(json.dumps(envelope))

    async def serve_ws(self, ws: Any) -> None:
        ticket = str(ws.request.path).partition("ticket=")[2].split("&", 1)[0]
        with self._lock:
            valid = ticket in self._tickets
            self._tickets.discard(ticket)
        if not valid:
            await ws.close(4001, "invalid ticket")
            return
        self.connections += 1
        hello = {
            "type": "hello",
            "num_connections": 1,
            "debug_info": {"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060},
            "connection_info": {"app_id": APP_ID},
        }
        await ws.send(json.dumps(hello))
        self._current = ws
        with self._lock:  # what the last connection left unacknowledged, as Slack retries it
            retry = [e for e in self.unacked.values() if e not in self._pending]
            for envelope in retry:
                envelope["retry_attempt"] = int(envelope["retry_attempt"]) + 1
                envelope["retry_reason"] = "timeout"
        pending, self._pending = self._pending, []
        for envelope in [*retry, *pending]:
            await ws.send(json.dumps(envelope))
        try:
            async for raw in ws:
                ack = json.loads(raw)
                with self._lock:
                    self.acks.append(ack)
                    self.unacked.pop(str(ack.get("envelope_id")), None)
        except Exception:
            pass
        finally:
            if self._current is ws:
                self._current = None

    # -- Web API --------------------------------------------------------------------------------------
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_requests(reader, writer, self._route)

    def _route(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str], str]:
        path = target.split("?", 1)[0]
        auth = headers.get("authorization", "")
        if method == "GET" and path.startswith("/files/"):
            data = self.files.get(path.rsplit("/", 1)[1])
            if auth != f"Bearer {self.bot_token}":
                return 200, _LOGIN_PAGE, {}, "text/html; charset=utf-8"
            return (200, data, {}, "application/octet-stream") if data is not None else (404, b"", {}, "text/plain")
        if method == "POST" and path.startswith("/upload/"):
            return self._upload(path.rsplit("/", 1)[1], headers, body)
        if method != "POST" or not path.startswith("/api/"):
            return 404, b"not found", {}, "text/plain"
        name = path.removeprefix("/api/")
        self.calls.append(name)
        if name == "apps.connections.open":
            if auth != f"Bearer {self.app_token}":
                return _ok_false("invalid_auth" if auth.startswith("Bearer xapp-") else "not_allowed_token_type")
            ticket = uuid.uuid4().hex
            with self._lock:
                self._tickets.add(ticket)
            return _json({"ok": True, "url": f"ws://{self.host}:{self.ws_port}/link/?ticket={ticket}&app_id={APP_ID}"})
        if auth != f"Bearer {self.bot_token}":
            return _ok_false("invalid_auth" if auth.startswith("Bearer ") else "not_authed")
        with self._lock:
            limited = self._limited.pop(0) if self._limited and name != "auth.test" else None
        if limited is not None:
            return 429, b"", {"retry-after": str(int(limited))}, "text/plain"
        fields = _decode(headers, body)
        if name == "auth.test":
            return _json(
                {
                    "ok": True,
                    "url": "https://homarus-test.slack.com/",
                    "team": "Homarus Test",
                    "user": "homarus",
                    "team_id": TEAM,
                    "user_id": BOT_USER,
                    "bot_id": BOT_ID,
                    "is_enterprise_install": False,
                }
            )
        if name == "chat.postMessage":
            return self._post_message(fields)
        if name == "files.getUploadURLExternal":
            file_id = f"F{next(self._ids):010d}"
            self.uploads[file_id] = (str(fields.get("filename") or ""), b"")
            upload_url = f"http://{self.host}:{self.port}/upload/{file_id}"
            return _json({"ok": True, "upload_url": upload_url, "file_id": file_id})
        if name == "files.completeUploadExternal":
            return self._complete_upload(fields)
        return _ok_false("unknown_method")

    def _post_message(self, data: dict[str, Any]) -> tuple[int, bytes, dict[str, str], str]:
        channel, text = str(data.get("channel") or ""), str(data.get("text") or "")
        if channel not in self.channels:
            return _ok_false("channel_not_found")
        if not text:
            return _ok_false("no_text")
        if len(text) > 40_000:
            return _ok_false("msg_too_long")
        ts = self.new_ts()
        thread = str(data.get("thread_ts") or "") or None
        self.posted.append(Posted(channel, text, thread, data, [], ts, time.time()))
        message = {"type": "message", "text": text, "user": BOT_USER, "bot_id": BOT_ID, "ts": ts}
        return _json({"ok": True, "channel": channel, "ts": ts, "message": message})

    def _upload(self, file_id: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes, dict[str, str], str]:
        if file_id not in self.uploads:
            return 404, b"", {}, "text/plain"
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"content-type: " + headers.get("content-type", "").encode() + b"\r\n\r\n" + body
        )
        data = b""
        for part in message.iter_parts():
            raw = part.get_payload(decode=True)
            data = raw if isinstance(raw, bytes) else b""
        self.uploads[file_id] = (self.uploads[file_id][0], data)
        return 200, f"OK - {len(data)}".encode(), {}, "text/plain"

    def _complete_upload(self, data: dict[str, Any]) -> tuple[int, bytes, dict[str, str], str]:
        channel = str(data.get("channel_id") or "")
        if channel not in self.channels:
            return _ok_false("channel_not_found")
        files = [f for f in data.get("files") or () if isinstance(f, dict) and f.get("id") in self.uploads]
        if not files:
            return _ok_false("invalid_arguments")
        thread = str(data.get("thread_ts") or "") or None
        stored = [self.uploads[str(f["id"])] for f in files]
        text = str(data.get("initial_comment") or "")
        self.posted.append(Posted(channel, text, thread, data, stored, self.new_ts(), time.time()))
        return _json({"ok": True, "files": [{"id": f["id"], "title": f.get("title") or ""} for f in files]})


def _decode(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    if headers.get("content-type", "").startswith("application/json"):
        value = json.loads(body or b"{}")
        return value if isinstance(value, dict) else {}
    return {k: v[0] for k, v in parse_qs(body.decode()).items()}


def _ok_false(error: str) -> tuple[int, bytes, dict[str, str], str]:
    return _json({"ok": False, "error": error})


@contextlib.contextmanager
def run_fake_slack(bot_token: str = BOT_TOKEN, app_token: str = APP_TOKEN) -> Iterator[FakeSlack]:
    from websockets.asyncio.server import serve

    fake = FakeSlack(bot_token, app_token)

    async def main(stop: asyncio.Event, ready: Callable[[], None]) -> None:
        fake._loop = asyncio.get_running_loop()
        api = await asyncio.start_server(fake.handle, fake.host, 0, limit=1 << 24)
        fake.port = api.sockets[0].getsockname()[1]
        async with serve(fake.serve_ws, fake.host, 0, max_size=1 << 22) as ws_server:
            fake.ws_port = next(iter(ws_server.sockets)).getsockname()[1]
            ready()
            await stop.wait()
        api.close()

    with in_thread("fake-slack", main):
        yield fake
