"""The usage ledger on PostgreSQL (``storage.backend: postgres``): the embedded ledger's rows and
statements (``ledger.ADD``: a run's end adds its calls to its hour's row in one upsert, so two
gateways ending runs in the same hour both count), shared by every gateway of a cluster;
``usage.*`` and ``homarus usage`` report every gateway's runs. Old hours are pruned as the file's
are (at most once an hour per gateway, on a write)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from homarus.storage.statements import PgStatements
from homarus.usage.ledger import ADD, DEFAULT_RETAIN_DAYS, HOUR_MS, SELECT, Row, RunUsage, run_rows

if TYPE_CHECKING:
    from homarus.storage.blocking import BlockingDatabase

__all__ = ["PgUsageLedger"]


class PgUsageLedger:
    def __init__(self, db: BlockingDatabase, *, retain_days: int = DEFAULT_RETAIN_DAYS) -> None:
        self._s = PgStatements(db)
        self.path = f"{self._s.where}#usage"
        self.retain_days = retain_days
        self._pruned_hour = -1

    def record(self, run: RunUsage) -> None:
        """Add one finished run's calls (blocking: call it from a worker thread)."""
        if not run.models:
            return
        hour, rows = run_rows(run)
        with self._s.transaction() as tx:
            tx.executemany(ADD, rows)
            if hour != self._pruned_hour:
                tx.execute("DELETE FROM usage WHERE hour < ?", (hour - self.retain_days * 24,))
        self._pruned_hour = hour

    def rows(self, start_ms: int, end_ms: int, agent_id: str | None = None) -> list[Row]:
        sql = SELECT if agent_id is None else SELECT + " AND agent_id = ?"
        args = (start_ms // HOUR_MS, end_ms // HOUR_MS, *((agent_id,) if agent_id is not None else ()))
        return [Row(*r) for r in self._s.query(sql, args)]

    def count(self) -> int:
        return int(self._s.query("SELECT count(*) FROM usage")[0][0])

    def close(self) -> None:
        """Nothing to close: the pool belongs to the gateway's database."""
