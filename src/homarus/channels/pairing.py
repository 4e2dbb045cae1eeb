"""DM pairing: an unknown sender gets a short code; an owner approves it; the sender may talk.

Codes are 8 characters from an alphabet without look-alikes (no ``0 O 1 I``) and expire after an
hour. A sender with a live request keeps it (the bot answers with the code only when a request is
created, so a sender cannot make the bot spam); at most 3 requests wait per channel account, and
further strangers get no answer at all until one is approved, dismissed or expired, so unknown
senders cannot flood the owner. Approval is per channel account and grants DMs only.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from homarus.errors import InvalidRequest, NotFound

if TYPE_CHECKING:
    from homarus.channels.db import ChannelStore

__all__ = ["CODE_ALPHABET", "MAX_PENDING", "TTL_MS", "PairingRequest", "PairingStore"]

CODE_ALPHABET: Final = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH: Final = 8
TTL_MS: Final = 3600 * 1000
MAX_PENDING: Final = 3


@dataclass(frozen=True, slots=True)
class PairingRequest:
    channel: str
    account_id: str
    sender_id: str
    code: str
    created_at: int
    expires_at: int
    meta: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "accountId": self.account_id,
            "senderId": self.sender_id,
            "code": self.code,
            "createdAt": self.created_at,
            "expiresAt": self.expires_at,
            "meta": self.meta,
        }


def _now_ms() -> int:
    return int(time.time() * 1000)


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


class PairingStore:
    def __init__(self, db: ChannelStore) -> None:
        self.db = db

    def is_allowed(self, channel: str, account_id: str, sender_id: str) -> bool:
        rows = self.db.query(
            "SELECT 1 FROM pairing_allow WHERE channel=? AND account=? AND sender=?", (channel, account_id, sender_id)
        )
        return bool(rows)

    def request(
        self, channel: str, account_id: str, sender_id: str, meta: dict[str, Any]
    ) -> tuple[PairingRequest | None, bool]:
        """(the sender's live request, whether it was created now). None: the queue is full."""
        now = _now_ms()
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM pairing_requests WHERE expires_at <= ?", (now,))
            row = tx.execute(
                "SELECT channel, account, sender, code, created_at, expires_at, meta FROM pairing_requests"
                " WHERE channel=? AND account=? AND sender=?",
                (channel, account_id, sender_id),
            ).fetchone()
            if row is not None:
                return _request(row), False
            (pending,) = tx.execute(
                "SELECT COUNT(*) FROM pairing_requests WHERE channel=? AND account=?", (channel, account_id)
            ).fetchone()
            if pending >= MAX_PENDING:
                return None, False
            for _ in range(8):  # a code collision is astronomically rare; retry rather than fail
                code = new_code()
                taken = tx.execute("SELECT 1 FROM pairing_requests WHERE code=?", (code,)).fetchone()
                if taken is None:
                    break
            tx.execute(
                "INSERT INTO pairing_requests(channel, account, sender, code, created_at, expires_at, meta)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (channel, account_id, sender_id, code, now, now + TTL_MS, json.dumps(meta, ensure_ascii=False)),
            )
        return PairingRequest(channel, account_id, sender_id, code, now, now + TTL_MS, meta), True

    def pending(self, channel: str | None = None) -> list[PairingRequest]:
        now = _now_ms()
        sql = (
            "SELECT channel, account, sender, code, created_at, expires_at, meta FROM pairing_requests"
            " WHERE expires_at > ?"
        )
        args: tuple[Any, ...] = (now,)
        if channel is not None:
            sql += " AND channel=?"
            args = (now, channel)
        return [_request(r) for r in self.db.query(sql + " ORDER BY created_at", args)]

    def approve(
        self, channel: str, code: str, *, account_id: str | None = None, by: str | None = None
    ) -> PairingRequest:
        """Approve the live request with ``code``; raises NotFound (unknown, expired or used)."""
        code = code.strip().upper()
        if not code or any(c not in CODE_ALPHABET for c in code):
            raise InvalidRequest("a pairing code is 8 characters of A-Z and 2-9")
        now = _now_ms()
        with self.db.transaction() as tx:
            row = tx.execute(
                "SELECT channel, account, sender, code, created_at, expires_at, meta FROM pairing_requests"
                " WHERE code=? AND channel=? AND expires_at > ?",
                (code, channel, now),
            ).fetchone()
            if row is None or (account_id is not None and row[1] != account_id):
                raise NotFound(f"no pending {channel} pairing request with code {code} (expired or already used?)")
            request = _request(row)
            tx.execute("DELETE FROM pairing_requests WHERE code=?", (code,))
            tx.execute(
                "INSERT INTO pairing_allow(channel, account, sender, approved_at, approved_by, meta)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (channel, account, sender) DO UPDATE SET"
                " approved_at = excluded.approved_at, approved_by = excluded.approved_by, meta = excluded.meta",
                (request.channel, request.account_id, request.sender_id, now, by, json.dumps(request.meta)),
            )
        return request

    def dismiss(self, channel: str, code: str, *, account_id: str | None = None) -> PairingRequest:
        code = code.strip().upper()
        with self.db.transaction() as tx:
            row = tx.execute(
                "SELECT channel, account, sender, code, created_at, expires_at, meta FROM pairing_requests"
                " WHERE code=? AND channel=?",
                (code, channel),
            ).fetchone()
            if row is None or (account_id is not None and row[1] != account_id):
                where = f" on account {account_id}" if account_id is not None else ""
                raise NotFound(f"no pending {channel} pairing request with code {code}{where}")
            tx.execute("DELETE FROM pairing_requests WHERE code=?", (code,))
        return _request(row)

    def approved(self, channel: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT channel, account, sender, approved_at, approved_by FROM pairing_allow"
        args: tuple[Any, ...] = ()
        if channel is not None:
            sql += " WHERE channel=?"
            args = (channel,)
        return [
            {"channel": r[0], "accountId": r[1], "senderId": r[2], "approvedAt": r[3], "approvedBy": r[4]}
            for r in self.db.query(sql + " ORDER BY approved_at", args)
        ]

    def revoke(self, channel: str, account_id: str, sender_id: str) -> bool:
        return (
            self.db.execute(
                "DELETE FROM pairing_allow WHERE channel=? AND account=? AND sender=?", (channel, account_id, sender_id)
            )
            == 1
        )


def _request(row: tuple[Any, ...]) -> PairingRequest:
    return PairingRequest(
        str(row[0]), str(row[1]), str(row[2]), str(row[3]), int(row[4]), int(row[5]), json.loads(row[6])
    )
