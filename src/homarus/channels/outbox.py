"""Outbound pieces, recorded before they are sent, each under an idempotency key.

A piece's life: ``pending`` → ``sending`` (recorded before the request leaves) → ``transmitted``
(all of the request but its last byte is on the platform's socket, the last one follows this
record) → ``sent`` (the platform answered with its message id). A failure puts it back to
``pending`` with a later ``next_at`` (backoff, or the platform's ``retry_after``), or ends it
``dead`` (visible, replayable); ``cancelled`` is a dead piece an operator dropped.

After a crash (:meth:`Outbox.recover`): a ``sending`` piece never reached the platform whole (it
discards an incomplete request), so it is sent again; a ``transmitted`` one did, and its answer was
lost with the process, so it counts as sent (``unconfirmed``). Without an idempotency key on the
platform's side no order of "send" and "record" is exact: this one leaves only the microseconds
between the record's commit and the write of the last byte ambiguous (see the adapter's client);
that commit does not wait for the disk (a power cut right after it may send the piece again).

One conversation's pieces go out in order: only its oldest unfinished piece is ever due.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from homarus.channels.model import OutboundMessage

if TYPE_CHECKING:
    from homarus.channels.db import ChannelStore

__all__ = ["Outbox", "OutboxRow"]

_COLUMNS: Final = (
    "id, key, conversation, payload, status, attempts, next_at, last_error, platform_id, run_id, session_key"
)


@dataclass(frozen=True, slots=True)
class OutboxRow:
    id: int
    key: str
    conversation: str
    message: OutboundMessage
    status: str
    attempts: int
    next_at: int
    last_error: str | None
    platform_id: str | None
    run_id: str | None
    session_key: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "target": self.message.target.to_json(),
            "status": self.status,
            "attempts": self.attempts,
            "lastError": self.last_error,
            "runId": self.run_id,
            "sessionKey": self.session_key,
            "preview": self.message.text[:200],
        }


def _now_ms() -> int:
    return int(time.time() * 1000)


class Outbox:
    def __init__(self, db: ChannelStore) -> None:
        self.db = db

    def enqueue(
        self, pieces: list[tuple[str, OutboundMessage]], *, run_id: str | None = None, session_key: str | None = None
    ) -> int:
        """Record ``(key, message)`` pieces in one transaction; a known key is skipped. Returns how
        many were new."""
        now = _now_ms()
        created = 0
        with self.db.transaction() as tx:
            for key, message in pieces:
                cur = tx.execute(
                    "INSERT INTO outbox(key, conversation, payload, status, run_id, session_key, created_at,"
                    " updated_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (
                        key,
                        message.target.conversation,
                        json.dumps(message.to_json(), ensure_ascii=False),
                        run_id,
                        session_key,
                        now,
                        now,
                    ),
                )
                created += cur.rowcount
        return created

    def recover(self) -> dict[str, int]:
        """After a restart: unsent ``sending`` pieces go again, ``transmitted`` ones count as sent."""
        now = _now_ms()
        with self.db.transaction() as tx:
            again = tx.execute(
                "UPDATE outbox SET status='pending', updated_at=? WHERE status='sending'", (now,)
            ).rowcount
            assumed = tx.execute(
                "UPDATE outbox SET status='sent', last_error='unconfirmed: the gateway stopped before the platform"
                " answered', updated_at=? WHERE status='transmitted'",
                (now,),
            ).rowcount
        return {"resent": again, "unconfirmed": assumed}

    def due(self, now: int | None = None, limit: int = 100) -> list[OutboxRow]:
        """The oldest unfinished piece of each conversation, when it is pending and due."""
        now = _now_ms() if now is None else now
        return self._rows(
            "JOIN (SELECT conversation AS c, MIN(id) AS head FROM outbox WHERE status IN ('pending','sending')"
            " GROUP BY conversation) h ON outbox.id = h.head WHERE outbox.status='pending' AND outbox.next_at<=?"
            " ORDER BY outbox.id LIMIT ?",
            (now, limit),
        )

    def next_due_at(self) -> int | None:
        rows = self.db.query("SELECT MIN(next_at) FROM outbox WHERE status='pending'")
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    def get(self, row_id: int) -> OutboxRow | None:
        rows = self._rows("WHERE outbox.id=?", (row_id,))
        return rows[0] if rows else None

    def by_run(self, run_id: str) -> list[OutboxRow]:
        return self._rows("WHERE outbox.run_id=? ORDER BY outbox.id", (run_id,))

    def _set(self, row_id: int, sql: str, args: tuple[Any, ...], *, where: str = "", unsynced: bool = False) -> bool:
        statement = f"UPDATE outbox SET {sql}, updated_at=? WHERE id=?{where}"  # noqa: S608 (constants only)
        execute = self.db.execute_unsynced if unsynced else self.db.execute
        return execute(statement, (*args, _now_ms(), row_id)) == 1

    def mark_sending(self, row_id: int) -> bool:
        return self._set(row_id, "status='sending', attempts=attempts+1", (), where=" AND status='pending'")

    def mark_transmitted(self, row_id: int) -> bool:
        # the request's last byte is written right after this: an fsync here (milliseconds under
        # load) would be a window where a crash loses the piece; the record survives a crash of the
        # process once written, and a power cut with the next commit (mark_sent's)
        return self._set(row_id, "status='transmitted'", (), where=" AND status='sending'", unsynced=True)

    def mark_sent(self, row_id: int, platform_id: str | None, note: str | None = None) -> bool:
        return self._set(row_id, "status='sent', platform_id=?, last_error=?", (platform_id, note))

    def retry(self, row_id: int, error: str, at_ms: int, *, count_attempt: bool = False) -> bool:
        """Back to ``pending`` until ``at_ms``; ``count_attempt``: the try never reached
        :meth:`mark_sending` (the account was down) but counts."""
        extra = ", attempts=attempts+1" if count_attempt else ""
        return self._set(row_id, f"status='pending', last_error=?, next_at=?{extra}", (error[:500], at_ms))

    def wait_flood(self, row_id: int, error: str, at_ms: int) -> bool:
        """The platform asked to wait: back to ``pending`` without using up the attempt."""
        return self._set(
            row_id,
            "status='pending', attempts=CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, last_error=?, next_at=?",
            (error[:500], at_ms),
        )

    def dead(self, row_id: int, error: str) -> bool:
        return self._set(row_id, "status='dead', last_error=?", (error[:500],))

    def replay(self, row_id: int) -> bool:
        """A dead piece goes out again, from the start of its retries."""
        return self._set(row_id, "status='pending', attempts=0, next_at=0", (), where=" AND status='dead'")

    def drop(self, row_id: int) -> bool:
        return self._set(row_id, "status='cancelled'", (), where=" AND status='dead'")

    def dead_letters(self, limit: int = 100) -> list[OutboxRow]:
        return self._rows("WHERE outbox.status='dead' ORDER BY outbox.id DESC LIMIT ?", (limit,))

    def counts(self) -> dict[str, int]:
        return {str(s): int(n) for s, n in self.db.query("SELECT status, COUNT(*) FROM outbox GROUP BY status")}

    def prune(self, older_than_ms: int) -> int:
        cutoff = _now_ms() - older_than_ms
        return self.db.execute("DELETE FROM outbox WHERE status IN ('sent','cancelled') AND updated_at < ?", (cutoff,))

    def _rows(self, where: str, args: tuple[Any, ...]) -> list[OutboxRow]:
        cols = ", ".join(f"outbox.{c.strip()}" for c in _COLUMNS.split(","))
        rows = self.db.query(f"SELECT {cols} FROM outbox {where}", args)  # noqa: S608
        return [
            OutboxRow(
                int(r[0]),
                str(r[1]),
                str(r[2]),
                OutboundMessage.from_json(json.loads(r[3])),
                str(r[4]),
                int(r[5]),
                int(r[6]),
                r[7],
                r[8],
                r[9],
                r[10],
            )
            for r in rows
        ]
