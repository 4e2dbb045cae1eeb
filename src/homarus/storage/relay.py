"""Events between the gateways of a cluster: a client connected to one gateway sees the ``agent``
and ``chat`` events of a run executing on another.

The sending side queues each event as it happens (never waiting on the database: the event loop
goes on) and one task sends the queue in order, several events per transaction, each as a
notification on :data:`CHANNEL` (``storage/notices.py``); an event too big for a notification's
payload is written to ``event_spill`` in the same transaction and its notification carries the
row's id. The receiving side hands the events to the gateway in the order they came, fetching the
spilled ones in turn, so each run's events keep their order (their ``seq``) for every client.

Bounded: at most :data:`MAX_QUEUED` events wait to be sent; past it the droppable ones (streamed
text, of which a later event repeats the whole) are dropped first, then the oldest. Events sent
while the database is away are dropped after the attempt: the runs and transcripts, which are
what a client reads when it reconnects, are stored; events only make it live.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from homarus.storage.database import StorageUnavailable
from homarus.storage.notices import MAX_PAYLOAD

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    from homarus.storage.database import Database
    from homarus.storage.notices import Notices

__all__ = ["CHANNEL", "MAX_QUEUED", "EventRelay"]

log = logging.getLogger("homarus.storage")

CHANNEL = "homarus_events"
#: events waiting to be sent, at most
MAX_QUEUED = 10_000
#: events sent in one transaction, at most
_BATCH = 64
#: spilled events are kept this long (a receiver fetches them within moments)
_SPILL_KEEP_S = 300


class EventRelay:
    def __init__(self, db: Database, notices: Notices) -> None:
        self.db = db
        self.notices = notices
        self._out: deque[tuple[dict[str, Any], bool]] = deque()
        self._wake = asyncio.Event()
        self._in: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=MAX_QUEUED)
        self._deliver: Callable[[dict[str, Any]], None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.dropped = 0
        self._sent_spills = 0

    @property
    def queued(self) -> int:
        """Events waiting to be sent (the relay's lag, in events)."""
        return len(self._out)

    def receive(self, deliver: Callable[[dict[str, Any]], None]) -> None:
        """Hand every event another gateway relays to ``deliver``, in order (before :meth:`start`)."""
        self._deliver = deliver
        self.notices.subscribe(CHANNEL, self._heard)

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._sending(), name="cluster-relay-out"),
            asyncio.create_task(self._receiving(), name="cluster-relay-in"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    # -- sending ---------------------------------------------------------------------------------
    def send(self, event: dict[str, Any], *, droppable: bool = False) -> None:
        """Queue ``event`` for the other gateways (returns at once)."""
        if len(self._out) >= MAX_QUEUED:
            self._make_room()
        self._out.append((event, droppable))
        self._wake.set()

    def _make_room(self) -> None:
        for index, (_event, droppable) in enumerate(self._out):
            if droppable:
                del self._out[index]
                break
        else:
            self._out.popleft()
        self.dropped += 1

    async def _sending(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._out:
                batch = [self._out.popleft() for _ in range(min(_BATCH, len(self._out)))]
                try:
                    await self._send(batch)
                except StorageUnavailable:
                    self.dropped += len(batch)
                except Exception:  # a bug must not end the relay
                    log.exception("storage: relaying events failed")
                    self.dropped += len(batch)

    async def _send(self, batch: list[tuple[dict[str, Any], bool]]) -> None:
        """One transaction, one round trip for the events that fit a notification (and one more
        for each that does not): their notifications go out in order when it commits."""
        me = self.notices.member_id
        payloads: list[str] = []
        async with self.db.connection() as conn, conn.transaction():
            for event, _droppable in batch:
                payload = orjson.dumps({"e": event, "from": me}).decode()
                if len(payload.encode()) > MAX_PAYLOAD:
                    payload = orjson.dumps({"spill": await self._spill(conn, payload), "from": me}).decode()
                payloads.append(payload)
            calls = ", ".join("pg_notify(%s, %s)" for _ in payloads)
            await conn.execute(f"SELECT {calls}", [x for p in payloads for x in (CHANNEL, p)])

    async def _spill(self, conn: AsyncConnection[Any], payload: str) -> int:
        """Keep ``payload`` in the spill table (pruning it now and then); its row's id."""
        cur = await conn.execute("INSERT INTO event_spill (body) VALUES (%s) RETURNING id", (payload,))
        row = await cur.fetchone()
        assert row is not None
        self._sent_spills += 1
        if self._sent_spills % 100 == 1:
            await conn.execute(
                "DELETE FROM event_spill WHERE created_at < now() - make_interval(secs => %s)", (_SPILL_KEEP_S,)
            )
        return int(row[0])

    # -- receiving -------------------------------------------------------------------------------
    def _heard(self, notice: dict[str, Any]) -> None:
        try:
            self._in.put_nowait(notice)
        except asyncio.QueueFull:
            self.dropped += 1

    async def _receiving(self) -> None:
        while True:
            notice = await self._in.get()
            event = notice.get("e")
            if event is None and isinstance(notice.get("spill"), int):
                event = await self._fetch(notice["spill"])
            if isinstance(event, dict) and self._deliver is not None:
                try:
                    self._deliver(event)
                except Exception:  # one bad event must not stop the others
                    log.exception("storage: delivering a relayed event failed")

    async def _fetch(self, spill_id: int) -> dict[str, Any] | None:
        try:
            async with self.db.connection() as conn:
                row = await (await conn.execute("SELECT body FROM event_spill WHERE id = %s", (spill_id,))).fetchone()
        except StorageUnavailable:
            return None
        if row is None:
            return None
        body = orjson.loads(row[0])
        event = body.get("e") if isinstance(body, dict) else None
        return event if isinstance(event, dict) else None
