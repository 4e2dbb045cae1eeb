"""The usage ledger on a real PostgreSQL (usage/pg_ledger.py): the same sums as the file, with two
gateways adding runs of the same hour at once; pruning; ``homarus usage`` reading it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from homarus.storage.blocking import BlockingDatabase
from homarus.storage.migrations import migrate_at
from homarus.usage.ledger import HOUR_MS
from homarus.usage.pg_ledger import PgUsageLedger
from tests.gateway_process import run_cli, scrubbed_env
from tests.usage.test_ledger import T0, run


@pytest.fixture
def pools(pg_url: str) -> Iterator[list[BlockingDatabase]]:
    asyncio.run(migrate_at(pg_url))
    made = [BlockingDatabase(pg_url, max_size=4) for _ in range(2)]  # two gateways' pools
    yield made
    for db in made:
        db.close()


def test_runs_of_two_gateways_add_up_in_one_row(pools: list[BlockingDatabase]) -> None:
    ledgers = [PgUsageLedger(db) for db in pools]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: ledgers[i % 2].record(run(T0 + i, openai__gpt=(10, 2, 0.01))), range(40)))
    ledgers[0].record(run(T0, session="agent:main:other", local__llama=(7, 3, 0.0)))
    rows = ledgers[1].rows(T0, T0 + HOUR_MS)
    assert ledgers[1].count() == len(rows) == 2
    gpt = next(r for r in rows if r.model == "gpt")
    assert (gpt.calls, gpt.runs, gpt.input, gpt.output) == (40, 40, 400, 80)
    assert gpt.total_cost == pytest.approx(0.4)
    llama = next(r for r in rows if r.model == "llama")
    assert llama.missing_cost == 1 and llama.session_key == "agent:main:other"
    assert ledgers[0].rows(T0, T0 + HOUR_MS, agent_id="other-agent") == []
    assert ledgers[0].path.startswith("postgresql://127.0.0.1:") and "@" not in ledgers[0].path


def test_old_hours_are_pruned(pools: list[BlockingDatabase]) -> None:
    ledger = PgUsageLedger(pools[0], retain_days=2)
    ledger.record(run(T0, openai__gpt=(1, 1, 0.0)))
    ledger.record(run(T0 + 3 * 24 * HOUR_MS, openai__gpt=(1, 1, 0.0)))  # three days on: the first goes
    assert [r.hour for r in ledger.rows(T0, T0 + 4 * 24 * HOUR_MS)] == [(T0 + 3 * 24 * HOUR_MS) // HOUR_MS]


def test_the_cli_reads_the_clusters_ledger(tmp_path: Path, pools: list[BlockingDatabase], pg_url: str) -> None:
    import time

    now = int(time.time() * 1000)
    PgUsageLedger(pools[0]).record(run(now, openai__gpt=(1200, 300, 0.0081)))
    state = tmp_path / "state"
    state.mkdir()
    config = {"storage": {"backend": "postgres", "postgres": {"url": pg_url}}}
    (state / "homarus.json").write_text(json.dumps(config))
    done = run_cli(scrubbed_env(state), "usage", "--json")
    assert done.returncode == 0, done.stderr + done.stdout
    assert json.loads(done.stdout)["totals"]["totalTokens"] == 1500
    assert not (state / "usage").exists()
