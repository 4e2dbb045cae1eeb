"""Inbound messages, committed before the platform is told they arrived.

An adapter hands over a batch with the cursor that acknowledges it (a long-poll offset): both are
written in one transaction, so after a crash every message the platform considers delivered is
here, and nothing is here twice (a message is unique by channel, account, chat and platform id:
the platform's redeliveries and edits of a known message are ignored on purpose).

A row's life: ``received`` → one of ``dispatched`` (it went into an agent run, ``run_id``),
``observed`` (a group message not addressed to the bot), ``denied``, ``pairing`` (its sender got a
pairing code), ``claimed`` (a plugin handled it), ``command`` (answered by a chat command),
``skipped`` (nothing to do: empty, unsupported). The dispatcher takes ``received`` rows in order.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from homarus.channels.model import InboundMessage

if TYPE_CHECKING:
    from homarus.channels.db import ChannelStore

__all__ = ["FINAL_STATUSES", "Inbox", "InboxRow"]

FINAL_STATUSES: Final = frozenset({"dispatched", "observed", "denied", "pairing", "claimed", "command", "skipped"})


@dataclass(frozen=True, slots=True)
class InboxRow:
    id: int
    message: InboundMessage
    status: str
    run_id: str | None
    received_at: int


def _now_ms() -> int:
    return int(time.time() * 1000)


class Inbox:
    def __init__(self, db: ChannelStore) -> None:
        self.db = db

    def commit(self, messages: list[InboundMessage], *, cursor: tuple[str, str, str, str] | None = None) -> list[int]:
        """Store ``messages`` (known ones are skipped) and, in the same transaction, the cursor
        ``(channel, account, name, value)`` that acknowledges them. Returns the new row ids."""
        now = _now_ms()
        ids: list[int] = []
        with self.db.transaction() as tx:
            for msg in messages:
                row = tx.execute(
                    "INSERT INTO inbound(channel, account, chat, message_id, conversation, sender, payload,"
                    " status, received_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'received', ?, ?)"
                    " ON CONFLICT DO NOTHING RETURNING id",
                    (
                        msg.channel,
                        msg.account_id,
                        msg.chat_id,
                        msg.message_id,
                        msg.target.conversation,
                        msg.sender_id,
                        json.dumps(msg.to_json(), ensure_ascii=False),
                        now,
                        now,
                    ),
                ).fetchone()
                if row is not None:
                    ids.append(int(row[0]))
            if cursor is not None:
                tx.execute(
                    "INSERT INTO cursors(channel, account, name, value) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (channel, account, name) DO UPDATE SET value = excluded.value",
                    cursor,
                )
        return ids

    def cursor(self, channel: str, account: str, name: str) -> str | None:
        rows = self.db.query(
            "SELECT value FROM cursors WHERE channel=? AND account=? AND name=?", (channel, account, name)
        )
        return str(rows[0][0]) if rows else None

    def received(self, limit: int = 500) -> list[InboxRow]:
        """Rows waiting for the dispatcher, oldest first."""
        return self._rows("WHERE status='received' ORDER BY id LIMIT ?", (limit,))

    def received_in(self, conversation: str, limit: int = 100) -> list[InboxRow]:
        """One conversation's waiting rows, oldest first."""
        return self._rows("WHERE conversation=? AND status='received' ORDER BY id LIMIT ?", (conversation, limit))

    def conversations_waiting(self) -> list[str]:
        """Conversations with rows waiting, in the order their oldest row arrived."""
        rows = self.db.query(
            "SELECT conversation, MIN(id) AS first FROM inbound WHERE status='received' GROUP BY conversation"
            " ORDER BY first"
        )
        return [str(r[0]) for r in rows]

    def by_run(self, run_id: str) -> list[InboxRow]:
        return self._rows("WHERE run_id=? ORDER BY id", (run_id,))

    def get(self, row_id: int) -> InboxRow | None:
        rows = self._rows("WHERE id=?", (row_id,))
        return rows[0] if rows else None

    def mark(self, row_ids: list[int], status: str, *, run_id: str | None = None, reason: str | None = None) -> None:
        """Move ``received`` rows to a final status (rows already final are left alone)."""
        if status not in FINAL_STATUSES:
            raise ValueError(f"not a final inbox status: {status}")
        now = _now_ms()
        with self.db.transaction() as tx:
            tx.executemany(
                "UPDATE inbound SET status=?, run_id=COALESCE(?, run_id), reason=?, updated_at=? WHERE id=?"
                " AND status='received'",
                [(status, run_id, reason, now, row_id) for row_id in row_ids],
            )

    def counts(self) -> dict[str, int]:
        return {str(s): int(n) for s, n in self.db.query("SELECT status, COUNT(*) FROM inbound GROUP BY status")}

    def prune(self, older_than_ms: int) -> int:
        """Forget final rows older than the retention (the dedupe window of platform redeliveries)."""
        cutoff = _now_ms() - older_than_ms
        return self.db.execute("DELETE FROM inbound WHERE status != 'received' AND updated_at < ?", (cutoff,))

    def _rows(self, where: str, args: tuple[object, ...]) -> list[InboxRow]:
        rows = self.db.query(f"SELECT id, payload, status, run_id, received_at FROM inbound {where}", args)  # noqa: S608
        return [
            InboxRow(int(r[0]), InboundMessage.from_json(json.loads(r[1])), str(r[2]), r[3], int(r[4])) for r in rows
        ]
