"""The host's exec approvals on PostgreSQL (``storage.backend: postgres``): one document for the
cluster, so an allow-always decision made on any gateway holds on every gateway, and a policy
tightened in it tightens them all at their next ``exec``.

The row holds the file's JSON (``exec_approvals_file``: same parsing, same refusals of a malformed
document, which callers turn into deny/always/deny). It is read at every ``exec`` (no cache: a
pattern removed is gone for the next command); adding patterns locks the row, merges and writes,
so concurrent grants on two gateways both stay.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from homarus.security.exec_approvals_file import ExecApprovalsFile, parse, with_patterns

if TYPE_CHECKING:
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["PgExecApprovals"]


class PgExecApprovals:
    def __init__(self, db: BlockingDatabase) -> None:
        self.db = db
        self.location = f"postgresql://{db.where}#exec_approvals"

    def read(self) -> tuple[bytes | None, ExecApprovalsFile]:
        with self.db.connection() as conn:
            row = conn.execute("SELECT doc::text FROM exec_approvals WHERE id = 1").fetchone()
        raw = str(row[0]).encode() if row is not None else None
        return raw, ExecApprovalsFile() if raw is None else parse(raw, self.location)

    def load(self) -> ExecApprovalsFile:
        return self.read()[1]

    def add_patterns(self, patterns: list[str], *, now_ms: int | None = None) -> ExecApprovalsFile:
        with self.db.connection() as conn, conn.transaction():
            conn.execute(
                "INSERT INTO exec_approvals(id, doc) VALUES (1, %s::jsonb) ON CONFLICT DO NOTHING",
                (json.dumps(ExecApprovalsFile().to_json()),),
            )
            row = conn.execute("SELECT doc::text FROM exec_approvals WHERE id = 1 FOR UPDATE").fetchone()
            current = parse(str(row[0]).encode(), self.location) if row is not None else ExecApprovalsFile()
            updated = with_patterns(current, patterns, now_ms)
            conn.execute(
                "UPDATE exec_approvals SET doc = %s::jsonb, updated_at = now() WHERE id = 1",
                (json.dumps(updated.to_json()),),
            )
        return updated

    def import_document(self, approvals: ExecApprovalsFile) -> bool:
        """Store ``approvals`` unless the cluster has its own already (``homarus storage migrate``)."""
        with self.db.connection() as conn:
            cur = conn.execute(
                "INSERT INTO exec_approvals(id, doc) VALUES (1, %s::jsonb) ON CONFLICT DO NOTHING",
                (json.dumps(approvals.to_json()),),
            )
            return cur.rowcount == 1
