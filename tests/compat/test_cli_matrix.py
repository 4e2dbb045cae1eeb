"""The wide CLI matrix (tests/compat/cli_matrix.py): every command of the original's CLI that
reaches a gateway, replayed against a Homarus started here, answers as it did when recorded side
by side with the original (tests/fixtures/openclaw-cli-matrix.json): the same exit code as the
original, unless ``DIFFERENCES`` says why not, and the line both gateways printed. The table in
docs/openclaw-compat.md is the one the recording makes. Skipped without the original's CLI."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.compat.cli_matrix import COMMANDS, DIFFERENCES, PEER_TOKEN, doc_table, load, run, table
from tests.compat.openclaw_cli import available
from tests.gateway_process import scrubbed_env, start_gateway, write_config

#: ~90 commands of 2-5 s each (Node.js start-up), two at a time
MATRIX_TIMEOUT_S = 600


def test_the_recording_covers_every_command_and_explains_every_difference() -> None:
    rows = load()
    assert list(rows) == COMMANDS
    differ = {c for c, r in rows.items() if r["gateway"] and r["original"]["exit"] != r["homarus"]["exit"]}
    assert differ == set(DIFFERENCES), "a changed exit code needs its reason in DIFFERENCES, a fixed one leaves it"
    assert all(len(why) > 15 for why in DIFFERENCES.values())
    assert sum(r["gateway"] for r in rows.values()) >= 60  # the matrix is about the gateway


def test_the_docs_table_is_the_recorded_one() -> None:
    assert doc_table() == table(load()), "run: python -m tests.compat.cli_matrix doc"


@pytest.mark.timeout(MATRIX_TIMEOUT_S)
@pytest.mark.skipif(available() is not None, reason=available() or "")
def test_every_gateway_command_answers_as_recorded(tmp_path: Path) -> None:
    rows = {c: r for c, r in load().items() if r["gateway"]}
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": PEER_TOKEN}}}))
    failures = []
    with start_gateway(scrubbed_env(state)) as gw:
        gw.wait_listening()

        def one(command: str) -> str | None:
            row = rows[command]
            code, out = run(gw.url, PEER_TOKEN, command, tmp_path / f"home-{COMMANDS.index(command)}")
            want = row["homarus"]["exit"]
            if code != want or (row["key"] and row["key"] not in out):
                return f"{command}: exit {code} (recorded {want}), want {row['key']!r} in: {out[-400:]}"
            return None

        with ThreadPoolExecutor(2) as pool:
            failures = [f for f in pool.map(one, rows) if f]
    assert failures == [], "\n".join(failures)
