"""The original's everyday commands (`openclaw …`, 2026.9.6) against a Homarus gateway started by
the test: exit codes and the key content of each answer, as docs/openclaw-compat.md records them
side by side with the original. Skipped, with the reason, where the original's CLI is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.compat.openclaw_cli import available, cli
from tests.gateway_process import scrubbed_env, start_gateway, write_config

TOKEN = "compat-token-0123456789abcdef0123"

#: (command, expected exit code, text the output must contain)
MATRIX: list[tuple[str, int, str]] = [
    ("health", 0, "Session store (main)"),
    ("status", 0, "openclaw gateway probe"),
    ("sessions", 0, "No sessions found."),
    ("cron status", 0, '"enabled"'),
    ("cron list", 0, "No automations."),
    ("cron list --json", 0, '"jobs": []'),
    ("cron runs --id nope", 1, "Automation not found: nope"),
    ("system heartbeat last", 0, "null"),
    ("system presence", 0, "["),
    ("models list", 0, "homarus/echo"),
    ("logs --limit 5", 0, ""),
    ("nodes status", 0, "Known: 0 · Paired: 0 · Connected: 0"),
    ("nodes list", 0, "Pending: 0 · Paired: 0"),
    ("devices list", 0, "No device pairing entries."),
    ("approvals get --gateway", 0, "Precedence"),
    ("memory status", 0, "no eligible session transcripts found"),
    ("skills list", 0, "openclaw skills search"),
    ("security audit", 0, "trust model"),
]


@pytest.mark.skipif(available() is not None, reason=available() or "")
def test_everyday_commands_of_the_originals_cli(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": TOKEN}}}))
    failures = []
    with start_gateway(scrubbed_env(state)) as gw:
        gw.wait_listening()
        for command, code, text in MATRIX:
            done = cli(gw.url, TOKEN, command.split(), tmp_path / "cli-home")
            out = done.stdout + done.stderr
            if done.returncode != code or text not in out:
                failures.append(f"{command}: exit {done.returncode} (want {code}), missing {text!r}: {out[-300:]}")
    assert failures == [], "\n".join(failures)
