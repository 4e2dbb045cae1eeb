"""The usage ledger on a real SQLite file: adding runs, reading hours back, pruning, a bad file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from homarus.messages import Cost, Usage
from homarus.usage.ledger import HOUR_MS, ModelTally, RunUsage, UsageLedger, UsageStoreCorrupt, add_call

T0 = 1_795_000_000_000  # some hour in November 2026


def run(at: int, session: str = "agent:main:main", **models: tuple[int, int, float]) -> RunUsage:
    tallies: dict[tuple[str, str], ModelTally] = {}
    for ref, (tokens_in, tokens_out, dollars) in models.items():
        provider, model = ref.split("__")
        usage = Usage(tokens_in, tokens_out, 0, 0, tokens_in + tokens_out, Cost(total=dollars, input=dollars))
        add_call(tallies, provider, model, usage, priced=dollars > 0)
    return RunUsage(at, "main", session, "telegram", tallies)


def test_runs_add_up_per_hour_session_and_model(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path / "usage" / "usage.sqlite")
    ledger.record(run(T0, openai__gpt=(100, 20, 0.5)))
    ledger.record(run(T0 + 1000, openai__gpt=(50, 10, 0.25), local__llama=(7, 3, 0.0)))
    ledger.record(run(T0 + HOUR_MS, openai__gpt=(1, 1, 0.01)))
    ledger.record(run(T0, session="agent:main:other", openai__gpt=(5, 5, 0.1)))
    rows = ledger.rows(T0, T0 + HOUR_MS)
    assert ledger.count() == len(rows) == 4
    same_hour = next(r for r in rows if r.hour == T0 // HOUR_MS and r.model == "gpt" and r.session_key.endswith("main"))
    assert (same_hour.calls, same_hour.runs, same_hour.input, same_hour.output) == (2, 2, 150, 30)
    assert same_hour.total_cost == pytest.approx(0.75)
    llama = next(r for r in rows if r.model == "llama")
    assert llama.missing_cost == 1 and llama.total_cost == 0
    assert ledger.rows(T0 + 2 * HOUR_MS, T0 + 3 * HOUR_MS) == []
    assert len(ledger.rows(T0, T0 + HOUR_MS, agent_id="other-agent")) == 0
    # private: the file holds what people talked about, session by session
    assert stat.S_IMODE(os.stat(ledger.path).st_mode) == 0o600
    ledger.close()
    reopened = UsageLedger(ledger.path)
    assert len(reopened.rows(T0, T0 + HOUR_MS)) == 4  # durable across a restart
    reopened.close()


def test_reading_creates_nothing_and_old_hours_are_pruned(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path / "usage.sqlite", retain_days=2)
    assert ledger.rows(0, T0) == [] and ledger.count() == 0 and not ledger.path.exists()
    for day in range(5):
        ledger.record(run(T0 + day * 24 * HOUR_MS, openai__gpt=(1, 1, 0.0)))
    # each write of a new hour prunes what is older than retain_days: the file stays bounded
    assert ledger.count() == 3
    ledger.close()


def test_a_run_without_model_calls_writes_nothing(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path / "usage.sqlite")
    ledger.record(RunUsage(T0, "main", "k", "", {}))
    assert not ledger.path.exists()


def test_a_damaged_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    ledger = UsageLedger(path)
    with pytest.raises(UsageStoreCorrupt, match="move it away"):
        ledger.rows(0, T0)
    assert path.read_bytes().startswith(b"this is not a database")  # left as it was
