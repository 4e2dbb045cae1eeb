"""The real `homarus` command line, run as subprocesses against a temp state dir."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from homarus import __version__
from tests.gateway_process import (
    CLI_TIMEOUT,
    EXIT_TIMEOUT,
    LISTEN_RE,
    GatewayProcess,
    free_port,
    json_out,
    run_cli,
    scrubbed_env,
    start_gateway,
    stop_gracefully,
    write_config,
)
from tests.wsclient import open_client

TOKEN = "cli-test-token-0123456789abcdef"
REDACTED = "__HOMARUS_REDACTED__"
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}


@dataclass
class SharedGateway:
    gw: GatewayProcess
    state_dir: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedGateway]:
    """One gateway started with --token for the read-only probe and call tests."""
    state = tmp_path_factory.mktemp("shared") / "state"
    env = scrubbed_env(state)
    with start_gateway(env, "--token", TOKEN) as gw:
        gw.wait_listening()
        gw.wait_stdout("\nconfig: ")
        yield SharedGateway(gw, state, env)


# -- help and version ---------------------------------------------------------------------
def test_help_lists_commands(tmp_path: Path) -> None:
    result = run_cli(scrubbed_env(tmp_path / "state"), "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: homarus ")
    for command in ("gateway", "health", "doctor", "config"):
        assert re.search(rf"^\s+{command}\s+\S", result.stdout, re.MULTILINE), (command, result.stdout)
    assert result.stderr == ""
    assert not (tmp_path / "state").exists()


def test_help_does_not_import_the_server_stack(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from homarus.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "else:\n"
        "    code = 'no SystemExit'\n"
        "print('PROBE', code, 'starlette' in sys.modules, 'uvicorn' in sys.modules,"
        " 'homarus.gateway' in sys.modules)\n"
    )
    assert _probe_line(probe, tmp_path) == "PROBE 0 False False False"


def _probe_line(probe: str, tmp_path: Path) -> str:
    """The last line ``probe`` prints, run in a fresh interpreter (what it imports is its own)."""
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env=scrubbed_env(tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[-1]


def test_version_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("homarus")
    assert script.exists(), f"console script missing: {script}"
    result = subprocess.run(
        [str(script), "--version"],
        env=scrubbed_env(tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"homarus {__version__}\n"


def test_version_python_m(tmp_path: Path) -> None:
    result = run_cli(scrubbed_env(tmp_path / "state"), "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"homarus {__version__}\n"


def test_no_command_prints_help_and_exits_2(tmp_path: Path) -> None:
    result = run_cli(scrubbed_env(tmp_path / "state"))
    assert result.returncode == 2
    assert result.stdout.startswith("usage: homarus ")


@pytest.mark.parametrize("command", ["gateway", "config"])
def test_group_without_subcommand_exits_2(tmp_path: Path, command: str) -> None:
    result = run_cli(scrubbed_env(tmp_path / "state"), command)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"usage: homarus {command}" in result.stdout + result.stderr


# -- gateway run: HTTP probes ---------------------------------------------------------------
def test_run_prints_listening_and_config_lines(shared: SharedGateway) -> None:
    lines = shared.gw.stdout.splitlines()
    assert LISTEN_RE.match(lines[0]), lines
    assert lines[1] == f"config: {shared.state_dir / 'homarus.json'} (defaults)"
    # An explicit --token is neither generated nor stored, and never echoed.
    assert not (shared.state_dir / "gateway.token").exists()
    assert "gateway token:" not in shared.gw.stdout
    assert TOKEN not in shared.gw.stdout + shared.gw.stderr


@pytest.mark.parametrize("path", ["/health", "/healthz"])
def test_live_probe(shared: SharedGateway, path: str) -> None:
    r = httpx.get(shared.gw.http + path, timeout=5)
    assert r.status_code == 200
    assert r.json() == {"ok": True, "status": "live"}
    assert r.headers["content-type"] == "application/json"
    assert r.headers["cache-control"] == "no-store"
    for name, value in SECURITY_HEADERS.items():
        assert r.headers[name] == value


@pytest.mark.parametrize("path", ["/ready", "/readyz"])
def test_ready_probe(shared: SharedGateway, path: str) -> None:
    r = httpx.get(shared.gw.http + path, timeout=5)
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"ready", "uptimeMs", "failing"}
    assert body["ready"] is True
    assert body["failing"] == []
    assert isinstance(body["uptimeMs"], int) and body["uptimeMs"] >= 0
    assert r.headers["cache-control"] == "no-store"
    for name, value in SECURITY_HEADERS.items():
        assert r.headers[name] == value


@pytest.mark.parametrize("path", ["/health", "/healthz", "/ready", "/readyz"])
def test_head_probe(shared: SharedGateway, path: str) -> None:
    r = httpx.head(shared.gw.http + path, timeout=5)
    assert r.status_code == 200
    assert r.content == b""
    assert r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_probe_wrong_method_is_405(shared: SharedGateway, method: str) -> None:
    r = httpx.request(method, shared.gw.http + "/health", timeout=5)
    assert r.status_code == 405
    assert r.text == "Method Not Allowed"
    assert {m.strip() for m in r.headers["allow"].split(",")} == {"GET", "HEAD"}
    for name, value in SECURITY_HEADERS.items():
        assert r.headers[name] == value


def test_unknown_path_is_404(shared: SharedGateway) -> None:
    page = httpx.get(shared.gw.http + "/no/such/path", timeout=5)  # a GET is the Control UI's page
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    r = httpx.post(shared.gw.http + "/no/such/path", timeout=5)
    assert r.status_code == 404
    assert r.text == "Not Found"
    assert r.headers["content-type"].startswith("text/plain")
    for name, value in SECURITY_HEADERS.items():
        assert r.headers[name] == value


# -- gateway call / health ------------------------------------------------------------------
def test_call_status(shared: SharedGateway) -> None:
    result = run_cli(shared.env, "gateway", "call", "status", "--url", shared.gw.url, "--token", TOKEN)
    assert result.returncode == 0, result.stderr
    status = json_out(result)
    assert status["runtimeVersion"] == __version__
    assert status["gateway"]["port"] == shared.gw.port
    assert status["gateway"]["bind"] == "127.0.0.1"
    assert status["gateway"]["authMode"] == "token"
    assert status["gateway"]["stateDir"] == str(shared.state_dir)
    assert status["gateway"]["pid"] == shared.gw.proc.pid
    assert TOKEN not in result.stdout + result.stderr


def test_call_unknown_method(shared: SharedGateway) -> None:
    result = run_cli(shared.env, "gateway", "call", "nope", "--url", shared.gw.url, "--token", TOKEN)
    assert result.returncode == 1
    out = json_out(result)
    assert out["ok"] is False
    assert out["error"]["code"] == "INVALID_REQUEST"
    assert out["error"]["message"] == "unknown method: nope"


def test_call_params_not_json(shared: SharedGateway) -> None:
    result = run_cli(
        shared.env, "gateway", "call", "status", "--params", "not json", "--url", shared.gw.url, "--token", TOKEN
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("homarus: --params is not valid JSON: ")


def test_call_with_params(shared: SharedGateway) -> None:
    result = run_cli(
        shared.env,
        "gateway",
        "call",
        "health",
        "--params",
        '{"probe": true}',
        "--url",
        shared.gw.url,
        "--token",
        TOKEN,
    )
    assert result.returncode == 0, result.stderr
    assert json_out(result)["ok"] is True


def test_call_wrong_token(shared: SharedGateway) -> None:
    result = run_cli(shared.env, "gateway", "call", "status", "--url", shared.gw.url, "--token", "wrong-token-xyz123")
    assert result.returncode == 1
    out = json_out(result)
    assert out["ok"] is False
    assert out["error"]["code"] == "INVALID_REQUEST"
    assert out["error"]["message"].startswith("unauthorized: gateway token mismatch")
    assert out["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
    assert TOKEN not in result.stdout + result.stderr


def test_health_command(shared: SharedGateway) -> None:
    result = run_cli(shared.env, "health", "--url", shared.gw.url, "--token", TOKEN)
    assert result.returncode == 0, result.stderr
    health = json_out(result)
    assert health["ok"] is True
    assert health["defaultAgentId"] == "main"
    assert [a["agentId"] for a in health["agents"]] == ["main"]


def test_health_uses_config_port_and_token(shared: SharedGateway, tmp_path: Path) -> None:
    """No --url and no --token: both come from the client's config file."""
    state = tmp_path / "client-state"
    assert shared.gw.port is not None
    write_config(state, json.dumps({"gateway": {"port": shared.gw.port, "auth": {"token": TOKEN}}}))
    result = run_cli(scrubbed_env(state), "health")
    assert result.returncode == 0, result.stderr
    assert json_out(result)["ok"] is True


def test_call_nothing_listening(tmp_path: Path) -> None:
    port = free_port()
    url = f"ws://127.0.0.1:{port}"
    started = time.monotonic()
    result = run_cli(
        scrubbed_env(tmp_path / "state"), "gateway", "call", "health", "--url", url, "--token", TOKEN, "--timeout", "5"
    )
    assert time.monotonic() - started < 10
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"homarus: cannot reach the gateway at {url}: ")
    assert "Traceback" not in result.stderr


# -- graceful shutdown ----------------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_signal_sends_shutdown_then_1012(tmp_path: Path, sig: signal.Signals) -> None:
    with start_gateway(scrubbed_env(tmp_path / "state"), "--token", TOKEN) as gw:
        port = await asyncio.to_thread(gw.wait_listening)
        client = await open_client(f"ws://127.0.0.1:{port}")
        try:
            res = await client.handshake(TOKEN)
            assert res["ok"] is True, res
            gw.proc.send_signal(sig)
            event = await client.event("shutdown", timeout=5)
            assert event["type"] == "event"
            assert event["payload"] == {"reason": "gateway stopping", "restartExpectedMs": None}
            assert isinstance(event["seq"], int) and event["seq"] >= 1
            earlier = [e["seq"] for e in client.events if "seq" in e]
            assert all(s < event["seq"] for s in earlier), (earlier, event)
            code, reason = await client.close_info(timeout=5)
            assert (code, reason) == (1012, "service restart")
        finally:
            await client.ws.close()
        started = time.monotonic()
        rc = await asyncio.to_thread(gw.wait_exit, EXIT_TIMEOUT)
        assert time.monotonic() - started < EXIT_TIMEOUT
        assert rc == 0, gw.stderr
        assert "Traceback" not in gw.stderr


def test_sigterm_without_clients_exits_0(tmp_path: Path) -> None:
    with start_gateway(scrubbed_env(tmp_path / "state"), "--token", TOKEN) as gw:
        gw.wait_listening()
        gw.proc.send_signal(signal.SIGTERM)
        assert gw.wait_exit() == 0, gw.stderr
        assert "Traceback" not in gw.stderr


# -- generated token ----------------------------------------------------------------------
def test_generated_token_is_private_reused_and_used_by_call(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = scrubbed_env(state)
    token_path = state / "gateway.token"
    with start_gateway(env) as gw:
        gw.wait_listening()
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
        token = token_path.read_text(encoding="utf-8").strip()
        assert len(token) >= 32
        assert stop_gracefully(gw) == 0, gw.stderr
        assert f"gateway token: generated in {token_path} (mode 0600)\n" in gw.stdout
        assert token not in gw.stdout
        assert token not in gw.stderr

    with start_gateway(env) as gw:
        gw.wait_listening()
        assert token_path.read_text(encoding="utf-8").strip() == token
        call = run_cli(env, "gateway", "call", "health", "--url", gw.url)
        assert call.returncode == 0, call.stderr
        assert json_out(call)["ok"] is True
        assert token not in call.stdout + call.stderr
        # Without the stored token the same call is refused: the gateway really enforces it.
        stranger = run_cli(scrubbed_env(tmp_path / "other"), "gateway", "call", "health", "--url", gw.url)
        assert stranger.returncode == 1
        assert json_out(stranger)["error"]["details"]["code"] == "AUTH_TOKEN_MISSING"
        assert stop_gracefully(gw) == 0, gw.stderr
        assert f"gateway token: stored in {token_path} (mode 0600)\n" in gw.stdout
        assert "gateway token: generated" not in gw.stdout
        assert token not in gw.stdout + gw.stderr
    assert token_path.read_text(encoding="utf-8").strip() == token


def test_config_token_is_not_written_to_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": TOKEN}}}))
    env = scrubbed_env(state)
    with start_gateway(env) as gw:
        gw.wait_listening()
        call = run_cli(env, "gateway", "call", "health", "--url", gw.url)
        assert call.returncode == 0, call.stderr
        assert stop_gracefully(gw) == 0, gw.stderr
    assert not (state / "gateway.token").exists()
    assert "gateway token:" not in gw.stdout
    assert f"config: {state / 'homarus.json'}\n" in gw.stdout
    assert TOKEN not in gw.stdout + gw.stderr


# -- bind policy and bad config -------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "args"),
    [
        ({"gateway": {"auth": {"mode": "none"}}}, ("--bind", "lan")),
        ({"gateway": {"auth": {"mode": "none"}}}, ("--bind", "0.0.0.0")),
        ({"gateway": {"bind": "lan", "auth": {"mode": "none"}}}, ()),
    ],
    ids=["flag-lan", "flag-any", "config-lan"],
)
def test_refuses_unauthenticated_non_loopback(tmp_path: Path, config: dict[str, Any], args: tuple[str, ...]) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps(config))
    result = run_cli(scrubbed_env(state), "gateway", "run", "--port", "0", *args, timeout=10)
    assert result.returncode == 1
    assert "listening" not in result.stdout
    assert "gateway.bind" in result.stderr
    assert "refusing to bind 0.0.0.0" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_bind_value_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli(scrubbed_env(tmp_path / "state"), "gateway", "run", "--port", "0", "--bind", "nowhere", timeout=10)
    assert result.returncode == 2
    assert "listening" not in result.stdout
    assert "Traceback" not in result.stderr
    assert "nowhere" in result.stderr
    assert result.stderr.startswith("homarus: ")


BAD_CONFIGS = [
    pytest.param('{"gateway": {"port": "x"}}', ["gateway.port"], id="wrong-type"),
    pytest.param('{"gateway": {"prot": 18789}}', ["gateway.prot", "unknown key"], id="unknown-key"),
    pytest.param("{gateway: {port: 1,", ["not valid JSON5"], id="bad-json5"),
    pytest.param(
        '{gateway: {auth: {token: "${HOMARUS_CLI_TEST_MISSING_VAR}"}}}',
        ["HOMARUS_CLI_TEST_MISSING_VAR", "gateway.auth.token"],
        id="missing-env",
    ),
]


@pytest.mark.parametrize(("text", "needles"), BAD_CONFIGS)
def test_run_fails_fast_on_bad_config(tmp_path: Path, text: str, needles: list[str]) -> None:
    state = tmp_path / "state"
    path = write_config(state, text)
    started = time.monotonic()
    result = run_cli(scrubbed_env(state), "gateway", "run", "--port", "0", timeout=10)
    assert time.monotonic() - started < 10
    assert result.returncode == 1
    assert "listening" not in result.stdout
    assert result.stderr.startswith(f"homarus: {path}: ")
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)
    assert "Traceback" not in result.stderr
    assert not (state / "gateway.token").exists()


def test_missing_env_var_message_is_exact(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = write_config(state, '{gateway: {auth: {token: "${HOMARUS_CLI_TEST_MISSING_VAR}"}}}')
    result = run_cli(scrubbed_env(state), "config", "validate")
    assert result.returncode == 1
    assert result.stderr == (
        f"homarus: {path}: at gateway.auth.token: environment variable HOMARUS_CLI_TEST_MISSING_VAR is not set\n"
    )


def test_bad_config_named_by_homarus_config(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "custom.json5"
    path.parent.mkdir()
    path.write_text("{gateway: {port: 70000}}", encoding="utf-8")
    env = scrubbed_env(tmp_path / "state", HOMARUS_CONFIG=str(path))
    result = run_cli(env, "gateway", "run", "--port", "0", timeout=10)
    assert result.returncode == 1
    assert result.stderr.startswith(f"homarus: {path}: at gateway.port: ")
    path_result = run_cli(env, "config", "path")
    assert path_result.stdout == f"{path}\n"


@pytest.mark.parametrize(("text", "needles"), BAD_CONFIGS)
def test_config_validate_bad(tmp_path: Path, text: str, needles: list[str]) -> None:
    state = tmp_path / "state"
    path = write_config(state, text)
    result = run_cli(scrubbed_env(state), "config", "validate")
    assert result.returncode == 1
    assert result.stdout == ""
    assert str(path) in result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


# -- config subcommands ---------------------------------------------------------------------
def test_config_path_and_validate(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = scrubbed_env(state)
    path = state / "homarus.json"
    assert run_cli(env, "config", "path").stdout == f"{path}\n"
    absent = run_cli(env, "config", "validate")
    assert (absent.returncode, absent.stdout) == (0, f"ok: {path} (absent: defaults)\n")
    write_config(state, "// comment\n{gateway: {port: 12345, bind: 'loopback'},}\n")
    good = run_cli(env, "config", "validate")
    assert (good.returncode, good.stdout) == (0, f"ok: {path}\n")


def test_config_set_get_unset(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = scrubbed_env(state)
    path = state / "homarus.json"

    result = run_cli(env, "config", "set", "gateway.port", "19999")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"updated: {path}\nrestart the gateway to apply: gateway.port\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text(encoding="utf-8")) == {"gateway": {"port": 19999}}

    got = run_cli(env, "config", "get", "gateway.port")
    assert (got.returncode, got.stdout) == (0, "19999\n")

    again = run_cli(env, "config", "set", "gateway.port", "19999")
    assert (again.returncode, again.stdout) == (0, f"unchanged: {path}\n")

    unset = run_cli(env, "config", "unset", "gateway.port")
    assert unset.returncode == 0, unset.stderr
    assert unset.stdout == f"updated: {path}\nrestart the gateway to apply: gateway.port\n"
    assert json.loads(path.read_text(encoding="utf-8")) == {"gateway": {}}
    assert run_cli(env, "config", "get", "gateway.port").stdout == "18789\n"

    missing = run_cli(env, "config", "get", "gateway.nope")
    assert missing.returncode == 1
    assert missing.stderr == "homarus: no such key: gateway.nope\n"


def test_config_secret_is_redacted(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = scrubbed_env(state)
    secret = "abcdefghijkl"
    result = run_cli(env, "config", "set", "gateway.auth.token", secret)
    assert result.returncode == 0, result.stderr
    assert secret not in result.stdout + result.stderr
    assert json.loads((state / "homarus.json").read_text(encoding="utf-8")) == {"gateway": {"auth": {"token": secret}}}

    whole = run_cli(env, "config", "get")
    assert whole.returncode == 0, whole.stderr
    assert secret not in whole.stdout
    assert json.loads(whole.stdout)["gateway"]["auth"]["token"] == REDACTED

    one = run_cli(env, "config", "get", "gateway.auth.token")
    assert (one.returncode, one.stdout) == (0, f'"{REDACTED}"\n')

    placeholder = run_cli(env, "config", "set", "gateway.auth.token", REDACTED)
    assert placeholder.returncode == 2
    assert json.loads((state / "homarus.json").read_text(encoding="utf-8"))["gateway"]["auth"]["token"] == secret


def test_config_set_invalid_leaves_file_untouched(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = write_config(state, "// hand-written\n{gateway: {port: 19999}}\n")
    before = path.read_bytes()
    for value in ('"oops"', "70000", "[1]"):
        result = run_cli(scrubbed_env(state), "config", "set", "gateway.port", value)
        assert result.returncode == 1, (value, result.stdout)
        assert "gateway.port" in result.stderr
        assert result.stdout == ""
        assert path.read_bytes() == before
    unknown = run_cli(scrubbed_env(state), "config", "set", "gateway.prot", "1")
    assert unknown.returncode == 1
    assert "gateway.prot" in unknown.stderr
    assert path.read_bytes() == before


# -- doctor ---------------------------------------------------------------------------------
def test_doctor_fresh_missing_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = run_cli(scrubbed_env(state), "doctor")
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == f"[ok  ] config absent, using defaults: {state / 'homarus.json'}"
    assert lines[1] == f"[ok  ] state dir {state} does not exist yet (created 0700 on first start)"
    assert "[fail]" not in result.stdout
    assert not state.exists()


def test_doctor_private_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    state.chmod(0o700)
    result = run_cli(scrubbed_env(state), "doctor")
    assert result.returncode == 0, result.stdout
    assert f"[ok  ] state dir {state} is private (mode 700)\n" in result.stdout
    assert f"[warn] no gateway token yet; one is generated into {state / 'gateway.token'}" in result.stdout


def test_doctor_warns_on_world_readable_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o755)
    result = run_cli(scrubbed_env(state), "doctor")
    assert result.returncode == 0, result.stdout
    assert (
        f"[warn] state dir {state} is accessible to group/others (mode 755); run: chmod 700 {state}\n" in result.stdout
    )
    assert "[fail]" not in result.stdout


def test_doctor_fails_on_invalid_config(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = write_config(state, '{"gateway": {"port": "x"}}')
    state.chmod(0o700)
    result = run_cli(scrubbed_env(state), "doctor")
    assert result.returncode == 1
    assert f"[fail] config: {path}: at gateway.port: " in result.stdout


#: one command line per command, parsed alike by the whole parser and by that command's own
PARSED_ALIKE = [
    ["gateway", "run", "--port", "0", "--log-level", "debug"],
    ["gateway", "call", "status", "--params", "{}", "--timeout", "3"],
    ["gateway", "status", "--json"],
    ["health", "--timeout", "2"],
    ["doctor", "--fix", "--yes"],
    ["agent", "-m", "hi", "--session", "s"],
    ["sessions", "show", "k", "--limit", "3"],
    ["config", "set", "gateway.port", "1"],
    ["plugins", "info", "x", "--json"],
    ["logs", "--limit", "5", "--json"],
    ["cron", "list"],
    ["usage", "--days", "7", "--tz", "Europe/Berlin", "--json"],
    ["channels", "status"],
    ["pairing", "list"],
    ["migrate", "openclaw", "--from", "/nowhere"],
    ["devices", "list"],
    ["mcp", "list"],
    ["models", "list"],
    ["onboard", "--provider", "openai"],
    ["memory", "status"],
    ["skills", "list"],
    ["security", "audit", "--json"],
    ["cluster", "status", "--json"],
    ["storage", "migrate", "--from", "embedded", "--to", "postgres", "--dry-run"],
]


def test_each_command_parses_alike_with_only_its_own_parser() -> None:
    from homarus.cli.main import COMMAND_NAMES, build_parser

    assert sorted(argv[0] for argv in PARSED_ALIKE if argv[0] != "gateway" or argv[1] == "run") == sorted(COMMAND_NAMES)
    full = build_parser()
    for argv in PARSED_ALIKE:
        own = build_parser(argv[0])
        assert vars(own.parse_args(argv)) == vars(full.parse_args(argv)), argv


def test_gateway_run_builds_no_other_command(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from homarus.cli.main import build_parser\n"
        "build_parser('gateway').parse_args(['gateway', 'run'])\n"
        "print('PROBE', sorted(m for m in sys.modules if m.startswith('homarus.cli.') and m.endswith('_cmd')))\n"
    )
    assert _probe_line(probe, tmp_path) == "PROBE ['homarus.cli.service_cmd']"


def test_help_lists_every_command_without_importing_one(tmp_path: Path) -> None:
    probe = (
        "import contextlib, io, sys\n"
        "from homarus.cli.main import COMMAND_NAMES, main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "listed = all(f'    {name} ' in out.getvalue() for name in COMMAND_NAMES)\n"
        "cmds = sorted(m for m in sys.modules if m.startswith('homarus.cli.') and m.endswith('_cmd'))\n"
        "print('PROBE', listed, cmds)\n"
    )
    assert _probe_line(probe, tmp_path) == "PROBE True []"
