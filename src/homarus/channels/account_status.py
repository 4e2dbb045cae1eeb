"""What every account reports of itself: its state, its last error, when it last received and sent.

The bundled accounts keep these the same way (``channels.status`` and ``health`` read them through
:meth:`ChannelAccount.health`), so they share this base: an account sets ``state`` and calls
:meth:`failed` (logged once, as an error), :meth:`received` and :meth:`sent`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

__all__ = ["AccountStatus", "now_ms"]


def now_ms() -> int:
    return int(time.time() * 1000)


class AccountStatus:
    channel_id: str
    account_id: str
    log: logging.Logger

    def _init_status(self, log: logging.Logger) -> None:
        self.log = log
        self.state = "stopped"
        self.last_error: str | None = None
        self.last_inbound_at: int | None = None
        self.last_outbound_at: int | None = None

    def status_fields(self) -> dict[str, Any]:
        """``state`` and what of ``lastError``, ``lastInboundAt``, ``lastOutboundAt`` is set."""
        out: dict[str, Any] = {"state": self.state}
        for key, value in (
            ("lastError", self.last_error),
            ("lastInboundAt", self.last_inbound_at),
            ("lastOutboundAt", self.last_outbound_at),
        ):
            if value is not None:
                out[key] = value
        return out

    def failed(self, message: str) -> None:
        self.state = "error"
        self.last_error = message[:300]
        self.log.error("%s[%s]: %s", self.channel_id, self.account_id, self.last_error)

    def received(self) -> None:
        self.last_inbound_at = now_ms()

    def sent(self) -> None:
        self.last_outbound_at = now_ms()
