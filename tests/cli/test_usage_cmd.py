"""``homarus usage`` reads the usage ledger the gateway writes, without a gateway."""

from __future__ import annotations

import json
import time
from pathlib import Path

from homarus.messages import Cost, Usage
from homarus.usage.ledger import ModelTally, RunUsage, UsageLedger, ledger_path
from tests.gateway_process import run_cli, scrubbed_env


def _record(state: Path) -> None:
    ledger = UsageLedger(ledger_path(state))
    now = int(time.time() * 1000)
    priced = ModelTally(2, Usage(1200, 300, 50, 0, 1550, Cost(0.0036, 0.0045, 0.0, 0.0, 0.0081)))
    free = ModelTally(1, Usage(10, 5, 0, 0, 15), missing_cost=1)
    ledger.record(RunUsage(now, "main", "agent:main:main", "", {("openai", "gpt"): priced}))
    ledger.record(RunUsage(now, "main", "agent:main:telegram:direct:7", "telegram", {("local", "llama"): free}))
    ledger.close()


def test_usage_prints_totals_days_models_and_sessions(tmp_path: Path) -> None:
    _record(tmp_path)
    done = run_cli(scrubbed_env(tmp_path), "usage", "--days", "3")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(3 days)" in out and "$0.0081" in out and "total" in out
    assert "openai/gpt" in out and "local/llama" in out and "agent:main:telegram:direct:7" in out
    assert "1 call(s) of models without a price" in out
    as_json = json.loads(run_cli(scrubbed_env(tmp_path), "usage", "--json").stdout)
    assert as_json["totals"]["totalTokens"] == 1565 and as_json["sessionCount"] == 2


def test_usage_without_a_ledger_and_with_bad_dates(tmp_path: Path) -> None:
    done = run_cli(scrubbed_env(tmp_path), "usage")
    assert done.returncode == 0 and "no model calls recorded in this period" in done.stdout
    assert not ledger_path(tmp_path).exists()  # reading creates nothing
    bad = run_cli(scrubbed_env(tmp_path), "usage", "--since", "2026-11-01")
    assert bad.returncode == 1 and "startDate and endDate must be provided together" in bad.stdout
    zone = run_cli(scrubbed_env(tmp_path), "usage", "--tz", "Nowhere/City")
    assert zone.returncode == 1 and "invalid timeZone" in zone.stdout
