"""`homarus channels …` and `homarus pairing …` as a person uses them: add a bot with no gateway
running (the token checked with the fake Bot API first), start the gateway, pair from a DM,
approve from the CLI, see the status, remove the channel from the running gateway; pairing
without a gateway reads and changes the store itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fakes.telegram_server import FakeTelegram, run_fake_telegram
from tests.gateway_process import json_out, run_cli, scrubbed_env, start_gateway, write_config
from tests.waiting import wait_for

TOKEN = "cli-channels-token-0123456789abcdef"
STRANGER = 4242


def cli_with_stdin(env: dict[str, str], stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "homarus", *args], env=env, input=stdin, capture_output=True, text=True, timeout=60
    )


def pairing_code(fake: FakeTelegram) -> str:
    replies = fake.texts_to(STRANGER)
    assert replies and "Pairing code: " in replies[0], replies
    return replies[0].split("Pairing code: ")[1].split()[0]


async def test_add_pair_approve_status_and_remove_from_the_command_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": TOKEN}}}))
    env = scrubbed_env(state)
    env.pop("TELEGRAM_BOT_TOKEN", None)
    with run_fake_telegram() as fake:
        # a token Telegram refuses is not written
        bad = run_cli(env, "channels", "add", "telegram", "--token", "1:wrong", "--api-root", fake.api_root)
        assert bad.returncode == 2 and "refused the token (401" in bad.stderr
        assert "channels" not in json.loads((state / "homarus.json").read_text())
        # the real one, read from stdin (never on the command line), checked, then written
        add = cli_with_stdin(
            env, fake.token + "\n", "channels", "add", "telegram", "--token", "-", "--api-root", fake.api_root
        )
        assert add.returncode == 0, add.stderr
        assert "added (@homarus_test_bot)" in add.stdout and "takes effect when the gateway starts" in add.stdout
        assert fake.token not in add.stdout + add.stderr
        listed = json_out(run_cli(env, "channels", "list", "--json"))["channels"]
        assert listed == [
            {
                "channel": "telegram",
                "accountId": "default",
                "enabled": True,
                "dmPolicy": "pairing",
                "allowFrom": [],
                "groups": [],
                "mode": "polling",
                "token": "config",
            }
        ]
        unknown = run_cli(env, "channels", "add", "carrier-pigeon", "--token", "x")
        assert unknown.returncode == 2 and "configure carrier-pigeon under channels.carrier-pigeon" in unknown.stderr

        with start_gateway(env) as gw:
            gw.wait_listening()
            via = ("--url", gw.url)
            fake.user_message(STRANGER, "hi bot", first_name="Ada")
            await wait_for(lambda: fake.texts_to(STRANGER), what="the pairing code")
            code = pairing_code(fake)
            pending = run_cli(env, "pairing", "list", *via)
            assert pending.returncode == 0 and code in pending.stdout and "Ada" in pending.stdout
            wrong = run_cli(env, "pairing", "approve", "telegram", "ABCDEFGH", *via)
            assert wrong.returncode == 2 and "no pending telegram pairing request ABCDEFGH" in wrong.stderr
            approved = run_cli(env, "pairing", "approve", "telegram", code.lower(), *via)
            assert approved.returncode == 0, approved.stderr
            assert (
                f"approved {code}" in approved.stdout
                and f"telegram:{STRANGER} is now the command owner" in approved.stdout
            )
            await wait_for(lambda: len(fake.texts_to(STRANGER)) == 2, what="the approval notice")
            config = json.loads((state / "homarus.json").read_text())
            assert config["commands"]["ownerAllowFrom"] == [f"telegram:{STRANGER}"]

            status = run_cli(env, "channels", "status", *via)
            assert status.returncode == 0 and "telegram/default  running  polling" in status.stdout
            assert fake.token not in status.stdout

            removed = run_cli(env, "channels", "remove", "telegram", *via)
            assert removed.returncode == 0 and "disabled: applied to the running gateway" in removed.stdout
            await wait_for(
                lambda: "telegram/default  stopped" in run_cli(env, "channels", "status", *via).stdout,
                timeout=15,
                what="the account to stop",
            )
        # no gateway: pairing reads the store itself
        offline = json_out(run_cli(env, "pairing", "list", "--json"))
        assert offline["requests"] == [] and offline["offline"] is True
        gone = run_cli(env, "channels", "remove", "telegram", "--delete")
        assert gone.returncode == 0 and "removed" in gone.stdout
        assert "channels" not in json.loads((state / "homarus.json").read_text())
        assert run_cli(env, "channels", "list").stdout.startswith("no chat channel configured")


def test_bad_input_gets_a_clear_error(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, "{}")
    env = scrubbed_env(state)
    env.pop("TELEGRAM_BOT_TOKEN", None)
    no_token = run_cli(env, "channels", "add", "telegram")
    assert no_token.returncode == 2 and "no token: pass --token" in no_token.stderr
    no_env = run_cli(env, "channels", "add", "telegram", "--token-env")
    assert no_env.returncode == 2 and "TELEGRAM_BOT_TOKEN is not set" in no_env.stderr
    not_configured = run_cli(env, "channels", "remove", "telegram")
    assert not_configured.returncode == 2 and "not configured" in not_configured.stderr
    no_store = run_cli(env, "pairing", "approve", "telegram", "ABCDEFGH")
    assert no_store.returncode == 2 and "no chat channel has run" in no_store.stderr
    down = run_cli(env, "channels", "status", "--url", "ws://127.0.0.1:9", "--timeout", "3")
    assert down.returncode == 1 and "cannot reach the gateway" in down.stderr
