"""Paired devices, pending pairing requests and device tokens (``$STATE/devices.sqlite``).

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
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from homarus.errors import NotFound, RateLimited
from homarus.fs import open_durable_sqlite

__all__ = ["MAX_PENDING_PER_IP", "PENDING_TTL_MS", "DeviceStore", "PairedDevice", "PendingDevice"]

PENDING_TTL_MS: Final = 10 * 60 * 1000
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
    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._db = open_durable_sqlite(path)
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- paired ---------------------------------------------------------------------------------
    def paired(self, device_id: str | None = None) -> list[PairedDevice]:
        sql = (
            "SELECT device_id, public_key, role, scopes, display_name, platform, client_id, client_mode,"
            " approved_at, last_seen_at FROM paired"
        )
        with self._lock:
            rows = self._db.execute(
                sql + (" WHERE device_id=?" if device_id else " ORDER BY approved_at"),
                (device_id,) if device_id else (),
            ).fetchall()
        return [PairedDevice(r[0], r[1], r[2], tuple(json.loads(r[3])), *r[4:]) for r in rows]

    def get(self, device_id: str) -> PairedDevice | None:
        found = self.paired(device_id)
        return found[0] if found else None

    def pair(self, device_id: str, public_key: str, role: str, scopes: list[str], meta: dict[str, Any], by: str) -> str:
        """Record the device as paired (replacing an earlier pairing) and issue its token."""
        now = _now()
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(
                "INSERT OR REPLACE INTO paired(device_id, public_key, role, scopes, display_name, platform, client_id,"
                " client_mode, approved_at, approved_by, last_seen_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
            self._db.execute("DELETE FROM pending WHERE device_id=?", (device_id,))
            return self._issue_locked(device_id, role, now)

    def remove(self, device_id: str) -> bool:
        with self._lock, self._db:
            removed = self._db.execute("DELETE FROM paired WHERE device_id=?", (device_id,)).rowcount
            self._db.execute("DELETE FROM tokens WHERE device_id=?", (device_id,))
        return removed > 0

    def rename(self, device_id: str, name: str) -> bool:
        with self._lock, self._db:
            return (
                self._db.execute("UPDATE paired SET display_name=? WHERE device_id=?", (name, device_id)).rowcount > 0
            )

    def seen(self, device_id: str) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE paired SET last_seen_at=? WHERE device_id=?", (_now(), device_id))

    # -- tokens ---------------------------------------------------------------------------------
    def _issue_locked(self, device_id: str, role: str, now: int) -> str:
        token = secrets.token_urlsafe(32)
        self._db.execute(
            "INSERT OR REPLACE INTO tokens(device_id, role, token_hash, issued_at) VALUES (?,?,?,?)",
            (device_id, role, _hash(token), now),
        )
        return token

    def rotate(self, device_id: str, role: str) -> str:
        if self.get(device_id) is None:
            raise NotFound(f"unknown device: {device_id}")
        with self._lock, self._db:
            return self._issue_locked(device_id, role, _now())

    def revoke(self, device_id: str, role: str | None = None) -> bool:
        with self._lock, self._db:
            if role is None:
                return self._db.execute("DELETE FROM tokens WHERE device_id=?", (device_id,)).rowcount > 0
            return self._db.execute("DELETE FROM tokens WHERE device_id=? AND role=?", (device_id, role)).rowcount > 0

    def token_ok(self, device_id: str, role: str, token: str) -> bool:
        """Whether ``token`` is this paired device's current token for ``role`` (constant time)."""
        with self._lock:
            row = self._db.execute(
                "SELECT t.token_hash FROM tokens t JOIN paired p ON p.device_id=t.device_id"
                " WHERE t.device_id=? AND t.role=?",
                (device_id, role),
            ).fetchone()
        return row is not None and hmac.compare_digest(row[0], _hash(token))

    def issued_at(self, device_id: str, role: str) -> int | None:
        with self._lock:
            row = self._db.execute(
                "SELECT issued_at FROM tokens WHERE device_id=? AND role=?", (device_id, role)
            ).fetchone()
        return int(row[0]) if row else None

    # -- pending --------------------------------------------------------------------------------
    def request(
        self, device_id: str, public_key: str, role: str, scopes: list[str], meta: dict[str, Any], ip: str
    ) -> tuple[PendingDevice, bool]:
        """The device's live request (created now or earlier); RateLimited when its address has
        too many waiting already."""
        now = _now()
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM pending WHERE expires_at <= ?", (now,))
            row = self._db.execute("SELECT request_id FROM pending WHERE device_id=?", (device_id,)).fetchone()
            created = row is None
            if created:
                (from_ip,) = self._db.execute("SELECT COUNT(*) FROM pending WHERE ip=?", (ip,)).fetchone()
                (total,) = self._db.execute("SELECT COUNT(*) FROM pending").fetchone()
                if from_ip >= MAX_PENDING_PER_IP or total >= MAX_PENDING:
                    raise RateLimited(
                        "too many pairing requests waiting; approve or reject them first", retry_after_ms=60_000
                    )
                self._db.execute(
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
        with self._lock:
            rows = self._db.execute(
                "SELECT request_id, device_id, public_key, role, scopes, meta, ip, created_at, expires_at FROM pending"
                " WHERE expires_at > ? ORDER BY created_at",
                (_now(),),
            ).fetchall()
        return [PendingDevice(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), json.loads(r[5]), *r[6:]) for r in rows]

    def take(self, request_id: str) -> PendingDevice:
        """Remove and return a live pending request (NotFound when unknown or expired)."""
        for p in self.pending():
            if hmac.compare_digest(p.request_id, request_id):
                with self._lock, self._db:
                    self._db.execute("DELETE FROM pending WHERE request_id=?", (p.request_id,))
                return p
        raise NotFound(f"unknown or expired pairing request: {request_id}")
