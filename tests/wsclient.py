"""A deliberately independent test client: raw `websockets` + json, no Homarus client code."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

__all__ = ["Client", "close_all", "connect_params", "open_client"]

_ids = itertools.count(1)
ALL_SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"]


def connect_params(token: str | None, scopes: list[str] | None = None, **overrides: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "minProtocol": 3,
        "maxProtocol": 3,
        "client": {"id": "test", "version": "1.0.0", "platform": "linux", "mode": "test"},
        "role": "operator",
        "scopes": ALL_SCOPES if scopes is None else scopes,
    }
    if token is not None:
        params["auth"] = {"token": token}
    params.update(overrides)
    return params


class Client:
    """Request/response over one socket; events are collected in ``events``."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self.responses: dict[str, list[dict[str, Any]]] = {}
        self.hello: dict[str, Any] | None = None

    async def send(self, frame: dict[str, Any] | str) -> None:
        await self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        raw = await asyncio.wait_for(self.ws.recv(), timeout)
        frame: dict[str, Any] = json.loads(raw)
        return frame

    async def recv_res(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next response frame, whatever its id (events are kept in ``events``)."""
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.recv(timeout)
                if frame.get("type") == "res":
                    return frame
                self.events.append(frame)

    async def request(self, method: str, params: Any = None, *, timeout: float = 5.0) -> dict[str, Any]:
        """Send a req and return its res frame (events seen meanwhile go to ``events``)."""
        rid = f"r{next(_ids)}"
        frame: dict[str, Any] = {"type": "req", "id": rid, "method": method}
        if params is not None:
            frame["params"] = params
        await self.send(frame)
        return await self.response(rid, timeout=timeout)

    async def response(self, rid: str, *, timeout: float = 5.0) -> dict[str, Any]:
        if self.responses.get(rid):
            return self.responses[rid].pop(0)
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.recv(timeout)
                if frame.get("type") == "event":
                    self.events.append(frame)
                elif frame.get("type") == "res":
                    if frame.get("id") == rid:
                        return frame
                    self.responses.setdefault(str(frame.get("id")), []).append(frame)

    async def event(self, name: str, *, timeout: float = 5.0) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev.get("event") == name:
                return self.events.pop(i)
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.recv(timeout)
                if frame.get("type") == "event" and frame.get("event") == name:
                    return frame
                if frame.get("type") == "event":
                    self.events.append(frame)
                else:
                    self.responses.setdefault(str(frame.get("id")), []).append(frame)

    async def handshake(self, token: str | None, scopes: list[str] | None = None, **overrides: Any) -> dict[str, Any]:
        challenge = await self.recv()
        assert challenge["event"] == "connect.challenge", challenge
        res = await self.request("connect", connect_params(token, scopes, **overrides))
        if res["ok"]:
            self.hello = res["payload"]
        return res

    async def close_info(self, timeout: float = 5.0) -> tuple[int | None, str]:
        """Wait for the server to close; return (code, reason)."""
        with contextlib.suppress(Exception):  # ConnectionClosed or timeout both end the wait
            async with asyncio.timeout(timeout):
                while True:
                    await self.ws.recv()
        rcvd = self.ws.protocol.close_rcvd
        return (rcvd.code, rcvd.reason) if rcvd else (None, "")


_open: list[Client] = []


async def open_client(url: str, **kwargs: Any) -> Client:
    ws = await connect(url, max_size=None, open_timeout=5, **kwargs)
    client = Client(ws)
    _open.append(client)
    return client


async def close_all() -> None:
    """Close every client a test opened (the suite treats leaked sockets as errors)."""
    while _open:
        client = _open.pop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.ws.close(), 2)
