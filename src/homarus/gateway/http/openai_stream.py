"""One agent run seen from an HTTP request: start it, follow its text, abort it when the client leaves.

The run's ``agent`` events are observed in-process by joining the event bus as a recipient
(role operator, read scope), exactly like a WebSocket client would, but without a socket: the
bus already fans every run out, so no hook into the runtime is needed. Frames are filtered by
run id on the encoded text before any decoding, so unrelated traffic costs a substring test.

The run itself is a gateway task, not part of the request: when the HTTP client disconnects the
response stops, the run is aborted through the runtime (like ``chat.abort``) and still ends
normally — journalled as ``aborted``, its partial turn written to the transcript.

``EventStream`` is the SSE response: it sends while a second task listens for
``http.disconnect``, so a client that leaves while the model is thinking (nothing to send, so
no failed write to notice) is still seen at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from homarus.agents.request import RunRequest
from homarus.agents.runs import RunOutcome
from homarus.security.scopes import READ
from homarus.tasks import cancel_and_wait
from homarus.usecases.runs import run_and_finish, start_run
from homarus.usecases.session_events import emit_session_changed

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["SSE_HEADERS", "EventStream", "LiveRun", "sse_data", "sse_event"]

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
KEEPALIVE_S = 15.0
_ids = itertools.count(1)


def sse_data(payload: Any) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def sse_event(name: str, payload: Any) -> bytes:
    return b"event: " + name.encode() + b"\n" + sse_data(payload)


class _RunWatch:
    """A bus recipient that keeps one run's ``agent`` event payloads (no socket, never slow)."""

    def __init__(self, run_id: str, sink: Callable[[dict[str, Any]], None]) -> None:
        self.conn_id = f"http-run-watch-{next(_ids)}"
        self.role = "operator"
        self.scopes = frozenset({READ})
        self.caps: frozenset[str] = frozenset()
        self._run_id = run_id
        self._needle = orjson.dumps({"runId": run_id})[1:-1].decode()  # '"runId":"<id>"' as the bus encodes it
        self._sink = sink

    def push(self, text: str, *, droppable: bool = False) -> bool:
        if self._needle not in text:
            return True
        frame = orjson.loads(text)
        payload = frame.get("payload")
        if frame.get("event") == "agent" and isinstance(payload, dict) and payload.get("runId") == self._run_id:
            self._sink(payload)
        return True


class LiveRun:
    """A run started for an HTTP caller: its text as it streams, its outcome, abort on disconnect."""

    def __init__(self, gateway: GatewayContext, req: RunRequest, kind: str, params: dict[str, Any]) -> None:
        self.gateway = gateway
        self.req = req
        self.kind = kind
        self.params = params
        self._events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._watch = _RunWatch(req.run_id, self._events.put_nowait)
        self.task: asyncio.Task[RunOutcome] | None = None

    async def start(self) -> None:
        """Journal the run and start it; the watch joins the bus first so no event is missed."""
        gw = self.gateway
        key = self.req.session_key
        # an existing session: nothing to create, no worker thread (as the ``agent`` method)
        ref = gw.sessions.get_if_open(key)
        if ref is None:
            ref = await asyncio.to_thread(gw.sessions.ensure, key)
        gw.bus.add(self._watch)
        try:
            await start_run(gw, self.req, self.kind, self.params, admit=True)
        except BaseException:
            gw.bus.remove(self._watch.conn_id)
            raise
        emit_session_changed(gw, key, "create" if ref.created else "send", runId=self.req.run_id)
        self.task = gw.spawn(run_and_finish(gw, self.req, self.kind))
        self.task.add_done_callback(self._ended)

    def _ended(self, _task: asyncio.Task[RunOutcome]) -> None:
        self.gateway.bus.remove(self._watch.conn_id)
        self._events.put_nowait(None)  # every event of the run was pushed before its task returned

    async def deltas(self) -> AsyncIterator[str]:
        """Text increments of every assistant message, messages separated by a blank line.

        Increments already waiting are joined into one: a client (or socket) that falls behind
        gets fewer, larger chunks instead of a growing backlog of tiny writes.
        """
        emitted = False
        ended = False
        while not ended:
            batch = [await self._events.get()]
            while not self._events.empty():
                batch.append(self._events.get_nowait())
            parts: list[str] = []
            for event in batch:
                if event is None:
                    ended = True
                    break
                data = event.get("data") or {}
                delta = data.get("delta")
                if event.get("stream") != "assistant" or not isinstance(delta, str) or not delta:
                    continue
                if emitted and data.get("text") == delta:  # a new assistant message after a tool turn
                    parts.append("\n\n")
                emitted = True
                parts.append(delta)
            if parts:
                yield "".join(parts)

    async def outcome(self) -> RunOutcome:
        assert self.task is not None, "start() first"
        return await asyncio.shield(self.task)

    def abort(self, origin: str = "http-disconnect") -> None:
        """Abort the run; if it is still queued behind another run, abort it as soon as it starts."""
        if self.task is None or self.task.done():
            return
        _ = self.gateway.spawn(self._abort_when_running(origin))

    async def _abort_when_running(self, origin: str) -> None:
        runtime = self.gateway.runtime
        key, run_id = self.req.session_key.canonical, self.req.run_id
        while self.task is not None and not self.task.done():
            if runtime.abort(key, run_id, origin=origin):
                return
            run = runtime.runs.by_run_id(run_id)
            if run is not None and run.abort.is_set():
                return
            await asyncio.sleep(0.05)

    async def wait_or_disconnect(self, request: Request) -> RunOutcome | None:
        """The outcome, or None (and the run aborted) when the client hangs up first."""
        assert self.task is not None, "start() first"
        listener = asyncio.ensure_future(_disconnected(request.receive))
        try:
            done, _ = await asyncio.wait({self.task, listener}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            listener.cancel()
        if self.task in done:
            return self.task.result()
        self.abort()
        return None


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class EventStream(Response):
    """``text/event-stream`` from an async iterator of ready-made SSE chunks.

    Sends ``: keepalive`` comments while the iterator is idle, and calls ``on_disconnect`` when
    the client goes away before the iterator finished.
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        on_disconnect: Callable[[], None] | None = None,
        keepalive_s: float | None = None,
    ) -> None:
        self.chunks = chunks
        self.on_disconnect = on_disconnect
        self.keepalive_s = keepalive_s if keepalive_s is not None else KEEPALIVE_S
        self.status_code = 200
        self.background = None
        self.init_headers(SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        pump = asyncio.ensure_future(self._pump(send))
        listener = asyncio.ensure_future(_disconnected(receive))
        try:
            done, _ = await asyncio.wait({pump, listener}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            listener.cancel()
        if pump in done:
            with contextlib.suppress(OSError):
                pump.result()
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await cancel_and_wait(pump)  # the client left: stop writing to it
        if self.on_disconnect is not None:
            self.on_disconnect()

    async def _pump(self, send: Send) -> None:
        chunks = aiter(self.chunks)
        pending: asyncio.Future[bytes] | None = None
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(_next(chunks))
                done, _ = await asyncio.wait({pending}, timeout=self.keepalive_s)
                if not done:
                    await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})
                    continue
                try:
                    chunk = pending.result()
                except StopAsyncIteration:
                    return
                pending = None
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        finally:
            if pending is not None and not pending.done():
                pending.cancel()  # runs the iterator's cleanup (its finally blocks) inside that task
                with contextlib.suppress(BaseException):
                    await pending


async def _next(chunks: AsyncIterator[bytes]) -> bytes:
    return await anext(chunks)
