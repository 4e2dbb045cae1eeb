"""A Slack Socket Mode connection: open a URL, read envelopes, acknowledge each after its commit.

Each connection starts with ``apps.connections.open`` (a single-use ``wss://`` URL for the
app-level token), then Slack sends ``hello``. Every envelope (``events_api``,
``slash_commands``, ``interactive``) is handed to ``handle(envelope)`` and awaited; only when it
returns (the message is committed) is ``{"envelope_id": …}`` sent back, with the payload it
returned when Slack accepts one (a slash command's ephemeral answer). An envelope whose commit
failed is not acknowledged: Slack sends it again (``retry_attempt``), and the inbox's unique key
drops a second copy of one that was committed but whose acknowledgement was lost.

``disconnect`` (``refresh_requested``, ``warning``, too many connections) opens a new connection
at once; ``link_disabled`` (Socket Mode turned off for the app) stops, saying so, as does an app
token Slack refuses. Any other loss reconnects with backoff (1 s doubling to 60 s, jittered).
Dead links are found by WebSocket pings (``PING_INTERVAL_S``): Slack answers pings, and a
connection that stops answering is closed and replaced — never a linked but deaf session.

Written on ``websockets`` rather than taken from slack_sdk: see ``api.py`` for the measured cost.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, Final

__all__ = ["PING_INTERVAL_S", "SocketMode", "SocketStopped"]

PING_INTERVAL_S: Final = 20.0
HELLO_TIMEOUT_S: Final = 20.0
MAX_FRAME_BYTES: Final = 4 * 1024 * 1024

#: an envelope → the payload of its acknowledgement (None: a bare one); raises if not committed
Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]


class SocketStopped(Exception):
    """Socket Mode cannot go on (the app token refused, Socket Mode turned off): says why."""


class _Refresh(Exception):
    """Slack asked for a new connection."""


class SocketMode:
    backoff_max_s: float = 60.0

    def __init__(
        self,
        open_url: Callable[[], Awaitable[str]],
        handle: Handler,
        *,
        log: logging.Logger,
        on_state: Callable[[str, str | None], None] | None = None,
        ping_interval_s: float = PING_INTERVAL_S,
    ) -> None:
        self._open_url = open_url
        self._handle = handle
        self.log = log
        self._on_state = on_state or (lambda _state, _error: None)
        self.ping_interval_s = ping_interval_s
        self._stopping = False
        self.connections = 0
        self.refreshes = 0
        self.envelopes = 0
        self.unacknowledged = 0

    def stop(self) -> None:
        self._stopping = True

    @property
    def stopping(self) -> bool:
        return self._stopping

    async def run(self) -> None:
        """Connect, and reconnect, until :meth:`stop` or a refusal (raises :class:`SocketStopped`)."""
        backoff = 1.0
        while not self._stopping:
            try:
                await self._session()
                backoff = 1.0
            except _Refresh:
                self.refreshes += 1
                backoff = 1.0
            except SocketStopped:
                raise
            except Exception as exc:  # lost, refused or timed out: a new connection after a pause
                if self.stopping:
                    return
                self._on_state("degraded", f"socket mode connection lost ({type(exc).__name__}: {exc})"[:300])
                await asyncio.sleep(backoff * (0.8 + 0.4 * random.random()))  # noqa: S311 (jitter)
                backoff = min(self.backoff_max_s, backoff * 2)

    async def _session(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        url = await self._open_url()
        async with connect(
            url,
            max_size=MAX_FRAME_BYTES,
            open_timeout=15,
            close_timeout=5,
            ping_interval=self.ping_interval_s,
            ping_timeout=self.ping_interval_s,
        ) as ws:
            self.connections += 1
            try:
                async with asyncio.timeout(HELLO_TIMEOUT_S):
                    hello = json.loads(await ws.recv())
                if not isinstance(hello, dict) or hello.get("type") != "hello":
                    raise ValueError("the first frame was not hello")
                self._on_state("running", None)
                async for raw in ws:
                    await self._frame(ws, raw)
            except ConnectionClosed:
                pass
        if not self._stopping:
            raise ConnectionError(f"closed with {ws.close_code} {ws.close_reason or ''}".strip())

    async def _frame(self, ws: Any, raw: str | bytes) -> None:
        try:
            frame = json.loads(raw)
        except ValueError:
            self.log.warning("slack: skipped a frame that is not JSON")
            return
        if not isinstance(frame, dict):
            return
        kind = frame.get("type")
        if kind == "disconnect":
            reason = str(frame.get("reason") or "")
            if reason == "link_disabled":
                raise SocketStopped("Slack turned Socket Mode off for this app (link_disabled)")
            await ws.close()
            raise _Refresh(reason)
        envelope_id = frame.get("envelope_id")
        if not isinstance(envelope_id, str) or not envelope_id:
            return  # hello again, or a frame this client has no use for
        self.envelopes += 1
        try:
            answer = await self._handle(frame)
        except Exception:  # not committed: no ack, Slack sends it again
            self.unacknowledged += 1
            self.log.exception("slack: an envelope (%s) could not be stored; Slack will send it again", kind)
            return
        ack: dict[str, Any] = {"envelope_id": envelope_id}
        if answer is not None and frame.get("accepts_response_payload"):
            ack["payload"] = answer
        await ws.send(json.dumps(ack))
