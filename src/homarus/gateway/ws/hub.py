"""The connected WebSocket clients: admission, attach/detach (bus, presence), and closing them all."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Protocol

from homarus.gateway.events import Recipient
from homarus.gateway.ws.admission import Admission
from homarus.gateway.ws.pacing import TurnPacer

if TYPE_CHECKING:
    from homarus.gateway.client import ClientInfo
    from homarus.gateway.context import GatewayContext

__all__ = ["Attached", "WSHub"]


class Attached(Recipient, Protocol):
    """A connection as the hub keeps it (``connection.WSConnection``): once its handshake is done."""

    info: ClientInfo | None


class WSHub:
    def __init__(self, gateway: GatewayContext) -> None:
        self.gateway = gateway
        self.admission = Admission(gateway)
        #: how many requests start per loop turn (a burst of requests never stalls the loop)
        self.pacer = TurnPacer()
        self._drained = asyncio.Event()

    def attach(self, conn: Attached) -> None:
        assert conn.info is not None
        gw = self.gateway
        gw.connections[conn.conn_id] = conn
        gw.bus.add(conn)
        if gw.presence.add(conn.conn_id, conn.info):
            self._presence_changed()

    def detach(self, conn: Attached) -> None:
        gw = self.gateway
        gw.connections.pop(conn.conn_id, None)
        gw.bus.remove(conn.conn_id)
        gw.session_subscribers.discard(conn.conn_id)
        if gw.presence.remove(conn.conn_id):
            self._presence_changed()
        if not gw.connections:
            self._drained.set()

    def _presence_changed(self) -> None:
        gw = self.gateway
        if not gw.bus.untargeted:
            # only targeted-events clients: nobody takes the list, and building it is O(connections)
            # on every connect and close (a thousand clients coming and going made that quadratic)
            return
        gw.bus.broadcast(
            "presence",
            {"presence": gw.presence.list()},
            droppable=True,
            state_version=gw.state_version(),
            untargeted_only=True,  # targeted-events clients ask system-presence when they care
        )

    async def close_all(self, code: int, reason: str, *, timeout_s: float = 2.0) -> None:
        """Close every socket and wait (bounded) until they are gone."""
        connections = self.gateway.connections
        for conn in list(connections.values()):
            conn.close(code, reason)
        if connections:
            self._drained.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await self._drained.wait()
