"""``homarus channels add slack``: the bot token checked with Slack (a refused one is not written),
the app-level token (Socket Mode) or signing secret (``--mode http``) required and read from
stdin, neither ever echoed; the config block written and listed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fakes.slack_server import run_fake_slack
from tests.gateway_process import json_out, run_cli, scrubbed_env, write_config


def add(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "homarus", "channels", "add", "slack", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_add_checks_the_bot_token_and_needs_the_second_secret_of_its_mode(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": "cli-slack-token-0123456789abcdef"}}}))
    env = scrubbed_env(state)
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        env.pop(name, None)
    with run_fake_slack() as fake:
        root = ("--api-root", fake.api_root)
        bad = run_cli(env, "channels", "add", "slack", "--token", "xoxb-wrong", "--secret", "appToken=x", *root)
        assert bad.returncode == 2 and "Slack refused the bot token (invalid_auth)" in bad.stderr
        missing = add(env, "--token", fake.bot_token, *root)
        assert (
            missing.returncode == 2 and "no app-level token" in missing.stderr and "SLACK_APP_TOKEN" in missing.stderr
        )
        odd = add(env, "--token", fake.bot_token, "--secret", "password=1", *root)
        assert odd.returncode == 2 and "takes appToken, signingSecret" in odd.stderr
        assert fake.bot_token not in bad.stderr + missing.stderr + odd.stderr
        assert "channels" not in json.loads((state / "homarus.json").read_text())
        done = add(env, "--token", "-", "--secret", "appToken=-", *root, stdin=f"{fake.bot_token}\n{fake.app_token}\n")
        assert done.returncode == 0, done.stderr
        assert "added (@homarus in Homarus Test)" in done.stdout and "Socket Mode on" in done.stdout
        assert fake.bot_token not in done.stdout + done.stderr and fake.app_token not in done.stdout + done.stderr
        block = json.loads((state / "homarus.json").read_text())["channels"]["slack"]
        assert block["botToken"] == fake.bot_token and block["appToken"] == fake.app_token
        listed = json_out(run_cli(env, "channels", "list", "--json"))["channels"]
        assert [(c["channel"], c["mode"], c["token"]) for c in listed] == [("slack", "socket", "config")]
        http = add(env, "--account", "ops", "--mode", "http", "--token", fake.bot_token, *root)
        assert http.returncode == 2 and "no signing secret" in http.stderr
        http = add(
            env, "--account", "ops", "--mode", "http", "--token", fake.bot_token, "--secret", "signingSecret=s3", *root
        )
        assert http.returncode == 0, http.stderr
        ops = json.loads((state / "homarus.json").read_text())["channels"]["slack"]["accounts"]["ops"]
        assert ops["mode"] == "http" and ops["signingSecret"] == "s3" and "appToken" not in ops
        wrong_mode = add(env, "--mode", "webhook", "--token", fake.bot_token, *root)
        assert wrong_mode.returncode == 2 and "slack has socket, http" in wrong_mode.stderr
