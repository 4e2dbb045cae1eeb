"""WhatsApp's servers for a linked device in another process (a gateway killed with SIGKILL): a
loopback TCP server speaking JSON lines with the engine of the plugin in
``tests/channels/whatsapp/web_engine/``.

It keeps what WhatsApp keeps for the tests' purposes: each message a person sends is held until
the device acknowledges it (which the engine does only after the account's handler, the inbox
commit, returned), and every message not yet acknowledged is delivered again, in order, on each
new connection of the device. What the device sends is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.threaded import in_thread

__all__ = ["FakeWhatsAppWebServer", "run_fake_whatsapp_web"]

OWN_JID = "15550009999@s.whatsapp.net"


@dataclass
class FakeWhatsAppWebServer:
    port: int = 0
    #: (chat, text) of each message the device sent, and when it arrived (wall clock)
    sent: list[tuple[str, str]] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)
    #: messages held until acknowledged, in the order people sent them
    held: list[dict[str, Any]] = field(default_factory=list)
    connections: int = 0
    loop: asyncio.AbstractEventLoop | None = None
    writer: asyncio.StreamWriter | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    serial: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def message(self, sender: str, text: str) -> None:
        """A person (digits) writes to the linked number."""
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self._message, sender, text)

    def _message(self, sender: str, text: str) -> None:
        self.serial += 1
        jid = f"{sender}@s.whatsapp.net"
        msg = {"ev": "message", "id": f"3A{self.serial:010d}", "chat": jid, "sender": jid, "text": text}
        self.held.append(msg)
        if self.writer is not None:
            self._write(self.writer, msg)

    @staticmethod
    def _write(writer: asyncio.StreamWriter, frame: dict[str, Any]) -> None:
        writer.write(json.dumps(frame).encode() + b"\n")

    async def _serve_device(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            hello = json.loads(await reader.readline() or b"{}")
            if not hello.get("linked"):
                self._write(writer, {"ev": "qr", "code": "2@loopback-code"})
                self._write(writer, {"ev": "paired", "jid": OWN_JID.replace("@", ":7@")})
            self._write(writer, {"ev": "connected", "jid": OWN_JID})
            self.writer = writer
            for msg in list(self.held):  # everything not acknowledged, again, in order
                self._write(writer, msg)
            async for line in reader:
                op = json.loads(line)
                if op.get("op") == "ack":
                    self.held = [m for m in self.held if m["id"] != op.get("id")]
                elif op.get("op") == "send":
                    with self.lock:
                        self.sent_at.append(time.time())
                        self.sent.append((str(op["chat"]), str(op["text"])))
                    self._write(writer, {"ev": "sent", "req": op["req"], "id": f"3EB0{len(self.sent):08d}"})
        except (ConnectionError, ValueError):
            pass
        finally:
            if self.writer is writer:
                self.writer = None
            with contextlib.suppress(ConnectionError):
                writer.close()


@contextlib.contextmanager
def run_fake_whatsapp_web() -> Iterator[FakeWhatsAppWebServer]:
    fake = FakeWhatsAppWebServer()

    async def serve(stop: asyncio.Event, ready: Any) -> None:
        fake.loop = asyncio.get_running_loop()
        server = await asyncio.start_server(fake._serve_device, "127.0.0.1", 0)
        fake.port = server.sockets[0].getsockname()[1]
        ready()
        async with server:
            await stop.wait()

    with in_thread("fake-whatsapp-web", serve):
        yield fake
