"""The original's everyday commands (`openclaw …`, 2026.9.6) against a Homarus gateway started by
the test: exit codes and the key content of each answer, as docs/openclaw-compat.md records them
side by side with the original. Skipped, with the reason, where the original's CLI is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.compat.openclaw_cli import available, cli
from tests.fakes.telegram_server import run_fake_telegram
from tests.gateway_process import scrubbed_env, start_gateway, write_config
from tests.waiting import wait_for_sync

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
    ("hooks list", 0, "No hooks found."),
    ("approvals grants list", 0, "No standing grants."),
    ("audit", 0, "ACTION"),
    ("gateway usage-cost", 0, "Usage cost (30 days)"),
    ("gateway stability", 1, "not supported by Homarus"),
]


#: each command starts the original's Node.js CLI (2-5 s on the 2-core hosts here, more under load)
CLI_TEST_TIMEOUT_S = 400


@pytest.mark.timeout(CLI_TEST_TIMEOUT_S)
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


OWNER = 111


@pytest.mark.timeout(CLI_TEST_TIMEOUT_S)
@pytest.mark.skipif(available() is not None, reason=available() or "")
def test_what_scripts_and_cron_jobs_of_the_originals_users_run(tmp_path: Path) -> None:
    """`message send` to a chat, automations by id (`cron get`, `cron run --wait`), `status`
    with real counts, and a method Homarus has not built saying so: the original's CLI, 2026.9.6,
    against a Homarus gateway with a Telegram bot (a loopback stand-in for Telegram's Bot API)."""
    with run_fake_telegram() as fake:
        state = tmp_path / "state"
        telegram = {"botToken": fake.token, "apiRoot": fake.api_root, "dmPolicy": "allowlist", "allowFrom": [OWNER]}
        config = {"gateway": {"auth": {"token": TOKEN}}, "channels": {"telegram": telegram}}
        write_config(state, json.dumps(config))
        with start_gateway(scrubbed_env(state)) as gw:
            gw.wait_listening()
            home = tmp_path / "cli-home"

            def run(command: list[str], code: int, text: str, *, config_file: bool = False) -> str:
                done = cli(gw.url, TOKEN, command, home, config_file=config_file)
                out = done.stdout + done.stderr
                assert done.returncode == code and text in out, f"{command}: exit {done.returncode}: {out[-800:]}"
                return out

            wait_for_sync(lambda: fake.method_calls("getUpdates"), what="polling")
            run(["message", "send", "--channel", "telegram", "-t", str(OWNER), "-m", "from a script"], 0, "")
            assert fake.texts_to(OWNER) == ["from a script"]
            run(["message", "read", "--channel", "telegram", "-t", str(OWNER)], 1, "does not support action read")

            added = run(["cron", "add", "--name", "t1", "--every", "1h", "--system-event", "hi", "--json"], 0, '"id"')
            job_id = json.loads(added[added.index("{") : added.rindex("}") + 1])["id"]
            run(["cron", "get", job_id], 0, job_id)
            run(["cron", "get", "nope"], 1, "Automation not found: nope")
            ran = run(["cron", "run", job_id, "--wait", "--poll-interval", "1s"], 0, '"completionStatus": "succeeded"')
            assert f'"runId": "manual:{job_id}:' in ran
            run(["cron", "runs", "--id", job_id], 0, '"completionStatus": "succeeded"')

            status = run(["status", "--json"], 0, '"reachable": true', config_file=True)
            assert '"runtimeVersion": null' not in status
            run(["gateway", "call", "tts.status"], 1, "not supported by Homarus: voice")
