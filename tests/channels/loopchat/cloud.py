"""The Loopchat platform: a chat service on loopback (stdlib HTTP server on ``127.0.0.1:0``) that
the ``loopchat`` channel plugin talks to, as a real platform's cloud would be talked to.

Its wire format, JSON over HTTP with ``Authorization: Bearer <token>`` on every call:

* ``GET /v1/me`` → ``{"name": "@loopbot"}`` (401 ``{"error": "bad token"}``)
* ``GET /v1/updates?after=<id>&wait=<s>`` → ``{"updates": [{"id", "chat", "from", "name", "text"}]}``,
  held open up to ``wait`` seconds while there is nothing after ``id``
* ``POST /v1/messages`` ``{"chat", "text", "replyTo"?}`` → ``{"id": "<message id>"}``
* ``POST /v1/typing`` ``{"chat"}`` → ``{}``
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["Loopchat", "run_loopchat"]

BOT_NAME = "@loopbot"
MAX_WAIT_S = 5.0


@dataclass
class Loopchat:
    token: str = "lc-secret-token-1"
    api_root: str = ""
    updates: list[dict[str, Any]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    typing: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)

    def user_says(self, sender: str, text: str, name: str = "") -> None:
        with self.cond:
            self.updates.append(
                {"id": len(self.updates) + 1, "chat": sender, "from": sender, "name": name, "text": text}
            )
            self.cond.notify_all()

    def texts_to(self, chat: str) -> list[str]:
        with self.cond:
            return [m["text"] for m in self.sent if m["chat"] == chat]

    def _after(self, after: int, wait_s: float) -> list[dict[str, Any]]:
        with self.cond:
            self.cond.wait_for(lambda: any(u["id"] > after for u in self.updates), timeout=min(wait_s, MAX_WAIT_S))
            return [u for u in self.updates if u["id"] > after]

    def _send(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.cond:
            message = {"id": f"s{len(self.sent) + 1}", "chat": str(body["chat"]), "text": str(body["text"])}
            self.sent.append(message)
            return {"id": message["id"]}


def _handler(cloud: Loopchat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            return

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            if self.headers.get("authorization") == f"Bearer {cloud.token}":
                return True
            self._answer(401, {"error": "bad token"})
            return False

        def do_GET(self) -> None:
            if not self._authorized():
                return
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            if url.path == "/v1/me":
                self._answer(200, {"name": BOT_NAME})
            elif url.path == "/v1/updates":
                after = int(query.get("after", ["0"])[0])
                self._answer(200, {"updates": cloud._after(after, float(query.get("wait", ["0"])[0]))})
            else:
                self._answer(404, {"error": "no such call"})

        def do_POST(self) -> None:
            if not self._authorized():
                return
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
            if self.path == "/v1/messages" and isinstance(body.get("chat"), str) and isinstance(body.get("text"), str):
                self._answer(200, cloud._send(body))
            elif self.path == "/v1/typing":
                cloud.typing += 1
                self._answer(200, {})
            else:
                self._answer(400, {"error": "bad request"})

    return Handler


@contextmanager
def run_loopchat() -> Iterator[Loopchat]:
    cloud = Loopchat()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(cloud))
    server.daemon_threads = True
    server.block_on_close = False  # a long poll in flight must not hold up the shutdown
    cloud.api_root = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="loopchat", daemon=True)
    thread.start()
    try:
        yield cloud
    finally:
        with cloud.cond:
            cloud.cond.notify_all()
        server.shutdown()
        server.server_close()
