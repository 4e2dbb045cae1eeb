"""uvicorn's sans-I/O WebSocket protocol with a frame-size limit the app can raise after auth.

An unauthenticated client must not be able to make the server buffer a 25 MiB frame, so the
transport starts with a small limit and the gateway lifts it to ``MAX_PAYLOAD_BYTES`` once the
handshake succeeds (through the ``homarus.max_size`` ASGI extension).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MAX_SIZE_EXTENSION", "PREAUTH_TRANSPORT_LIMIT", "protocol_class"]

MAX_SIZE_EXTENSION = "homarus.max_size"
# Above the protocol's 64 KiB pre-auth bound so that frames between the two get the documented
# close reason from the handshake; anything bigger is refused by the transport itself (also 1009).
PREAUTH_TRANSPORT_LIMIT = 256 * 1024


def protocol_class() -> type[Any] | str:
    """The uvicorn `ws` setting to use: our subclass when this uvicorn has the sans-I/O impl."""
    try:
        from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    except ImportError:  # older uvicorn: fall back to the stock implementation, fixed limit
        return "auto"

    class HomarusWSProtocol(WebSocketsSansIOProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.conn.max_message_size = PREAUTH_TRANSPORT_LIMIT

        def handle_connect(self, event: Any) -> None:
            super().handle_connect(event)
            scope = getattr(self, "scope", None)
            if scope is not None:
                setter: Callable[[int], None] = self._set_max_size
                scope["extensions"][MAX_SIZE_EXTENSION] = {"set": setter}

        def _set_max_size(self, size: int) -> None:
            self.conn.max_message_size = size

    return HomarusWSProtocol
