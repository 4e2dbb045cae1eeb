"""The ``loopback`` WhatsApp engine: registered by this plugin with
``homarus.channels.whatsapp.linked.register_engine``, as a third party's engine would be. Its
device speaks JSON lines with ``tests/fakes/whatsapp_web_server.py`` and, like the neonize
engine, acknowledges a message only after the account's handler (the commit) returned."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from pathlib import Path
from typing import Any

from homarus.channels.adapter import SendFailed
from homarus.channels.whatsapp import linked


class LoopbackDevice:
    def __init__(self, address: str, session_dir: Path, handler: linked.EventHandler) -> None:
        self.host, _, port = address.partition(":")
        self.port = int(port)
        self.session = session_dir / "session.loop"
        self.handler = handler
        self.connected = False
        self.writer: asyncio.StreamWriter | None = None
        self.task: asyncio.Task[None] | None = None
        self.replies: dict[int, asyncio.Future[str]] = {}
        self.requests = itertools.count(1)

    async def connect(self) -> None:
        reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self._write({"op": "hello", "linked": self.session.exists()})
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task = asyncio.create_task(self._read(reader))
        self.handling = asyncio.create_task(self._handle())

    def _write(self, frame: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.write(json.dumps(frame).encode() + b"\n")

    async def _read(self, reader: asyncio.StreamReader) -> None:
        """Answers to sends are taken at once; events are handled in order by ``_handle`` (as
        whatsmeow does: a slow handler never holds up the answer to a send)."""
        async for line in reader:
            ev = json.loads(line)
            if ev.get("ev") == "sent":
                future = self.replies.pop(int(ev["req"]), None)
                if future is not None and not future.done():
                    future.set_result(str(ev["id"]))
            else:
                self.events.put_nowait(ev)
        self.events.put_nowait({"ev": "closed"})

    async def _handle(self) -> None:
        while True:
            ev = await self.events.get()
            kind = ev.get("ev")
            if kind == "qr":
                await self.handler(linked.QrCode(ev["code"]))
            elif kind == "paired":
                self.session.write_text(ev["jid"])
                await self.handler(linked.Paired(ev["jid"]))
            elif kind == "connected":
                self.connected = True
                await self.handler(linked.Connected(ev["jid"]))
            elif kind == "message":
                msg = linked.LinkedMessage(ev["id"], ev["chat"], ev["sender"], text=ev["text"], timestamp_ms=1)
                await self.handler(msg)  # the commit
                self._write({"op": "ack", "id": ev["id"]})
            elif kind == "closed":
                self.connected = False
                await self.handler(linked.Disconnected("the server closed the connection"))
                return

    def alive(self) -> bool:
        return self.connected

    async def close(self) -> None:
        self.connected = False
        for task in (self.task, getattr(self, "handling", None)):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.writer is not None:
            self.writer.close()

    async def logout(self) -> None:
        self.session.unlink(missing_ok=True)

    async def send_text(self, chat: str, text: str) -> str:
        if not self.connected:
            raise ConnectionError("not connected")
        req = next(self.requests)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.replies[req] = future
        self._write({"op": "send", "req": req, "chat": chat, "text": text})
        async with asyncio.timeout(10):
            return await future

    async def send_file(self, chat: str, data: bytes, *, mime: str, kind: str, name: str, caption: str) -> str:
        raise SendFailed("the loopback engine sends text only", permanent=True)

    async def typing(self, chat: str) -> None:
        return None

    async def mark_read(self, chat: str, sender: str, message_id: str) -> None:
        return None

    async def download(self, ref: str, max_bytes: int) -> bytes:
        raise SendFailed("the loopback engine has no media", permanent=True)


def register(api: Any) -> None:
    address = str(api.plugin_config["address"])

    def open_device(session_dir: Path, handler: linked.EventHandler, log: logging.Logger) -> LoopbackDevice:
        return LoopbackDevice(address, session_dir, handler)

    linked.register_engine("loopback", open_device)
