"""`homarus onboard` against loopback fake providers speaking the OpenAI and Anthropic wire
formats: driven by its flags, and by answers typed into a real pseudo-terminal. A wrong key, a
model the provider does not have, a server that is not there: one sentence, nothing written. An
existing config is shown as a diff and replaced only when confirmed (the old one kept)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import json5
import pexpect
import pytest

from homarus.config.backups import list_backups
from tests.fakes.llm_server import FakeLLM, run_fake_llm
from tests.fakes.systemctl import install_fake_systemd

KEY = "sk-test-onboard-7c1f"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with run_fake_llm(("gpt-small", "gpt-large")) as fake:
        fake.required_key = KEY
        yield fake


def _env(state: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("HOMARUS_CONFIG", None)
    return {**env, "HOMARUS_STATE_DIR": str(state), **extra}


def _onboard(state: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "homarus", "onboard", "--non-interactive", "--no-channel", *args],
        env=_env(state, **env), input=stdin, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _homarus(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "homarus", *args], env=_env(state), capture_output=True, text=True, timeout=120
    )


def test_flags_set_up_a_working_model_and_store_the_key_apart(tmp_path: Path, llm: FakeLLM) -> None:
    state = tmp_path / "state"
    done = _onboard(state, "--provider", "custom", "--base-url", llm.base_url, "--api-key", "-", "--model", "gpt-small",
                    stdin=KEY + "\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr  # never echoed
    text = (state / "homarus.json").read_text()
    assert text.startswith("// Homarus config") and KEY not in text and "${CUSTOM_API_KEY}" in text
    data = json5.loads(text)
    assert data["agents"]["defaults"]["model"]["primary"] == "custom/gpt-small"
    secrets = state / "secrets.env"
    assert f"CUSTOM_API_KEY={KEY}" in secrets.read_text() and oct(secrets.stat().st_mode & 0o777) == "0o600"
    assert (state / "workspace" / "AGENTS.md").is_file()
    assert "homarus gateway run" in done.stdout
    chat = [r for r in llm.requests if r.path.endswith("/chat/completions")]
    assert len(chat) == 1 and chat[0].json["model"] == "gpt-small"  # the round trip
    tested = _homarus(state, "models", "test")  # the config works from the secrets file alone
    assert tested.returncode == 0 and tested.stdout.startswith("ok  custom/gpt-small"), tested.stderr


def test_anthropic_wire(tmp_path: Path) -> None:
    with run_fake_llm(("claude-fake-1",)) as fake:
        fake.required_key = KEY
        base = fake.base_url.removesuffix("/v1")
        done = _onboard(tmp_path, "--provider", "anthropic", "--base-url", base, "--api-key-env", "MY_CLAUDE",
                        "--model", "claude-fake-1", MY_CLAUDE=KEY)  # fmt: skip
        assert done.returncode == 0, done.stderr
        paths = [r.path for r in fake.requests]
        assert paths == ["/v1/models", "/v1/messages"] and fake.requests[0].headers["x-api-key"] == KEY
    data = json5.loads((tmp_path / "homarus.json").read_text())
    assert data["models"]["providers"]["anthropic"]["apiKey"] == "${MY_CLAUDE}"
    assert not (tmp_path / "secrets.env").exists()  # the variable is already the user's: nothing copied


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--api-key", "sk-wrong", "--model", "gpt-small"], "refused the key (HTTP 401)"),
        (["--api-key", KEY, "--model", "gpt-huge"], "does not offer 'gpt-huge'"),
        (["--api-key", KEY], "--model is needed"),
    ],
)
def test_bad_answers_write_nothing(tmp_path: Path, llm: FakeLLM, args: list[str], says: str) -> None:
    done = _onboard(tmp_path, "--provider", "custom", "--base-url", llm.base_url, *args)
    assert done.returncode == 1 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_server_that_is_not_there(tmp_path: Path) -> None:
    done = _onboard(tmp_path, "--provider", "ollama", "--base-url", "http://127.0.0.1:9/v1", "--model", "llama3")
    assert done.returncode == 1 and "nothing answers at http://127.0.0.1:9/v1" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "homarus.json").exists()


def test_an_existing_config_needs_yes_and_is_kept(tmp_path: Path, llm: FakeLLM) -> None:
    mine = "// mine\n{ gateway: { port: 18555 } }\n"
    (tmp_path / "homarus.json").write_text(mine)
    common = ["--provider", "custom", "--base-url", llm.base_url, "--api-key", KEY, "--model", "gpt-large"]
    refused = _onboard(tmp_path, *common)
    assert refused.returncode == 1 and "left as it is" in refused.stderr
    assert "+  // Model providers" in refused.stdout  # the diff was shown
    assert (tmp_path / "homarus.json").read_text() == mine and not (tmp_path / "secrets.env").exists()
    done = _onboard(tmp_path, *common, "--yes")
    assert done.returncode == 0, done.stderr
    data = json5.loads((tmp_path / "homarus.json").read_text())
    assert data["gateway"]["port"] == 18555 and data["agents"]["defaults"]["model"]["primary"] == "custom/gpt-large"
    assert list_backups(tmp_path / "homarus.json")[0].path.read_text() == mine


def test_typed_into_a_terminal(tmp_path: Path, llm: FakeLLM) -> None:
    """The interactive path: numbered choices, the key typed without echo, Enter for defaults."""
    child = pexpect.spawn(
        sys.executable, ["-m", "homarus", "onboard"], env=_env(tmp_path), encoding="utf-8", timeout=60
    )
    transcript: list[str] = []
    child.logfile_read = _Collect(transcript)
    try:
        child.expect("Model provider")
        child.sendline("7")  # another OpenAI-compatible URL
        child.expect("API URL")
        child.sendline(llm.base_url)
        child.expect(r"API key \(hidden\)")
        child.sendline(KEY)
        child.expect(r"Model \(number or id\)")
        child.sendline("2")  # the list is sorted: gpt-large, gpt-small
        child.expect("Discord")
        child.sendline("n")
        child.expect("Slack")
        child.sendline("n")
        child.expect("Telegram")
        child.sendline("n")
        child.expect("WhatsApp")
        child.sendline("n")
        if child.expect([pexpect.EOF, "in the background now"]) == 1:  # a machine with a user manager asks
            child.sendline("n")
            child.expect(pexpect.EOF)
    finally:
        child.close()
    seen = "".join(transcript)
    assert child.exitstatus == 0, seen
    assert KEY not in seen  # typed without echo
    assert "gpt-small answered" in seen, seen
    assert json5.loads((tmp_path / "homarus.json").read_text())["agents"]["defaults"]["model"]["primary"] == (
        "custom/gpt-small"
    )


def test_ctrl_c_in_the_terminal_leaves_everything(tmp_path: Path, llm: FakeLLM) -> None:
    (tmp_path / "homarus.json").write_text('{ "gateway": { "port": 18556 } }')
    child = pexpect.spawn(
        sys.executable, ["-m", "homarus", "onboard"], env=_env(tmp_path), encoding="utf-8", timeout=60
    )
    try:
        child.expect("Model provider")
        child.sendline("custom")
        child.expect("API URL")
        child.sendline(llm.base_url)
        child.expect(r"API key \(hidden\)")
        child.sendintr()
        child.expect("nothing was written")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 130
    assert json.loads((tmp_path / "homarus.json").read_text()) == {"gateway": {"port": 18556}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["homarus.json"]


class _Collect:
    def __init__(self, sink: list[str]) -> None:
        self.sink = sink

    def write(self, data: str) -> None:
        self.sink.append(data)

    def flush(self) -> None:
        return None


def test_onboard_then_the_service(tmp_path: Path, llm: FakeLLM) -> None:
    """--install-service: the wizard ends with the gateway running as a (stand-in) systemd service."""
    install_fake_systemd(tmp_path / "bin")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = tmp_path / "state"
    state.mkdir()
    (state / "homarus.json").write_text(json.dumps({"gateway": {"port": port}}))
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "FAKE_SYSTEMD_DIR": str(tmp_path / "systemd")}  # fmt: skip
    try:
        done = _onboard(state, "--provider", "custom", "--base-url", llm.base_url, "--api-key", KEY,
                        "--model", "gpt-small", "--yes", "--install-service", **env)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"http://127.0.0.1:{port}/health answers" in done.stdout
        assert 'Next: homarus agent -m "Hello!"' in done.stdout
    finally:
        stop = [str(tmp_path / "bin" / "systemctl"), "--user", "stop", "homarus-gateway.service"]
        subprocess.run(stop, env={**_env(state), **env}, check=False)


def test_the_diff_never_shows_a_secret(tmp_path: Path, llm: FakeLLM) -> None:
    """Red team (issue: onboard --yes printed a botToken line): both sides of the diff are masked."""
    old_token = "123456:OLD-secret-bot-token-abcdefghijkl"
    (tmp_path / "homarus.json").write_text(
        json.dumps({"channels": {"telegram": {"botToken": old_token, "enabled": False}}})
    )
    common = ["--provider", "custom", "--base-url", llm.base_url, "--api-key", KEY, "--model", "gpt-large"]
    done = _onboard(tmp_path, *common, "--yes")
    assert done.returncode == 0, done.stderr
    assert "botToken" in done.stdout and old_token not in done.stdout and KEY not in done.stdout
    assert "__HOMARUS_REDACTED__" in done.stdout
