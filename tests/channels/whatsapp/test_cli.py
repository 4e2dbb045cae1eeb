"""``homarus channels add whatsapp``: the access token checked with the Graph API (a refused one is
not written), the number's id, the app secret and the verify token required, none echoed; the
block written validates and is listed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fakes.whatsapp_server import PHONE_NUMBER_ID, run_fake_whatsapp
from tests.gateway_process import json_out, run_cli, scrubbed_env, write_config


def add(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "homarus", "channels", "add", "whatsapp", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_add_checks_the_token_and_needs_the_number_the_app_secret_and_the_verify_token(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": "cli-whatsapp-token-0123456789abcdef"}}}))
    env = scrubbed_env(state)
    for name in ("WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"):
        env.pop(name, None)
    with run_fake_whatsapp() as fake:
        root = ("--api-root", fake.api_root)
        others = ("--secret", f"phoneNumberId={PHONE_NUMBER_ID}", "--secret", "verifyToken=my phrase")
        bad = add(env, "--token", "EAAwrong", "--secret", "appSecret=s", *others, *root)
        assert bad.returncode == 2 and "Meta refused the access token (Invalid OAuth access token" in bad.stderr
        missing = add(env, "--token", fake.token, *others, *root)
        assert missing.returncode == 2 and "no app secret" in missing.stderr and "WHATSAPP_APP_SECRET" in missing.stderr
        assert "channels" not in json.loads((state / "homarus.json").read_text())
        done = add(
            env, "--token", "-", "--secret", "appSecret=-", *others, *root, stdin=f"{fake.token}\n{fake.app_secret}\n"
        )
        assert done.returncode == 0, done.stderr
        assert "added (Homarus Test System User)" in done.stdout and "/whatsapp/webhook" in done.stdout
        for secret in (fake.token, fake.app_secret, "my phrase"):
            assert secret not in done.stdout + done.stderr + bad.stderr + missing.stderr
        block = json.loads((state / "homarus.json").read_text())["channels"]["whatsapp"]
        assert block["accessToken"] == fake.token and block["appSecret"] == fake.app_secret
        assert block["phoneNumberId"] == PHONE_NUMBER_ID and block["verifyToken"] == "my phrase"
        listed = json_out(run_cli(env, "channels", "list", "--json"))["channels"]
        assert [(c["channel"], c["mode"], c["token"]) for c in listed] == [("whatsapp", "cloud", "config")]


def test_add_a_personal_number_asks_for_no_secret_and_says_how_to_link(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": "cli-whatsapp-token-0123456789abcdef"}}}))
    env = scrubbed_env(state)
    for name in ("WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"):
        env.pop(name, None)
    done = add(env, "--mode", "personal", "--allow-from", "+1 555 123 4567", "--dm-policy", "allowlist")
    assert done.returncode == 0, done.stderr
    assert "homarus channels login whatsapp" in done.stdout and "Linked devices" in done.stdout
    block = json.loads((state / "homarus.json").read_text())["channels"]["whatsapp"]
    assert block == {"enabled": True, "mode": "personal", "dmPolicy": "allowlist", "allowFrom": ["+1 555 123 4567"]}
    listed = json_out(run_cli(env, "channels", "list", "--json"))["channels"]
    assert [(c["channel"], c["mode"], c["token"]) for c in listed] == [("whatsapp", "personal", "linked device")]
    wrong = add(env, "--mode", "business")
    assert wrong.returncode == 2 and "cloud, personal" in wrong.stderr
    # linking needs the running gateway, and says so
    login = run_cli(env, "channels", "login", "whatsapp", "--url", "ws://127.0.0.1:9", "--wait", "1")
    assert login.returncode == 1 and "start it first" in login.stderr
