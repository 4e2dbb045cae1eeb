"""Paired devices, pending pairing requests and device tokens (``$STATE/devices.sqlite``, or the
same tables in a cluster's PostgreSQL, shared by its gateways: ``storage/statements.py``).

A device is an ed25519 key whose proof ``connect`` already verifies (:mod:`homarus.security.device`).
Pairing binds it to a role and the scopes an operator approved; the gateway then issues a device
token per (device, role), returned once in ``hello-ok.auth.deviceToken`` and accepted instead of
the shared secret on later connects. Tokens are 32 random bytes, stored only as their SHA-256
(a stolen database gives no usable token) and compared in constant time. Removing a device or
revoking or rotating its token takes effect for the next request: the gateway also closes the
device's open sockets.

Pending requests expire after ten minutes; one device has at most one, and one address at most
:data:`MAX_PENDING_PER_IP` (a flood of fresh keys from one place is refused).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from homarus.errors import NotFound, RateLimited
from homarus.storage.statements import SqliteStatements, Statements, Tx, import_tables

if TYPE_CHECKING:
    from homarus.storage.blocking import BlockingDatabase

__all__ = [
    "CLUSTER_LOCK",
    "MAX_PENDING_PER_IP",
    "NOTICE_CHANNEL",
    "PENDING_TTL_MS",
    "DeviceStore",
    "PairedDevice",
    "PendingDevice",
    "import_devices",
]

PENDING_TTL_MS: Final = 10 * 60 * 1000
#: the notice a cluster's gateway sends when a device's sockets must close everywhere
NOTICE_CHANNEL: Final = "devices"
#: the advisory lock a cluster's device transactions take (one writer at a time, as on the file)
CLUSTER_LOCK: Final = 0x686F6D6172757364
MAX_PENDING_PER_IP: Final = 5
MAX_PENDING: Final = 200

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS paired (
    device_id TEXT PRIMARY KEY, public_key TEXT NOT NULL, role TEXT NOT NULL, scopes TEXT NOT NULL,
    display_name TEXT, platform TEXT, client_id TEXT, client_mode TEXT,
    approved_at INTEGER NOT NULL, approved_by TEXT, last_seen_at INTEGER
);
CREATE TABLE IF NOT EXISTS pending (
    request_id TEXT PRIMARY KEY, device_id TEXT NOT NULL UNIQUE, public_key TEXT NOT NULL,
    role TEXT NOT NULL, scopes TEXT NOT NULL, meta TEXT NOT NULL, ip TEXT NOT NULL,
    created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    device_id TEXT NOT NULL, role TEXT NOT NULL, token_hash TEXT NOT NULL, issued_at INTEGER NOT NULL,
    PRIMARY KEY (device_id, role)
);
"""


def _now() -> int:
    return int(time.time() * 1000)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class PendingDevice:
    request_id: str
    device_id: str
    public_key: str
    role: str
    scopes: tuple[str, ...]
    meta: dict[str, Any]
    ip: str
    created_at: int
    expires_at: int

    def to_json(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "deviceId": self.device_id,
            "publicKey": self.public_key,
            "role": self.role,
            "scopes": list(self.scopes),
            "remoteIp": self.ip,
            "ts": self.created_at,
            "expiresAtMs": self.expires_at,
            **{k: v for k, v in self.meta.items() if v},
        }


@dataclass(frozen=True, slots=True)
class PairedDevice:
    device_id: str
    public_key: str
    role: str
    scopes: tuple[str, ...]
    display_name: str | None
    platform: str | None
    client_id: str | None
    client_mode: str | None
    approved_at: int
    last_seen_at: int | None

    def to_json(self) -> dict[str, Any]:
        out = {
            "deviceId": self.device_id,
            "publicKey": self.public_key,
            "role": self.role,
            "roles": [self.role],
            "scopes": list(self.scopes),
            "displayName": self.display_name,
            "platform": self.platform,
            "clientId": self.client_id,
            "clientMode": self.client_mode,
            "approvedAtMs": self.approved_at,
            "lastSeenAtMs": self.last_seen_at,
        }
        return {k: v for k, v in out.items() if v is not None}


class DeviceStore:
    def __init__(self, path: Path | None = None, *, store: Statements | None = None) -> None:
        if store is None:
            if path is None:
                raise ValueError("a device store needs a file or a database")
            store = SqliteStatements(path, _SCHEMA)
        #: the tables: this file, or the ones every gateway of a cluster shares
        self._s = store

    def close(self) -> None:
        self._s.close()

    # -- paired ---------------------------------------------------------------------------------
    def paired(self, device_id: str | None = None) -> list[PairedDevice]:
        sql = (
            "SELECT device_id, public_key, role, scopes, display_name, platform, client_id, client_mode,"
            " approved_at, last_seen_at FROM paired"
        )
        rows = self._s.query(
            sql + (" WHERE device_id=?" if device_id else " ORDER BY approved_at"),
            (device_id,) if device_id else (),
        )
        return [PairedDevice(r[0], r[1], r[2], tuple(json.loads(r[3])), *r[4:]) for r in rows]

    def get(self, device_id: str) -> PairedDevice | None:
        found = self.paired(device_id)
        return found[0] if found else None

    def pair(self, device_id: str, public_key: str, role: str, scopes: list[str], meta: dict[str, Any], by: str) -> str:
        """Record the device as paired (replacing an earlier pairing) and issue its token."""
        now = _now()
        with self._s.transaction() as tx:
            tx.execute(
                "INSERT INTO paired(device_id, public_key, role, scopes, display_name, platform, client_id,"
                " client_mode, approved_at, approved_by, last_seen_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (device_id) DO UPDATE SET public_key=excluded.public_key, role=excluded.role,"
                " scopes=excluded.scopes, display_name=excluded.display_name, platform=excluded.platform,"
                " client_id=excluded.client_id, client_mode=excluded.client_mode,"
                " approved_at=excluded.approved_at, approved_by=excluded.approved_by,"
                " last_seen_at=excluded.last_seen_at",
                (
                    device_id,
                    public_key,
                    role,
                    json.dumps(sorted(set(scopes))),
                    meta.get("displayName"),
                    meta.get("platform"),
                    meta.get("clientId"),
                    meta.get("clientMode"),
                    now,
                    by,
                    now,
                ),
            )
            tx.execute("DELETE FROM pending WHERE device_id=?", (device_id,))
            return _issue(tx, device_id, role, now)

    def remove(self, device_id: str) -> bool:
        with self._s.transaction() as tx:
            removed = tx.execute("DELETE FROM paired WHERE device_id=?", (device_id,)).rowcount
            tx.execute("DELETE FROM tokens WHERE device_id=?", (device_id,))
        return removed > 0

    def rename(self, device_id: str, name: str) -> bool:
        return self._s.execute("UPDATE paired SET display_name=? WHERE device_id=?", (name, device_id)) > 0

    def seen(self, device_id: str) -> None:
        self._s.execute("UPDATE paired SET last_seen_at=? WHERE device_id=?", (_now(), device_id))

    # -- tokens ---------------------------------------------------------------------------------
    def rotate(self, device_id: str, role: str) -> str:
        if self.get(device_id) is None:
            raise NotFound(f"unknown device: {device_id}")
        with self._s.transaction() as tx:
            return _issue(tx, device_id, role, _now())

    def revoke(self, device_id: str, role: str | None = None) -> bool:
        if role is None:
            return self._s.execute("DELETE FROM tokens WHERE device_id=?", (device_id,)) > 0
        return self._s.execute("DELETE FROM tokens WHERE device_id=? AND role=?", (device_id, role)) > 0

    def token_ok(self, device_id: str, role: str, token: str) -> bool:
        """Whether ``token`` is this paired device's current token for ``role`` (constant time)."""
        rows = self._s.query(
            "SELECT t.token_hash FROM tokens t JOIN paired p ON p.device_id=t.device_id"
            " WHERE t.device_id=? AND t.role=?",
            (device_id, role),
        )
        return bool(rows) and hmac.compare_digest(rows[0][0], _hash(token))

    def issued_at(self, device_id: str, role: str) -> int | None:
        rows = self._s.query("SELECT issued_at FROM tokens WHERE device_id=? AND role=?", (device_id, role))
        return int(rows[0][0]) if rows else None

    # -- pending --------------------------------------------------------------------------------
    def request(
        self, device_id: str, public_key: str, role: str, scopes: list[str], meta: dict[str, Any], ip: str
    ) -> tuple[PendingDevice, bool]:
        """The device's live request (created now or earlier); RateLimited when its address has
        too many waiting already."""
        now = _now()
        with self._s.transaction() as tx:
            tx.execute("DELETE FROM pending WHERE expires_at <= ?", (now,))
            row = tx.execute("SELECT request_id FROM pending WHERE device_id=?", (device_id,)).fetchone()
            created = row is None
            if created:
                (from_ip,) = tx.execute("SELECT COUNT(*) FROM pending WHERE ip=?", (ip,)).fetchone()
                (total,) = tx.execute("SELECT COUNT(*) FROM pending").fetchone()
                if from_ip >= MAX_PENDING_PER_IP or total >= MAX_PENDING:
                    raise RateLimited(
                        "too many pairing requests waiting; approve or reject them first", retry_after_ms=60_000
                    )
                tx.execute(
                    "INSERT INTO pending(request_id, device_id, public_key, role, scopes, meta, ip, created_at,"
                    " expires_at) VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        secrets.token_hex(8),
                        device_id,
                        public_key,
                        role,
                        json.dumps(sorted(set(scopes))),
                        json.dumps(meta),
                        ip,
                        now,
                        now + PENDING_TTL_MS,
                    ),
                )
        return next(p for p in self.pending() if p.device_id == device_id), created

    def pending(self) -> list[PendingDevice]:
        rows = self._s.query(
            "SELECT request_id, device_id, public_key, role, scopes, meta, ip, created_at, expires_at FROM pending"
            " WHERE expires_at > ? ORDER BY created_at",
            (_now(),),
        )
        return [PendingDevice(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), json.loads(r[5]), *r[6:]) for r in rows]

    def take(self, request_id: str) -> PendingDevice:
        """Remove and return a live pending request (NotFound when unknown or expired)."""
        for p in self.pending():
            if hmac.compare_digest(p.request_id, request_id):
                # only the caller whose DELETE removed it takes it (two gateways approving at once)
                if self._s.execute("DELETE FROM pending WHERE request_id=?", (p.request_id,)) == 0:
                    break
                return p
        raise NotFound(f"unknown or expired pairing request: {request_id}")


def _issue(tx: Tx, device_id: str, role: str, now: int) -> str:
    token = secrets.token_urlsafe(32)
    tx.execute(
        "INSERT INTO tokens(device_id, role, token_hash, issued_at) VALUES (?,?,?,?)"
        " ON CONFLICT (device_id, role) DO UPDATE SET token_hash=excluded.token_hash, issued_at=excluded.issued_at",
        (device_id, role, _hash(token), now),
    )
    return token


def import_devices(db: BlockingDatabase, path: Path, *, dry_run: bool = False) -> dict[str, tuple[int, int]]:
    """Copy an embedded ``devices.sqlite`` into the cluster's tables (``homarus storage migrate``):
    table -> (rows found, rows added); a device the cluster knows already keeps its row there."""
    return import_tables(db, path, _COPIED, dry_run=dry_run)


#: the tables and columns copied by :func:`import_devices`
_COPIED: Final[dict[str, tuple[str, ...]]] = {
    "paired": (
        "device_id", "public_key", "role", "scopes", "display_name", "platform", "client_id", "client_mode",
        "approved_at", "approved_by", "last_seen_at",
    ),
    "pending": ("request_id", "device_id", "public_key", "role", "scopes", "meta", "ip", "created_at", "expires_at"),
    "tokens": ("device_id", "role", "token_hash", "issued_at"),
}  # fmt: skip
