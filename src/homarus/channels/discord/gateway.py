"""A Discord Gateway (v10) session: HELLO, IDENTIFY or RESUME, heartbeats, dispatches, reconnects.

Each dispatch is handed to ``dispatch(name, data, seq)`` and awaited before the next frame is
read, so the adapter commits a message (and the sequence number that covers it) before it goes
on; the sequence number a RESUME sends is the last one handled, so a message whose commit did not
finish is replayed by Discord, and one that was committed is at worst replayed once more and
dropped by the inbox's unique key. The session id, resume URL and sequence number come from the
adapter's committed cursor at start, so a restart (``kill -9`` included) resumes too, within the
window Discord keeps a session.

A missing heartbeat ACK means a zombie connection: it is closed and resumed. ``RECONNECT``
resumes at once; ``INVALID_SESSION`` resumes when Discord says it may, else identifies anew after
1 to 5 s (as Discord asks). Close codes that cannot be fixed by reconnecting (4004 authentication
failed, 4010 to 4014 shard, version or intents refused) stop the session with that reason; 4007 and
4009 (bad sequence, session timed out) identify anew; any other close or network error resumes
with backoff (1 s doubling to 60 s, with jitter).

Written on ``websockets`` (loaded by the gateway's own server already) rather than taken from a
library: see ``api.py`` for discord.py's measured cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["FATAL_CLOSE_CODES", "INTENTS", "Gateway", "GatewayStopped", "ResumeState"]

#: GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT (privileged: enabled in the portal)
INTENTS: Final = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15)
FATAL_CLOSE_CODES: Final = {
    4004: "authentication failed: the bot token was rejected",
    4010: "invalid shard",
    4011: "sharding required (the bot is in too many guilds for one connection)",
    4012: "invalid API version",
    4013: "invalid intents",
    4014: "disallowed intents: enable the Message Content intent in the Developer Portal (Bot page)",
}
_NEW_SESSION_CODES: Final = frozenset({4007, 4009})
MAX_FRAME_BYTES: Final = 16 * 1024 * 1024  # a large guild's GUILD_CREATE
HELLO_TIMEOUT_S: Final = 20.0

Dispatch = Callable[[str, dict[str, Any], int | None], Awaitable[None]]


class GatewayStopped(Exception):
    """The session cannot go on (a fatal close code): ``reason`` says why."""


@dataclass(slots=True)
class ResumeState:
    session_id: str | None = None
    resume_url: str | None = None
    #: the last sequence number handled (a RESUME's)
    seq: int | None = None

    def to_json(self) -> str:
        return json.dumps({"sessionId": self.session_id, "resumeUrl": self.resume_url, "seq": self.seq})

    @classmethod
    def from_json(cls, raw: str | None) -> ResumeState:
        try:
            data = json.loads(raw or "{}")
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()
        seq = data.get("seq")
        return cls(data.get("sessionId") or None, data.get("resumeUrl") or None, seq if isinstance(seq, int) else None)


class _Reconnect(Exception):
    def __init__(self, resume: bool, delay: float = 0.0) -> None:
        super().__init__("reconnect")
        self.resume = resume
        self.delay = delay


class Gateway:
    #: seconds before identifying anew after a non-resumable INVALID_SESSION (Discord asks 1 to 5)
    invalid_session_wait: tuple[float, float] = (1.0, 5.0)
    backoff_max_s: float = 60.0

    def __init__(
        self,
        token: str,
        url: str,
        dispatch: Dispatch,
        *,
        log: logging.Logger,
        state: ResumeState | None = None,
        intents: int = INTENTS,
        on_state: Callable[[str, str | None], None] | None = None,
    ) -> None:
        self._token = token
        self.url = url.rstrip("/")
        self._dispatch = dispatch
        self.log = log
        self.state = state or ResumeState()
        self.intents = intents
        self._on_state = on_state or (lambda _state, _error: None)
        #: the last sequence number received (what a heartbeat carries)
        self.received: int | None = self.state.seq
        self._acked = True
        self._stopping = False
        self.connections = 0
        self.resumes = 0
        self.identifies = 0

    async def run(self) -> None:
        """Connect, and reconnect, until :meth:`stop` or a fatal close (raises :class:`GatewayStopped`)."""
        backoff = 1.0
        while not self._stopping:
            try:
                await self._session()
                backoff = 1.0
            except _Reconnect as again:
                if not again.resume:
                    self.state = ResumeState()
                    self.received = None
                if again.delay:
                    await asyncio.sleep(again.delay)
                backoff = 1.0
            except GatewayStopped:
                raise
            except Exception as exc:  # a lost or refused connection, a timeout, a bad frame: resume
                if self.stopping:
                    return
                self._on_state("degraded", f"gateway connection lost ({type(exc).__name__}: {exc})"[:300])
                await asyncio.sleep(backoff * (0.8 + 0.4 * random.random()))  # noqa: S311 (jitter)
                backoff = min(self.backoff_max_s, backoff * 2)

    def stop(self) -> None:
        self._stopping = True

    @property
    def stopping(self) -> bool:
        return self._stopping

    async def _session(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        resuming = bool(self.state.session_id and self.state.seq is not None)
        base = (self.state.resume_url or self.url) if resuming else self.url
        target = f"{base.rstrip('/')}/?v=10&encoding=json"
        async with connect(
            target, max_size=MAX_FRAME_BYTES, open_timeout=15, close_timeout=5, ping_interval=None
        ) as ws:
            self.connections += 1
            heartbeat: asyncio.Task[None] | None = None
            try:
                async with asyncio.timeout(HELLO_TIMEOUT_S):
                    hello = json.loads(await ws.recv())
                if not isinstance(hello, dict) or hello.get("op") != 10:
                    raise ValueError("the first frame was not HELLO")
                interval = float(hello["d"]["heartbeat_interval"]) / 1000
                self._acked = True
                heartbeat = asyncio.create_task(self._heartbeat(ws, interval))
                if resuming:
                    self.resumes += 1
                    resume = {"token": self._token, "session_id": self.state.session_id, "seq": self.state.seq}
                    await ws.send(json.dumps({"op": 6, "d": resume}))
                else:
                    self.identifies += 1
                    await ws.send(json.dumps({"op": 2, "d": self._identify()}))
                async for raw in ws:
                    await self._frame(ws, raw)
            except ConnectionClosed:
                pass  # its code is the connection's, read below as for a close ending the loop
            finally:
                if heartbeat is not None:
                    heartbeat.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await heartbeat
            self._closed(ws.close_code, ws.close_reason or "")

    def _closed(self, code: int | None, reason: str) -> None:
        if self._stopping:
            return
        if code in FATAL_CLOSE_CODES:
            raise GatewayStopped(f"Discord closed the gateway ({code}): {FATAL_CLOSE_CODES[code]}")
        if code in _NEW_SESSION_CODES:
            raise _Reconnect(resume=False)
        raise _Closed(f"closed with {code} {reason}".strip())

    def _identify(self) -> dict[str, Any]:
        return {
            "token": self._token,
            "intents": self.intents,
            "properties": {"os": "linux", "browser": "homarus", "device": "homarus"},
        }

    async def _frame(self, ws: Any, raw: str | bytes) -> None:
        try:
            payload = json.loads(raw)
        except ValueError:
            self.log.warning("discord: skipped a frame that is not JSON")
            return
        if not isinstance(payload, dict):
            return
        op = payload.get("op")
        if op == 0:
            seq = payload.get("s") if isinstance(payload.get("s"), int) else None
            if seq is not None:
                self.received = seq
            name, data = str(payload.get("t") or ""), payload.get("d")
            data = data if isinstance(data, dict) else {}
            if name == "READY":
                self.state.session_id = str(data.get("session_id") or "") or None
                self.state.resume_url = str(data.get("resume_gateway_url") or "") or None
            try:
                await self._dispatch(name, data, seq)
            except Exception:  # one event that cannot be handled must not end the session
                self.log.exception("discord: the %s event could not be handled", name)
                raise _Closed("an event could not be stored") from None  # resume: Discord replays it
            if seq is not None:
                self.state.seq = seq
        elif op == 1:
            await ws.send(json.dumps({"op": 1, "d": self.received}))
        elif op == 7:
            raise _Reconnect(resume=True)
        elif op == 9:
            if payload.get("d") is True:
                raise _Reconnect(resume=True)
            low, high = self.invalid_session_wait
            raise _Reconnect(resume=False, delay=random.uniform(low, high))  # noqa: S311 (jitter)
        elif op == 11:
            self._acked = True

    async def _heartbeat(self, ws: Any, interval: float) -> None:
        await asyncio.sleep(interval * random.random())  # noqa: S311 (Discord asks for a jittered first beat)
        while True:
            if not self._acked:
                self.log.warning("discord: no heartbeat ACK; reconnecting")
                await ws.close(4000, "zombied connection")
                return
            self._acked = False
            await ws.send(json.dumps({"op": 1, "d": self.received}))
            await asyncio.sleep(interval)


class _Closed(Exception):
    """The connection ended in a way a RESUME can recover from."""
