"""``GET /sessions/{key}/history``: a session's transcript over HTTP, as JSON or as a live SSE feed.

Checks in order: bearer auth (401/429) → read scope (403) → key (400) → session exists (404) →
``limit``/``cursor`` (400). Scopes: a caller holding the gateway secret is an operator and, like a
WebSocket client in ``connect``, may narrow what it holds with ``x-homarus-scopes`` (or
``x-openclaw-scopes``), comma-separated; without the header it holds the default operator
scopes. The endpoint needs ``operator.read`` (``write`` and ``admin`` imply it). (The original
gives shared-secret HTTP callers no scopes at all here, which makes the endpoint unusable in the
default token mode; declared scopes keep the check meaningful without that dead end.)

Pages run oldest → newest: ``limit`` messages (default 200, at most 1000) ending before
``cursor`` (an index from a previous page's ``nextCursor``; absent = the newest). Messages the
chat view hides (silent replies) are left out and oversized ones replaced by a marker, as in
``chat.history``.

Live feed (``Accept: text/event-stream`` or ``?stream=1``): ``retry: 1000``, then ``event:
history`` with the page, then ``event: message`` per message appended to the transcript, and a
fresh ``event: history`` when the session is reset, replaced or deleted. Changes are noticed from
the event bus (this session's run ends, tool results, chat finals) and, for writers in other
processes, by a cheap ``stat`` every second; ``: keepalive`` every 15 s keeps proxies from
closing an idle stream.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from homarus.errors import HomarusError
from homarus.gateway.http.common import bearer_auth, json_error
from homarus.gateway.http.openai_stream import EventStream, sse_event
from homarus.gateway.services.chat_history import shown
from homarus.security.scopes import ADMIN, APPROVALS, READ, WRITE, scope_allows
from homarus.sessions.keys import SessionKey
from homarus.sessions.views import visible_messages

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["session_routes"]

DEFAULT_LIMIT = 200
MAX_LIMIT = 1000
ROW_MAX_BYTES = 128 * 1024
OMITTED = "[history omitted: message too large]"
POLL_S = 1.0
DEFAULT_SCOPES = frozenset({ADMIN, READ, WRITE, APPROVALS})
_ids = itertools.count(1)


def session_routes(gateway: GatewayContext) -> list[Route]:
    async def history(request: Request) -> Response:
        return await session_history(gateway, request)

    return [Route("/sessions/{key}/history", history, methods=["GET"])]


def caller_scopes(request: Request) -> frozenset[str]:
    declared = request.headers.get("x-homarus-scopes", request.headers.get("x-openclaw-scopes"))
    if declared is None:  # present but empty declares no scopes at all
        return DEFAULT_SCOPES
    return frozenset(s.strip() for s in declared.split(",") if s.strip())


async def session_history(gateway: GatewayContext, request: Request) -> Response:
    denied = bearer_auth(gateway, request)
    if denied is not None:
        return denied
    if not scope_allows(caller_scopes(request), READ):
        return json_error(403, "forbidden", f"missing scope: {READ}")
    raw_key = request.path_params["key"]
    try:
        key = gateway.sessions.resolve_key(raw_key)
        exists = await asyncio.to_thread(gateway.sessions.get, key) is not None
    except HomarusError as exc:
        return json_error(400, "invalid_request_error", exc.message)
    if not exists:
        return json_error(404, "not_found", f"Session not found: {raw_key}")
    try:
        limit = _int_param(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT) or DEFAULT_LIMIT
        cursor = _int_param(request, "cursor", None, 0, 10**9)
    except ValueError as exc:
        return json_error(400, "invalid_request_error", str(exc))
    accept = request.headers.get("accept", "")
    if "text/event-stream" in accept or request.query_params.get("stream") in ("1", "true"):
        return EventStream(_live(gateway, key, limit))
    page = await asyncio.to_thread(_read, gateway, key)
    return JSONResponse(page.page(limit, cursor), headers={"Cache-Control": "no-store"})


def _int_param(request: Request, name: str, default: int | None, low: int, high: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}")
    return int(raw)


@dataclass
class _Snapshot:
    key: SessionKey
    session_id: str | None
    rows: list[dict[str, Any]]
    extra: dict[str, Any]
    #: (inode, size) of the transcript when read, to notice changes without reading
    stamp: tuple[int, int] | None

    def page(self, limit: int, cursor: int | None) -> dict[str, Any]:
        end = len(self.rows) if cursor is None else min(cursor, len(self.rows))
        start = max(0, end - limit)
        out: dict[str, Any] = {
            "sessionKey": self.key.canonical,
            "sessionId": self.session_id,
            "messages": self.rows[start:end],
            "total": len(self.rows),
            "hasMore": start > 0,
            **self.extra,
        }
        if start > 0:
            out["nextCursor"] = str(start)
        return out


def _read(gateway: GatewayContext, key: SessionKey) -> _Snapshot:
    ref = gateway.sessions.get(key)
    if ref is None:
        return _Snapshot(key, None, [], {"deleted": True}, None)
    transcript = gateway.sessions.transcript_for(ref)
    stamp = transcript.stamp()
    view = transcript.read()
    rows = [r for r in (_row(m) for m in visible_messages(view.entries)) if r is not None]
    extra = {"thinkingLevel": ref.entry.thinking_level, "verboseLevel": ref.entry.verbose_level}
    return _Snapshot(key, ref.entry.session_id, rows, extra, stamp)


def _row(message: dict[str, Any]) -> dict[str, Any] | None:
    return shown(message, ROW_MAX_BYTES, OMITTED)


class _Changes:
    """A bus recipient that flags events about one session (run ends, tool results, chat finals)."""

    def __init__(self, key: str) -> None:
        self.conn_id = f"http-history-{next(_ids)}"
        self.role = "operator"
        self.scopes = frozenset({READ})
        self.caps = frozenset({"tool-events"})
        self._needle = orjson.dumps({"sessionKey": key})[1:-1].decode()
        self.changed = asyncio.Event()

    def push(self, text: str, *, droppable: bool = False) -> bool:
        # assistant deltas and chat deltas do not touch the transcript; everything else may
        if self._needle in text and '"stream":"assistant"' not in text and '"state":"delta"' not in text:
            self.changed.set()
        return True


async def _live(gateway: GatewayContext, key: SessionKey, limit: int) -> AsyncIterator[bytes]:
    watch = _Changes(key.canonical)
    gateway.bus.add(watch)
    try:
        yield b"retry: 1000\n\n"
        snap = await asyncio.to_thread(_read, gateway, key)
        yield sse_event("history", snap.page(limit, None))
        while True:
            try:
                async with asyncio.timeout(POLL_S):
                    await watch.changed.wait()
            except TimeoutError:
                ref = await asyncio.to_thread(gateway.sessions.get, key)
                stamp = gateway.sessions.transcript_for(ref).stamp() if ref is not None else None
                if ref is not None and ref.entry.session_id == snap.session_id and stamp == snap.stamp:
                    continue
            watch.changed.clear()
            fresh = await asyncio.to_thread(_read, gateway, key)
            if fresh.session_id != snap.session_id or len(fresh.rows) < len(snap.rows):
                yield sse_event("history", fresh.page(limit, None))  # reset, replaced or deleted
            else:
                for index in range(len(snap.rows), len(fresh.rows)):
                    payload = {"sessionKey": key.canonical, "index": index, "message": fresh.rows[index]}
                    yield sse_event("message", payload)
            snap = fresh
    finally:
        gateway.bus.remove(watch.conn_id)
