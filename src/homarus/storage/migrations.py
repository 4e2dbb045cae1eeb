"""The schema's versions: each ``sql/NNNN_name.sql`` applied once, in order, by one gateway.

Every gateway runs this at start. A session-level advisory lock makes the others wait while one
migrates, each migration runs in its own transaction with the row that records it (a crash leaves
a version applied whole or not at all), and a database whose schema is newer than this code knows
stops the start: an older gateway must not write into a schema it does not understand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Final

from homarus.errors import ConfigError

if TYPE_CHECKING:
    from homarus.storage.database import Database

__all__ = ["LOCK_KEY", "Migration", "SchemaTooNew", "migrate", "migrate_at", "migrations"]

#: the advisory lock migrations hold ("Homarus" in ASCII, as a bigint)
LOCK_KEY: Final = 0x486F6D61727573
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_TABLE = """CREATE TABLE IF NOT EXISTS homarus_schema (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""


class SchemaTooNew(ConfigError):
    """The database was migrated by a newer Homarus."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """The migrations shipped with this code, in order; versions run 1, 2, 3… without a gap."""
    found = []
    for entry in resources.files("homarus.storage.sql").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migration versions have a gap: {[m.version for m in found]}")
    return found


async def migrate(db: Database, known: list[Migration] | None = None) -> tuple[int, list[int]]:
    """Bring the schema up to date: (the version now, the versions this call applied)."""
    known = migrations() if known is None else known
    latest = known[-1].version if known else 0
    async with db.connection() as conn:
        await conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        try:
            await conn.execute(_TABLE)
            row = await (await conn.execute("SELECT coalesce(max(version), 0) FROM homarus_schema")).fetchone()
            current = int(row[0]) if row else 0
            if current > latest:
                raise SchemaTooNew(
                    f"the database at {db.where} has schema version {current}, newer than this Homarus knows "
                    f"({latest}): run the newer Homarus, or point storage.postgres.url at another database"
                )
            applied = []
            for m in known[current:]:
                async with conn.transaction():
                    await conn.execute(m.sql.encode())  # bytes: run as one script, without parameters
                    await conn.execute(
                        "INSERT INTO homarus_schema (version, name) VALUES (%s, %s)", (m.version, m.name)
                    )
                applied.append(m.version)
            return max(current, latest), applied
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))


async def migrate_at(url: str, *, timeout_s: float = 5.0) -> int:
    """Bring the schema of the database at ``url`` up to date on a connection of its own (a
    command without a gateway, as the gateway does at start); the version now."""
    from homarus.storage.database import Database

    db = await Database.open(url, max_size=1, timeout_s=timeout_s)
    try:
        return (await migrate(db))[0]
    finally:
        await db.close()
