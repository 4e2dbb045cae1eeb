"""``homarus channels add discord``: the token checked with Discord (a refused one is not written),
read from stdin, never echoed; the config block written and listed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fakes.discord_server import run_fake_discord
from tests.gateway_process import json_out, run_cli, scrubbed_env, write_config


def test_add_checks_the_token_with_discord_and_writes_a_valid_block(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": "cli-discord-token-0123456789abcdef"}}}))
    env = scrubbed_env(state)
    env.pop("DISCORD_BOT_TOKEN", None)
    with run_fake_discord() as fake:
        bad = run_cli(env, "channels", "add", "discord", "--token", "wrong", "--api-root", fake.api_root)
        assert bad.returncode == 2 and "Discord refused the token (401" in bad.stderr
        assert "channels" not in json.loads((state / "homarus.json").read_text())
        add = subprocess.run(
            [
                sys.executable,
                "-m",
                "homarus",
                "channels",
                "add",
                "discord",
                "--token",
                "-",
                "--api-root",
                fake.api_root,
            ],
            env=env,
            input=fake.token + "\n",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert add.returncode == 0, add.stderr
        assert "added (@homarus-test)" in add.stdout and "Message Content intent" in add.stdout
        assert fake.token not in add.stdout + add.stderr
        block = json.loads((state / "homarus.json").read_text())["channels"]["discord"]
        assert block["token"] == fake.token and block["apiRoot"] == fake.api_root
        listed = json_out(run_cli(env, "channels", "list", "--json"))["channels"]
        assert [(c["channel"], c["mode"], c["token"]) for c in listed] == [("discord", "gateway", "config")]
