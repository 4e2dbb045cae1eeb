"""What scripts and cron jobs of the original's users run (`openclaw …`, 2026.9.6) against a Homarus
gateway started by the test, with a chat channel: sending to a chat, automations by id, status with
real counts. The wide command matrix is tests/compat/test_cli_matrix.py. Skipped, with the reason,
where the original's CLI is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.compat.openclaw_cli import available, cli
from tests.fakes.telegram_server import run_fake_telegram
from tests.gateway_process import scrubbed_env, start_gateway, write_config
from tests.waiting import wait_for_sync

TOKEN = "compat-token-0123456789abcdef0123"

#: each command starts the original's Node.js CLI (2-5 s on the 2-core hosts here, more under load)
CLI_TEST_TIMEOUT_S = 400


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
