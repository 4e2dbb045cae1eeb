"""A fake Discord on 127.0.0.1 that speaks the real wire formats: the Gateway (v10) and the REST API.

Gateway (a WebSocket server, ``/?v=10&encoding=json``): HELLO (op 10) on connect; IDENTIFY (op 2,
token and intents checked: a wrong token closes with 4004, intents without MESSAGE_CONTENT with
4014) answered by the READY dispatch (``session_id``, ``resume_gateway_url``, ``user``) and one
GUILD_CREATE per guild (its channels and threads); heartbeats (op 1) answered by HEARTBEAT_ACK
(op 11); RESUME (op 6) replays every dispatch after the given ``seq`` and then RESUMED, or answers
INVALID_SESSION (op 9, ``d: false``) for an unknown session. Dispatches (op 0) carry increasing
``s``.

REST (HTTP/1.1 under ``/api/v10``, ``Authorization: Bot <token>``, else 401 ``{"message", "code":
0}``): ``GET /users/@me``, ``GET /gateway/bot``, ``GET /channels/<id>``, ``POST
/channels/<id>/messages`` (JSON, or multipart with ``payload_json`` and ``files[n]``; over 2,000
characters is 400 code 50035, an unknown channel 404 code 10003), ``POST /channels/<id>/typing``
(204), ``PUT /applications/<id>/commands``, ``POST /interactions/<id>/<token>/callback`` (204), and
attachment downloads at ``/attachments/<name>``. Every answer carries the rate-limit
headers (``X-RateLimit-Bucket``, ``-Limit``, ``-Remaining``, ``-Reset-After``); a bucket of 5
requests per channel resets after ``bucket_reset_s``, and a request over it is a 429 with
``retry_after`` (and ``global`` when set so).

Own loop in a background thread, so a gateway in this process or another reaches it. Test
controls: :meth:`FakeDiscord.user_message` dispatches a MESSAGE_CREATE, :meth:`drop` cuts the
connection without a close frame, ``forget_sessions`` makes the next RESUME invalid,
``limit_next`` answers 429s, ``ack_heartbeats`` stops the ACKs.
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http_wire import Answer, json_answer, serve_requests
from tests.fakes.live_socket import LiveSocket
from tests.fakes.threaded import in_thread

__all__ = ["BOT_ID", "FAKE_TOKEN", "FakeDiscord", "Posted", "run_fake_discord"]

BOT_ID = "900000000000000001"
BOT_USERNAME = "homarus-test"
FAKE_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAx.FAKE.fake-discord-token-for-tests"
MESSAGE_CONTENT = 1 << 15


@dataclass
class Posted:
    channel_id: str
    content: str
    body: dict[str, Any]
    files: list[tuple[str, bytes]] = field(default_factory=list)
    id: str = ""
    #: when the request arrived (wall clock)
    at: float = 0.0


class FakeDiscord(LiveSocket):
    def __init__(self, token: str = FAKE_TOKEN) -> None:
        super().__init__()
        self.token = token
        self.host = "127.0.0.1"
        self.rest_port = 0
        self.ws_port = 0
        self.heartbeat_interval_ms = 41250
        self.ack_heartbeats = True
        self.bucket_reset_s = 1.0
        #: requests per channel bucket (Discord's own is 5 per 5 s; benchmarks raise it)
        self.bucket_limit = 5
        self.guilds: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.posted: list[Posted] = []
        self.typing: list[str] = []
        #: application id → its slash commands; (interaction id, callback body) in order
        self.commands: dict[str, list[dict[str, Any]]] = {}
        self.interaction_answers: list[tuple[str, dict[str, Any]]] = []
        self.identifies = 0
        self.resumes = 0
        self.heartbeats = 0
        self.attachments: dict[str, bytes] = {}
        self._ids = itertools.count(1_000_000_000_000_000_001)
        self._seq = 0
        #: session id → every dispatch sent in it (seq, frame), for RESUME replays
        self._sessions: dict[str, list[tuple[int, str]]] = {}
        self._current_session: str | None = None
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._limited: list[tuple[float, bool]] = []
        self._buckets: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    # -- test controls --------------------------------------------------------------------------------
    @property
    def api_root(self) -> str:
        return f"http://{self.host}:{self.rest_port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://{self.host}:{self.ws_port}"

    def add_guild(self, guild_id: str, channels: dict[str, int], *, threads: dict[str, str] | None = None) -> None:
        """A guild with ``channels`` (id → type) and ``threads`` (id → parent channel id)."""
        listed: list[dict[str, Any]] = [
            {"id": cid, "type": kind, "name": f"ch-{cid[-4:]}", "guild_id": guild_id} for cid, kind in channels.items()
        ]
        thread_list: list[dict[str, Any]] = [
            {"id": tid, "type": 11, "parent_id": parent, "name": f"thread-{tid[-4:]}", "guild_id": guild_id}
            for tid, parent in (threads or {}).items()
        ]
        self.guilds[guild_id] = {
            "id": guild_id,
            "name": f"guild {guild_id[-4:]}",
            "channels": listed,
            "threads": thread_list,
        }
        for ch in [*listed, *thread_list]:
            self.channels[ch["id"]] = ch

    def add_dm(self, channel_id: str) -> None:
        self.channels[channel_id] = {"id": channel_id, "type": 1}

    def user_message(
        self,
        channel_id: str,
        author_id: str,
        content: str,
        *,
        guild_id: str | None = None,
        mention_bot: bool = False,
        roles: tuple[str, ...] = (),
        reply_to_bot: bool = False,
        attachments: list[dict[str, Any]] | None = None,
        username: str = "someone",
    ) -> str:
        """Dispatch a MESSAGE_CREATE (queued until a session is ready); its message id."""
        message_id = str(next(self._ids))
        data: dict[str, Any] = {
            "id": message_id,
            "channel_id": channel_id,
            "author": {"id": author_id, "username": username, "global_name": username.title(), "bot": False},
            "content": (f"<@{BOT_ID}> " if mention_bot else "") + content,
            "timestamp": "2026-11-28T12:00:00.000000+00:00",
            "type": 19 if reply_to_bot else 0,
            "mentions": [{"id": BOT_ID, "username": BOT_USERNAME, "bot": True}] if mention_bot else [],
            "attachments": attachments or [],
        }
        if guild_id is not None:
            data["guild_id"] = guild_id
            data["member"] = {"roles": list(roles), "nick": None}
        if reply_to_bot:
            data["referenced_message"] = {"id": "1", "content": "earlier", "author": {"id": BOT_ID, "bot": True}}
        self._call(self._dispatch_now, "MESSAGE_CREATE", data)
        return message_id

    def slash_command(self, channel_id: str, user_id: str, name: str, *, guild_id: str | None = None) -> str:
        """Dispatch an INTERACTION_CREATE for the slash command ``name``; its interaction id."""
        interaction_id = str(next(self._ids))
        user = {"id": user_id, "username": "someone", "global_name": "Someone"}
        data: dict[str, Any] = {
            "id": interaction_id,
            "application_id": BOT_ID,
            "type": 2,
            "token": f"interaction-token-{interaction_id}",
            "channel_id": channel_id,
            "data": {"id": "cmd", "name": name, "type": 1},
        }
        if guild_id is not None:
            data["guild_id"] = guild_id
            data["member"] = {"user": user, "roles": [], "nick": None}
        else:
            data["user"] = user
        self._call(self._dispatch_now, "INTERACTION_CREATE", data)
        return interaction_id

    def forget_sessions(self) -> None:
        with self._lock:
            self._sessions.clear()

    def limit_next(self, retry_after: float, *, is_global: bool = False, count: int = 1) -> None:
        with self._lock:
            self._limited.extend([(retry_after, is_global)] * count)

    def posted_to(self, channel_id: str) -> list[str]:
        return [p.content for p in self.posted if p.channel_id == channel_id]

    # -- gateway --------------------------------------------------------------------------------------
    def _dispatch_now(self, name: str, data: dict[str, Any]) -> None:
        session = self._current_session
        if self._current is None or session is None:
            self._pending.append((name, data))
            return
        self._seq += 1
        frame = json.dumps({"op": 0, "t": name, "s": self._seq, "d": data})
        with self._lock:
            self._sessions.setdefault(session, []).append((self._seq, frame))
        self._send_frame(frame)

    async def serve_ws(self, ws: Any) -> None:
        await ws.send(json.dumps({"op": 10, "d": {"heartbeat_interval": self.heartbeat_interval_ms}}))
        try:
            async for raw in ws:
                payload = json.loads(raw)
                op, data = payload.get("op"), payload.get("d")
                if op == 1:
                    self.heartbeats += 1
                    if self.ack_heartbeats:
                        await ws.send(json.dumps({"op": 11}))
                elif op == 2:
                    await self._identify(ws, data)
                elif op == 6:
                    await self._resume(ws, data)
        except Exception:
            pass
        finally:
            if self._current is ws:
                self._current, self._current_session = None, None

    async def _identify(self, ws: Any, data: dict[str, Any]) -> None:
        if data.get("token") != self.token:
            await ws.close(4004, "Authentication failed.")
            return
        if not int(data.get("intents") or 0) & MESSAGE_CONTENT:
            await ws.close(4014, "Disallowed intent(s).")
            return
        self.identifies += 1
        session = f"session-{self.identifies}"
        with self._lock:
            self._sessions[session] = []
        self._current, self._current_session = ws, session
        ready = {
            "v": 10,
            "user": {"id": BOT_ID, "username": BOT_USERNAME, "bot": True},
            "session_id": session,
            "resume_gateway_url": self.gateway_url,
            "guilds": [{"id": g, "unavailable": True} for g in self.guilds],
        }
        self._dispatch_now("READY", ready)
        for guild in self.guilds.values():
            self._dispatch_now("GUILD_CREATE", guild)
        pending, self._pending = self._pending, []
        for name, item in pending:
            self._dispatch_now(name, item)

    async def _resume(self, ws: Any, data: dict[str, Any]) -> None:
        session, seq = data.get("session_id"), data.get("seq")
        with self._lock:
            log = self._sessions.get(str(session))
        if data.get("token") != self.token or log is None or not isinstance(seq, int):
            await ws.send(json.dumps({"op": 9, "d": False}))
            return
        self.resumes += 1
        for s, frame in list(log):  # what is dispatched meanwhile waits for the replay (pending)
            if s > seq:
                await ws.send(frame)
        self._current, self._current_session = ws, str(session)
        self._dispatch_now("RESUMED", {})
        pending, self._pending = self._pending, []
        for name, item in pending:
            self._dispatch_now(name, item)

    # -- REST -----------------------------------------------------------------------------------------
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_requests(reader, writer, self._route)

    def _route(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str], str]:
        path = target.split("?", 1)[0]
        if path.startswith("/attachments/"):
            data = self.attachments.get(path.rsplit("/", 1)[1])
            return (200, data, {}, "application/octet-stream") if data is not None else (404, b"", {}, "text/plain")
        if headers.get("authorization") != f"Bot {self.token}":
            return _json(401, {"message": "401: Unauthorized", "code": 0})
        route = path.removeprefix("/api/v10")
        if method == "GET" and route == "/users/@me":
            return _json(200, {"id": BOT_ID, "username": BOT_USERNAME, "bot": True})
        if method == "GET" and route == "/gateway/bot":
            return _json(200, {"url": self.gateway_url, "shards": 1, "session_start_limit": {"remaining": 1000}})
        parts = route.strip("/").split("/")
        if method == "PUT" and len(parts) == 3 and parts[0] == "applications" and parts[2] == "commands":
            self.commands[parts[1]] = json.loads(body or b"[]")
            return _json(200, {"commands": self.commands[parts[1]]})
        if method == "POST" and len(parts) == 4 and parts[0] == "interactions" and parts[3] == "callback":
            self.interaction_answers.append((parts[1], json.loads(body or b"{}")))
            return 204, b"", {}, "text/plain"
        if len(parts) >= 2 and parts[0] == "channels":
            channel = self.channels.get(parts[1])
            if channel is None:
                return _json(404, {"message": "Unknown Channel", "code": 10003})
            if method == "GET" and len(parts) == 2:
                return _json(200, channel)
            if method == "POST" and parts[2:] == ["typing"]:
                self.typing.append(parts[1])
                return 204, b"", {}, "text/plain"
            if method == "POST" and parts[2:] == ["messages"]:
                return self._create_message(parts[1], headers, body)
        return _json(404, {"message": "404: Not Found", "code": 0})

    def _create_message(
        self, channel_id: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes, dict[str, str], str]:
        bucket = f"bucket-messages-{channel_id}"
        with self._lock:
            limited = self._limited.pop(0) if self._limited else None
        if limited is not None:
            retry, is_global = limited
            extra = {"retry-after": str(max(1, int(retry))), "x-ratelimit-scope": "global" if is_global else "user"}
            if is_global:
                extra["x-ratelimit-global"] = "true"
            status, payload, _, ctype = _json(
                429, {"message": "You are being rate limited.", "retry_after": retry, "global": is_global}
            )
            return status, payload, extra, ctype
        remaining, reset_at = self._buckets.get(channel_id, (self.bucket_limit, 0.0))
        now = time.monotonic()
        if reset_at <= now:
            remaining, reset_at = self.bucket_limit, now + self.bucket_reset_s
        if remaining <= 0:
            status, payload, _, ctype = _json(
                429, {"message": "You are being rate limited.", "retry_after": reset_at - now, "global": False}
            )
            return status, payload, _limit_headers(bucket, 0, reset_at - now), ctype
        remaining -= 1
        self._buckets[channel_id] = (remaining, reset_at)
        files: list[tuple[str, bytes]] = []
        if headers.get("content-type", "").startswith("multipart/form-data"):
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"content-type: " + headers["content-type"].encode() + b"\r\n\r\n" + body
            )
            payload_json: dict[str, Any] = {}
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                raw = part.get_payload(decode=True)
                data = raw if isinstance(raw, bytes) else b""
                if name == "payload_json":
                    payload_json = json.loads(data)
                else:
                    files.append((str(part.get_filename() or name), data))
            sent = payload_json
        else:
            sent = json.loads(body or b"{}")
        content = str(sent.get("content") or "")
        if len(content) > 2000:
            return _json(400, {"message": "Invalid Form Body", "code": 50035, "errors": {"content": {}}})
        if not content and not files:
            return _json(400, {"message": "Cannot send an empty message", "code": 50006})
        message_id = str(next(self._ids))
        self.posted.append(Posted(channel_id, content, sent, files, message_id, time.time()))
        answer = {"id": message_id, "channel_id": channel_id, "content": content, "author": {"id": BOT_ID, "bot": True}}
        status, payload, _, ctype = _json(200, answer)
        return status, payload, _limit_headers(bucket, remaining, reset_at - now, self.bucket_limit), ctype


def _limit_headers(bucket: str, remaining: int, reset_after: float, limit: int = 5) -> dict[str, str]:
    return {
        "x-ratelimit-bucket": bucket,
        "x-ratelimit-limit": str(limit),
        "x-ratelimit-remaining": str(remaining),
        "x-ratelimit-reset-after": f"{max(0.0, reset_after):.3f}",
    }


def _json(status: int, body: dict[str, Any]) -> Answer:
    return json_answer(body, status)


@contextlib.contextmanager
def run_fake_discord(token: str = FAKE_TOKEN) -> Iterator[FakeDiscord]:
    from websockets.asyncio.server import serve

    fake = FakeDiscord(token)

    async def main(stop: asyncio.Event, ready: Callable[[], None]) -> None:
        fake._loop = asyncio.get_running_loop()
        rest = await asyncio.start_server(fake.handle, fake.host, 0, limit=1 << 24)
        fake.rest_port = rest.sockets[0].getsockname()[1]
        async with serve(fake.serve_ws, fake.host, 0, max_size=1 << 22) as ws_server:
            fake.ws_port = next(iter(ws_server.sockets)).getsockname()[1]
            ready()
            await stop.wait()
        rest.close()

    with in_thread("fake-discord", main):
        yield fake
