"""What every account reports of itself: its state, its last error, when it last received and sent.

The bundled accounts keep these the same way (``channels.status`` and ``health`` read them through
:meth:`ChannelAccount.health`), so they share this base: an account starts with
:meth:`_init_account` (its context, id, settings, API root, a stopped status), sets ``state`` and
calls :meth:`failed` (logged once, as an error), :meth:`state_changed` (a connection's ups and
downs), :meth:`received` and :meth:`sent`, and ends with :meth:`_stopped`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from homarus.channels.media_files import checked_size
from homarus.tasks import cancel_and_wait

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Mapping
    from pathlib import Path

    from homarus.channels.adapter import AccountContext

__all__ = ["AccountStatus", "now_ms"]


class _Closable(Protocol):
    async def aclose(self) -> None: ...


def now_ms() -> int:
    return int(time.time() * 1000)


class AccountStatus:
    channel_id: str
    account_id: str
    log: logging.Logger

    def _init_account(self, ctx: AccountContext, default_api_root: str) -> None:
        """The account's context, id and settings, its API root (``apiRoot``, else the platform's
        own), and a stopped status."""
        self.ctx = ctx
        self.account_id = ctx.account_id
        self.settings: Mapping[str, Any] = ctx.settings
        self.api_root = str(self.settings.get("api_root") or default_api_root).rstrip("/")
        self.log = ctx.log
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

    def state_changed(self, state: str, error: str | None) -> None:
        """A connection's new state; an error is logged once, as a warning (it reconnects)."""
        if error != self.last_error and error:
            self.log.warning("%s[%s]: %s", self.channel_id, self.account_id, error)
        self.state, self.last_error = state, error

    async def _stopped(self, task: asyncio.Task[None] | None, client: _Closable | None) -> None:
        """Wait until the receiving ``task`` has ended (cancelled), close ``client``, say stopped."""
        await cancel_and_wait(task)
        if client is not None:
            await client.aclose()
        self.state = "stopped"

    async def outgoing_size(self, file: Path, default_mb: float) -> int:
        """The size of a file to send, checked against ``mediaMaxMb`` (else ``default_mb``)."""
        limit = int(float(self.settings.get("media_max_mb") or default_mb) * 1024 * 1024)
        return await checked_size(file, limit)

    def received(self) -> None:
        self.last_inbound_at = now_ms()

    def sent(self) -> None:
        self.last_outbound_at = now_ms()
