"""`homarus agent -m ...` as a subprocess: in-process (--local and the automatic fallback), through
a gateway subprocess, failing models, an unreachable --url, and the built-in echo model.

Every child gets a scrubbed environment (no HOMARUS_* from the caller) and its own temp state dir;
every wait has a timeout and every gateway child is killed on exit (``start_gateway``).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from homarus.sessions.store import SessionStore
from tests.gateway_process import free_port, json_out, run_cli, scrubbed_env, start_gateway, write_config

PROMPT = "What time is it?"
REPLY = "It is time for a well-deserved break."
AGENT_TIMEOUT = "15"  # the CLI's own --timeout for a run through the gateway, in seconds
TOOL_START = "[tool] current_time {}"
TOOL_RESULT_RE = re.compile(r"^\[tool\] current_time → ok \(\d+ ms\)$", re.MULTILINE)


def tool_then_reply_config(port: int | None = None) -> dict[str, Any]:
    """A scripted provider that calls `current_time` once, then replies; selected as the default model."""
    config: dict[str, Any] = {
        "models": {
            "providers": {
                "script": {
                    "api": "scripted",
                    "script": [
                        {"toolCalls": [{"name": "current_time", "arguments": {}}]},
                        {"reply": REPLY},
                    ],
                }
            }
        },
        "agents": {"defaults": {"model": "script/clock"}},
    }
    if port is not None:
        config["gateway"] = {"port": port}
    return config


def failing_config(port: int | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "models": {"providers": {"broken": {"api": "scripted", "script": [{"fail": "boom", "status": 401}]}}},
        "agents": {"defaults": {"model": "broken/model"}},
    }
    if port is not None:
        config["gateway"] = {"port": port}
    return config


def transcript_messages(state: Path, session_key: str = "agent:main:main") -> list[dict[str, Any]]:
    """The messages in the session's transcript, checked against its session entry."""
    sessions = state / "agents" / "main" / "sessions"
    entries = SessionStore(sessions).read()
    entry = entries[session_key]
    files = sorted(sessions.glob("*.jsonl"))
    assert [f.name for f in files] == [f"{entry['sessionId']}.jsonl"], files
    lines = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "session"
    assert lines[0]["id"] == entry["sessionId"]
    return [e["message"] for e in lines[1:] if e.get("type") == "message"]


def assert_tool_turn_stored(state: Path) -> None:
    messages = transcript_messages(state)
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"], messages
    user, call, result, answer = messages
    assert user["content"] == PROMPT
    calls = [b for b in call["content"] if b["type"] == "toolCall"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("current_time", {})]
    assert call["stopReason"] == "toolUse"
    assert result["toolCallId"] == calls[0]["id"]
    assert result["toolName"] == "current_time"
    assert result["isError"] is False
    assert result["content"][0]["text"].strip()
    assert [b["text"] for b in answer["content"] if b["type"] == "text"] == [REPLY]
    assert answer["stopReason"] == "stop"


def assert_tool_turn_output(stdout: str, stderr: str) -> None:
    assert stdout == f"{REPLY}\n"
    assert TOOL_START in stderr.splitlines(), stderr
    result_line = TOOL_RESULT_RE.search(stderr)
    assert result_line is not None, stderr
    assert stderr.index(TOOL_START) < result_line.start()
    assert "Traceback" not in stderr


@contextmanager
def silent_listener() -> Iterator[socket.socket]:
    """A loopback TCP socket that listens but never accepts: a connection attempt stays queued."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock
    finally:
        sock.close()


def connection_attempted(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


# -- in-process -------------------------------------------------------------------------------
def test_local_runs_in_process_and_never_dials_the_gateway(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with silent_listener() as listener:
        port = int(listener.getsockname()[1])
        write_config(state, json.dumps(tool_then_reply_config(port)))
        result = run_cli(scrubbed_env(state), "agent", "-m", PROMPT, "--local")
        assert not connection_attempted(listener), "--local must not connect to the configured gateway port"
    assert result.returncode == 0, result.stderr
    assert_tool_turn_output(result.stdout, result.stderr)
    assert_tool_turn_stored(state)


def test_falls_back_in_process_when_no_gateway_listens(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps(tool_then_reply_config(free_port())))
    result = run_cli(scrubbed_env(state), "agent", "-m", PROMPT)
    assert result.returncode == 0, result.stderr
    assert_tool_turn_output(result.stdout, result.stderr)
    assert "cannot reach" not in result.stderr
    assert_tool_turn_stored(state)


# -- through a gateway ------------------------------------------------------------------------
def test_through_a_running_gateway(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps(tool_then_reply_config()))
    env = scrubbed_env(state)
    with start_gateway(env) as gw:  # no --token: it generates one into the state dir, which the CLI reads
        gw.wait_listening()
        assert (state / "gateway.token").exists()
        result = run_cli(env, "agent", "-m", PROMPT, "--url", gw.url, "--timeout", AGENT_TIMEOUT)
        assert result.returncode == 0, (result.stderr, gw.stderr)
        assert_tool_turn_output(result.stdout, result.stderr)

        listed = run_cli(env, "gateway", "call", "sessions.list", "--url", gw.url)
        assert listed.returncode == 0, listed.stderr
        rows = {row["key"]: row for row in json_out(listed)["sessions"]}
        assert set(rows) == {"agent:main:main"}, rows
        row = rows["agent:main:main"]
        assert row["status"] == "done"
        assert (row["modelProvider"], row["model"]) == ("script", "clock")
        stored = SessionStore(state / "agents" / "main" / "sessions").read()
        assert row["sessionId"] == stored["agent:main:main"]["sessionId"]
    assert_tool_turn_stored(state)
    assert "Traceback" not in gw.stderr


# -- failures ---------------------------------------------------------------------------------
def test_failing_model_in_process_exits_1(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps(failing_config(free_port())))
    result = run_cli(scrubbed_env(state), "agent", "-m", "hi", "--local")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == "homarus: run failed: boom\n"


def test_failing_model_through_the_gateway_exits_1(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps(failing_config()))
    env = scrubbed_env(state)
    with start_gateway(env) as gw:
        gw.wait_listening()
        result = run_cli(env, "agent", "-m", "hi", "--url", gw.url, "--timeout", AGENT_TIMEOUT)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == "homarus: run failed: boom\n"
    assert "Traceback" not in gw.stderr


def test_url_with_nothing_listening_exits_1_without_running(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps(tool_then_reply_config()))
    url = f"ws://127.0.0.1:{free_port()}"
    result = run_cli(scrubbed_env(state), "agent", "-m", PROMPT, "--url", url, "--timeout", AGENT_TIMEOUT)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith(f"homarus: cannot reach the gateway at {url}: "), result.stderr
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert not (state / "agents").exists(), "an explicit --url must never fall back to an in-process run"


# -- no config at all -------------------------------------------------------------------------
def test_default_echo_model_without_config(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = run_cli(scrubbed_env(state), "agent", "-m", "hello homarus", "--local")
    assert result.returncode == 0, result.stderr
    assert "You said: hello homarus" in result.stdout
    assert result.stdout.endswith("\n")
    assert "[tool]" not in result.stderr
    assert not (state / "homarus.json").exists()
    messages = transcript_messages(state)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert (messages[1]["provider"], messages[1]["model"]) == ("homarus", "echo")
