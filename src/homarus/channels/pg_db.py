"""The channel tables in PostgreSQL (``storage.backend: postgres``): the inbox, cursors, outbox and
pairing of ``db.py``, shared by every gateway of a cluster.

The channels themselves run on one gateway at a time (the ``channels`` role); what sharing the
tables gives is that the gateway taking the role over continues where the last holder stopped:
the platform cursors it had committed, the messages it had accepted but not answered, the pieces
it had recorded but not sent (the outbox's restart rules apply, as after a restart of one
gateway), and the pairing approvals made on any gateway. A reply written by a run another gateway
took over lands in the same outbox, and the holder sends it (told by a ``channels`` notice; its
sender also looks every 30 s).

The statements are the embedded store's (``?`` placeholders become psycopg's; a literal ``%`` is
escaped for it); each call takes a pooled connection of the blocking pool.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.storage.statements import PgStatements, import_tables

if TYPE_CHECKING:
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["NOTICE_CHANNEL", "PgChannelDb", "import_channels"]

#: the notice a gateway sends when it queued reply pieces while another runs the channels
NOTICE_CHANNEL = "channels"


class PgChannelDb(PgStatements):
    def execute_unsynced(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        return self.execute(sql, args)


#: the tables and columns copied from an embedded ``channels.sqlite`` (ids are the database's own:
#: rows keep their order, and nothing refers to a row by its id across the tables)
_COPIED: dict[str, tuple[str, ...]] = {
    "inbound": (
        "channel", "account", "chat", "message_id", "conversation", "sender", "payload", "status", "reason",
        "run_id", "received_at", "updated_at",
    ),
    "cursors": ("channel", "account", "name", "value"),
    "outbox": (
        "key", "conversation", "payload", "status", "attempts", "next_at", "last_error", "platform_id", "run_id",
        "session_key", "created_at", "updated_at",
    ),
    "pairing_requests": ("channel", "account", "sender", "code", "created_at", "expires_at", "meta"),
    "pairing_allow": ("channel", "account", "sender", "approved_at", "approved_by", "meta"),
}  # fmt: skip


def import_channels(db: BlockingDatabase, path: Path, *, dry_run: bool = False) -> dict[str, tuple[int, int]]:
    """Copy an embedded ``channels.sqlite`` into the shared tables: table -> (rows found, rows
    added). A row the database has already (same message, piece key, cursor, sender) is kept as
    it is there, so a second run adds nothing."""
    return import_tables(db, path, _COPIED, dry_run=dry_run)
