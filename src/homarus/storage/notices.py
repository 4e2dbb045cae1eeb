"""Notices between the gateways of a cluster: PostgreSQL ``LISTEN``/``NOTIFY``.

A member publishes a small JSON notice on a channel (``pg_notify``, delivered to every listener
when the publishing statement commits, in order per publisher) and listens on the channels it
subscribed to with one connection of its own, outside the pool. Its own notices come back to it
and are dropped here. The listening connection is opened again when it breaks (the database
restarted, the network dropped); notices sent while it was away are lost, which is why a notice
only says that something changed and the receiver reads what changed from the shared tables.

PostgreSQL refuses payloads over 8000 bytes: :meth:`Notices.publish` refuses them first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from homarus.storage.database import StorageUnavailable

if TYPE_CHECKING:
    from homarus.storage.database import Database

__all__ = ["MAX_PAYLOAD", "Notices"]

log = logging.getLogger("homarus.storage")

#: PostgreSQL's limit for a notification's payload is 8000 bytes
MAX_PAYLOAD = 7900
_RETRY_S = (0.2, 0.5, 1.0, 2.0, 5.0)


class Notices:
    def __init__(self, db: Database, member_id: str) -> None:
        self.db = db
        self.member_id = member_id
        self._handlers: dict[str, list[Callable[[dict[str, Any]], None]]] = {}
        self._task: asyncio.Task[None] | None = None
        #: the listening connection is up (tests wait for it; ``status`` may show it)
        self.listening = asyncio.Event()

    def subscribe(self, channel: str, handler: Callable[[dict[str, Any]], None]) -> None:
        """Call ``handler`` with each notice another member publishes on ``channel`` (subscribe
        before :meth:`start`)."""
        self._handlers.setdefault(channel, []).append(handler)

    async def publish(self, channel: str, notice: dict[str, Any]) -> bool:
        """Tell the other members; False when the database is away (the notice is lost: receivers
        read the state itself, a notice only hurries them)."""
        payload = orjson.dumps({**notice, "from": self.member_id}).decode()
        if len(payload.encode()) > MAX_PAYLOAD:
            raise ValueError(f"notice on {channel} is {len(payload)} bytes, over {MAX_PAYLOAD}")
        try:
            async with self.db.connection() as conn:
                await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
        except StorageUnavailable:
            return False
        return True

    def start(self) -> None:
        if self._task is None and self._handlers:
            self._task = asyncio.create_task(self._listen(), name="cluster-notices")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _listen(self) -> None:
        import psycopg

        failures = 0
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.db.url, autocommit=True, application_name="homarus")
            except psycopg.Error:
                failures += 1
                await asyncio.sleep(_RETRY_S[min(failures, len(_RETRY_S)) - 1])
                continue
            try:
                for channel in self._handlers:
                    await conn.execute(f'LISTEN "{channel}"')  # channel names are this code's constants
                if failures:
                    log.warning("storage: listening for the other gateways' notices again")
                failures = 0
                self.listening.set()
                async for notice in conn.notifies():
                    self._deliver(notice.channel, notice.payload)
            except psycopg.Error:
                self.listening.clear()
                failures += 1
                if failures == 1:
                    log.warning("storage: the notices connection broke; reconnecting")
                await asyncio.sleep(_RETRY_S[min(failures, len(_RETRY_S)) - 1])
            finally:
                await conn.close()

    def _deliver(self, channel: str, payload: str) -> None:
        try:
            notice = orjson.loads(payload)
        except orjson.JSONDecodeError:
            log.warning("storage: a notice on %s is not JSON; dropped", channel)
            return
        if not isinstance(notice, dict) or notice.get("from") == self.member_id:
            return
        for handler in self._handlers.get(channel, ()):
            try:
                handler(notice)
            except Exception:  # one handler's bug must not stop the others or the listening
                log.exception("storage: handling a notice on %s failed", channel)
