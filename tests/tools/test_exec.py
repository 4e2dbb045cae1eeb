"""The ``exec`` / ``process`` tools: deny default, allowlist parsing, host backend, background processes.

Commands that must be refused only ever try to ``touch ran`` in a temporary workspace, and each
test checks that the file does not exist afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from homarus.messages import TextContent
from homarus.plugins import events as ev
from homarus.plugins.runner import HookRegistration, HookRunner
from homarus.security.approvals import ApprovalOutcome
from homarus.tools.base import Tool, ToolContext, ToolResult, ToolServices
from homarus.tools.exec import DISABLED_MESSAGE, MAX_RESULT_CHARS, check_env, make_exec_tools, render
from homarus.tools.exec_policy import ExecPolicy, plan_exec
from homarus.tools.process import ExecResult, HostBackend

REDTEAM = Path(__file__).resolve().parents[3] / "shared/reference/redteam-public.jsonl"
SESSION = "agent:main:main"


def _exec_rows() -> list[dict[str, Any]]:
    if not REDTEAM.exists():
        return []
    rows = [json.loads(line) for line in REDTEAM.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("target") == "exec" and "command" in r.get("input", {})]


EXEC_ROWS = _exec_rows()


class Harness:
    def __init__(self, ws: Path, policy: ExecPolicy, backend: HostBackend) -> None:
        self.ws = ws
        self.policy = policy
        self.backend = backend
        self.exec_tool, self.process_tool = make_exec_tools(policy, backend)
        self.services: dict[str, Any] = {}

    def ctx(self, session_key: str = SESSION, abort: asyncio.Event | None = None) -> ToolContext:
        ctx = ToolContext(session_key, "main", "run-1", "call-1", self.ws, services=ToolServices(**self.services))
        if abort is not None:
            ctx.abort = abort
        return ctx

    async def exec(self, command: str, *, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
        return await self.exec_tool.execute(ctx or self.ctx(), {"command": command, **args})

    async def process(self, action: str, session_key: str = SESSION, **args: Any) -> ToolResult:
        return await self.process_tool.execute(self.ctx(session_key), {"action": action, **args})


def text_of(result: ToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


async def eventually(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.02)
    return check()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
async def make(ws: Path) -> AsyncIterator[Callable[..., Harness]]:
    backends: list[HostBackend] = []

    def factory(security: str = "full", allowlist: tuple[str, ...] = (), **kw: Any) -> Harness:
        policy = ExecPolicy(security, allowlist, **{"ask": "off", **kw})  # type: ignore[arg-type]
        backend = HostBackend(max_output_bytes=policy.max_output_bytes, max_background=policy.max_background)
        backends.append(backend)
        return Harness(ws, policy, backend)

    yield factory
    for backend in backends:
        await backend.aclose()


# -- deny (the default) ----------------------------------------------------------------------------
async def test_default_policy_denies_and_runs_nothing(ws: Path) -> None:
    exec_tool, _ = make_exec_tools()
    result = await exec_tool.execute(ToolContext(SESSION, "main", "r", "c", ws), {"command": "touch ran"})
    assert result.is_error
    assert text_of(result) == DISABLED_MESSAGE
    assert text_of(result).startswith("exec is disabled: set tools.exec.security")
    assert "exec denied" in text_of(result)
    assert not (ws / "ran").exists()
    assert "disabled" in exec_tool.description


def test_policy_rejects_unknown_security() -> None:
    with pytest.raises(ValueError):
        ExecPolicy("yolo")  # type: ignore[arg-type]


def test_tool_shapes() -> None:
    exec_tool, process_tool = make_exec_tools()
    assert (exec_tool.name, process_tool.name) == ("exec", "process")
    props = exec_tool.parameters["properties"]
    assert set(props) == {"command", "workdir", "timeout_seconds", "background", "env"}
    assert exec_tool.parameters["required"] == ["command"]
    assert process_tool.parameters["properties"]["action"]["enum"] == ["list", "poll", "log", "write", "kill"]
    assert "dangerous" in exec_tool.tags


# -- allowlist: parsed commands, approvals ---------------------------------------------------------
class Approver:
    """Plays the operator: records each request and answers with ``decision`` (None: no answer)."""

    def __init__(self, decision: str | None, reason: str = "resolved") -> None:
        self.decision = decision
        self.reason = reason
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, request: dict[str, Any], timeout_ms: int, abort: asyncio.Event | None) -> ApprovalOutcome:
        self.requests.append(request)
        return ApprovalOutcome(f"ap-{len(self.requests)}", self.decision, self.reason, "tester")  # type: ignore[arg-type]


async def test_allowlist_accepts_simple_command(make: Callable[..., Harness], ws: Path) -> None:
    h = make("allowlist", ("ls",))
    (ws / "hello.txt").write_text("x")
    result = await h.exec("ls -la")
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("Exit code: 0")
    assert "hello.txt" in text_of(result)


async def test_allowlist_runs_chains_and_safe_bin_pipes(make: Callable[..., Harness], ws: Path) -> None:
    h = make("allowlist", ("ls", "echo"))
    (ws / "a.txt").write_text("x")
    result = await h.exec("ls && echo done | wc -l")
    assert text_of(result) == "Exit code: 0\na.txt\n1", text_of(result)


@pytest.mark.parametrize(
    "command",
    [
        "ls; rm -rf ran",
        "ls && touch ran",
        "ls || touch ran",
        "ls | sh -c 'touch ran'",
        "ls > ran",
        "echo $(touch ran)",
        'ls "$(touch ran)"',
        "ls `touch ran`",
        "(touch ran)",
        "ls & touch ran",
        "ls\ntouch ran",
        "./ls -la",
        "\u217cs -la",
        "LD_PRELOAD=/tmp/evil.so ls",
        "env touch ran",
        "bash -c 'touch ran'",
        "nice -n 5 touch ran",
        "ls 'unterminated",
    ],
)
async def test_allowlist_refuses_without_an_operator(make: Callable[..., Harness], ws: Path, command: str) -> None:
    h = make("allowlist", ("ls", "echo", "env", "bash", "nice", "sh"))
    plan = plan_exec(command, h.policy, str(ws))
    assert plan.action == "deny" and (plan.reason or "").startswith("exec denied"), plan
    result = await h.exec(command)
    assert result.is_error and text_of(result).startswith("exec denied"), text_of(result)
    assert result.details["status"] == "denied"
    assert not (ws / "ran").exists()


async def test_allowlist_runs_what_was_analysed(make: Callable[..., Harness], ws: Path) -> None:
    h = make("allowlist", ("echo",))
    result = await h.exec("echo '$(id)' \\; 'a  b' #; touch ran")
    assert text_of(result) == "Exit code: 0\n$(id) ; a  b"
    plan = plan_exec("echo '*' x", h.policy, str(ws))
    assert plan.command.startswith(("'/usr/bin/echo'", "/usr/bin/echo", "/bin/echo")), plan.command
    assert not (ws / "ran").exists()


async def test_a_miss_asks_and_runs_only_once_allowed(make: Callable[..., Harness], ws: Path) -> None:
    h = make("allowlist", ("ls",), ask="on-miss")
    h.services["exec_approvals"] = deny = Approver("deny")
    denied = await h.exec("touch ran")
    assert denied.is_error and "an operator (tester) denied" in text_of(denied)
    assert denied.details["approvalId"] == "ap-1" and not (ws / "ran").exists()
    request = deny.requests[0]
    assert request["command"] == "touch ran" and request["cwd"] == str(ws.resolve())
    assert request["sessionKey"] == SESSION and request["runId"] == "run-1" and request["host"] == "gateway"
    assert request["allowAlwaysPatterns"] == [os.path.realpath("/usr/bin/touch")]
    assert request["reason"].startswith("exec denied: allowlist miss")
    h.services["exec_approvals"] = allow = Approver("allow-once")
    ran = await h.exec("touch ran", env={"X_FLAG": "1"})
    assert not ran.is_error and (ws / "ran").exists()
    assert ran.details["approval"] == "allow-once" and allow.requests[0]["envKeys"] == ["X_FLAG"]
    assert not (await h.exec("ls")).is_error and len(allow.requests) == 1  # a hit asks nobody


@pytest.mark.parametrize(
    ("reason", "fallback", "expected"),
    [
        ("timeout", "full", "the approval request timed out"),
        ("cancelled", "full", "the run was aborted"),
        ("no-approval-route", "deny", "no approver is reachable (askFallback=deny)"),
        ("no-approval-route", "allowlist", "no approver is reachable (askFallback=allowlist)"),
        ("no-approval-route", "full", None),
    ],
)
async def test_no_decision(
    make: Callable[..., Harness], ws: Path, reason: str, fallback: str, expected: str | None
) -> None:
    h = make("allowlist", ("ls",), ask="on-miss", ask_fallback=fallback)
    h.services["exec_approvals"] = Approver(None, reason)
    result = await h.exec("touch ran")
    if expected is None:
        assert not result.is_error and (ws / "ran").exists()
    else:
        assert result.is_error and expected in text_of(result) and not (ws / "ran").exists()


async def test_ask_always_asks_even_for_hits(make: Callable[..., Harness], ws: Path) -> None:
    h = make("allowlist", ("ls",), ask="always")
    h.services["exec_approvals"] = approver = Approver("deny")
    assert (await h.exec("ls")).is_error and len(approver.requests) == 1


async def test_approvals_file_tightens_and_extends(make: Callable[..., Harness], ws: Path, tmp_path: Path) -> None:
    from homarus.security.exec_approvals_file import ExecApprovalsFile, ExecPolicySettings, add_patterns, save

    path = tmp_path / "state" / "exec-approvals.json"
    h = make("full", approvals_file=path)
    save(path, ExecApprovalsFile(ExecPolicySettings("allowlist", "off", "deny")))
    assert (await h.exec("touch ran")).is_error  # the file's allowlist beats the config's full
    add_patterns(path, [os.path.realpath("/usr/bin/touch")])  # as allow-always persists them
    assert not (await h.exec("touch ran")).is_error and (ws / "ran").exists()
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    untrusted = await h.exec("echo hi")
    assert untrusted.is_error and "deny" in text_of(untrusted)  # deny/always/deny


@pytest.mark.parametrize("row", EXEC_ROWS, ids=[r["id"] for r in EXEC_ROWS])
async def test_redteam_exec_rows(row: dict[str, Any], make: Callable[..., Harness], ws: Path) -> None:
    """Each row end to end through the tool: allowed rows run, others reach an operator (who denies)."""
    config = row["input"]["config"] or ""
    command = row["input"]["command"]
    if config.startswith("security=deny"):
        h = make("deny")
    else:
        h = make("allowlist", ("/usr/bin/ls", "/usr/bin/git"), ask="on-miss", ask_fallback="deny")
    h.services["exec_approvals"] = approver = Approver("deny")
    result = await h.exec(command)
    expected = row["expect"]["result"]
    if expected == "allow":
        assert not result.is_error, text_of(result)
        assert not approver.requests
    else:
        assert result.is_error and text_of(result).startswith(("exec denied", "exec is disabled"))
        asked = bool(approver.requests)
        assert asked == (expected == "require_approval"), (asked, text_of(result))
        if "error" in row["expect"]:
            assert row["expect"]["error"] in (plan_exec(command, h.policy, str(ws)).reason or "")


# -- full: the host backend ------------------------------------------------------------------------
async def test_full_runs_and_captures(make: Callable[..., Harness]) -> None:
    h = make()
    ok = await h.exec("echo hi")
    assert text_of(ok) == "Exit code: 0\nhi"
    assert not ok.is_error
    assert ok.details["exitCode"] == 0 and ok.details["status"] == "completed"
    failed = await h.exec("echo out; echo oops >&2; exit 3")
    assert text_of(failed) == "Exit code: 3\nout\n[stderr]\noops"
    assert failed.details["exitCode"] == 3
    quiet = await h.exec("true")
    assert text_of(quiet) == "Exit code: 0\n(no output)"
    missing = await h.exec("definitely-not-a-command-xyz")
    assert missing.details["exitCode"] == 127
    signalled = await h.exec("kill -TERM $$")
    assert text_of(signalled).startswith("Killed by signal 15")


async def test_output_is_bounded_with_a_note(make: Callable[..., Harness]) -> None:
    h = make(max_output_bytes=1000)
    result = await h.exec("head -c 300000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero | tr '\\0' b >&2")
    assert result.details["truncated"] is True
    text = text_of(result)
    assert "bytes omitted: the output was 300,000 bytes, over 1,000" in text
    assert "the output was 5,000 bytes" in text
    kept = {ch: sum(len(line) for line in text.splitlines() if set(line) == {ch}) for ch in "ab"}
    assert kept == {"a": 1000, "b": 1000}


async def test_backend_bounds_each_stream_head_and_tail(ws: Path) -> None:
    backend = HostBackend(max_output_bytes=100)
    result = await backend.run("printf 'HEAD'; head -c 10000 /dev/zero | tr '\\0' x; printf 'TAIL'", str(ws), {}, 10)
    assert result.truncated and result.exit_code == 0
    assert result.stdout.startswith("HEAD") and result.stdout.endswith("TAIL")
    assert len(result.stdout) < 200


def test_render_keeps_status_and_stderr_within_budget() -> None:
    big = ExecResult(0, "o" * 500_000, "e" * 500_000)
    text = render(big, 60)
    assert text.startswith("Exit code: 0")
    assert len(text) < MAX_RESULT_CHARS + 500
    assert "[stderr]" in text and "characters omitted" in text


async def test_timeout_kills_the_whole_process_group(make: Callable[..., Harness]) -> None:
    h = make()
    started = time.monotonic()
    result = await h.exec("sh -c 'sleep 30 & echo $!; echo $$; sleep 30'", timeout_seconds=1)
    assert time.monotonic() - started < 8
    assert result.is_error and result.details["status"] == "timeout"
    assert text_of(result).startswith("Timed out after 1 s")
    pids = [int(line) for line in text_of(result).splitlines()[1:3]]
    assert len(pids) == 2
    assert await eventually(lambda: all(gone(p) for p in pids)), [psutil.Process(p) for p in pids if not gone(p)]


async def test_leftover_children_are_killed_when_the_command_exits(make: Callable[..., Harness]) -> None:
    h = make()
    started = time.monotonic()
    result = await h.exec("sleep 30 & echo $!", timeout_seconds=20)
    assert time.monotonic() - started < 8
    assert result.details["exitCode"] == 0
    pid = int(text_of(result).splitlines()[1])
    assert await eventually(lambda: gone(pid))


async def test_abort_kills(make: Callable[..., Harness]) -> None:
    h = make()
    abort = asyncio.Event()
    task = asyncio.create_task(
        h.exec("sh -c 'sleep 30 & echo $!; echo $$; sleep 30'", ctx=h.ctx(abort=abort), timeout_seconds=30)
    )
    await asyncio.sleep(0.5)
    abort.set()
    result = await asyncio.wait_for(task, 10)
    assert result.is_error and result.details["status"] == "aborted"
    assert text_of(result).startswith("Aborted")
    pids = [int(line) for line in text_of(result).splitlines()[1:3]]
    assert await eventually(lambda: all(gone(p) for p in pids))
    assert (await h.exec("echo never", ctx=h.ctx(abort=abort))).details["status"] == "aborted"


async def test_cancelling_the_call_kills_the_group(make: Callable[..., Harness], ws: Path) -> None:
    h = make()
    task = asyncio.create_task(h.exec("echo $$ > pid; sleep 30 & echo $! > child; wait", timeout_seconds=30))
    assert await eventually(lambda: (ws / "child").exists() and (ws / "child").read_text().strip() != "")
    pids = [int((ws / name).read_text()) for name in ("pid", "child")]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await eventually(lambda: all(gone(p) for p in pids))


# -- workdir ---------------------------------------------------------------------------------------
async def test_workdir_is_bounded_to_the_workspace(make: Callable[..., Harness], ws: Path, tmp_path: Path) -> None:
    h = make()
    (ws / "sub").mkdir()
    inside = await h.exec("pwd", workdir="sub")
    assert text_of(inside) == f"Exit code: 0\n{os.path.realpath(ws / 'sub')}"
    assert text_of(await h.exec("pwd")) == f"Exit code: 0\n{os.path.realpath(ws)}"
    (tmp_path / "outside").mkdir()
    (ws / "link").symlink_to(tmp_path / "outside")
    for workdir in ("..", "../outside", "/etc", str(tmp_path), "link", "sub/../../outside"):
        result = await h.exec("touch escaped", workdir=workdir)
        assert result.is_error, workdir
        assert "escapes sandbox root" in text_of(result), text_of(result)
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "outside" / "escaped").exists()
    missing = await h.exec("pwd", workdir="nope")
    assert missing.is_error and "workdir not found" in text_of(missing)
    (ws / "file").write_text("x")
    not_dir = await h.exec("pwd", workdir="file")
    assert not_dir.is_error and "not a directory" in text_of(not_dir)


# -- environment -----------------------------------------------------------------------------------
async def test_environment_is_minimal(make: Callable[..., Harness], ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOMARUS_TEST_SECRET", "s3cret")
    h = make()
    result = await h.exec("env", env={"FOO": "bar baz", "lang_extra": "1"})
    env = dict(line.split("=", 1) for line in text_of(result).splitlines()[1:] if "=" in line)
    assert env["FOO"] == "bar baz" and env["lang_extra"] == "1"
    assert env["HOME"] == os.path.realpath(ws)
    assert env["PATH"] == h.policy.path
    assert env["LANG"] == "C.UTF-8"
    assert "HOMARUS_TEST_SECRET" not in env and "s3cret" not in text_of(result)
    assert set(env) <= {"FOO", "lang_extra", "HOME", "PATH", "LANG", "PWD", "SHLVL", "_", "OLDPWD"}


@pytest.mark.parametrize(
    "key",
    [
        "PATH",
        "path",
        "HOME",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "DYLD_INSERT_LIBRARIES",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "http_proxy",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "NODE_OPTIONS",
        "BASH_ENV",
        "ENV",
        "IFS",
        "GIT_SSH_COMMAND",
        "SSL_CERT_FILE",
        "bad-key",
        "1ABC",
        "",
    ],
)
async def test_environment_refuses_dangerous_keys(make: Callable[..., Harness], ws: Path, key: str) -> None:
    h = make()
    result = await h.exec("touch ran", env={key: "x"})
    assert result.is_error
    assert "env key" in text_of(result)
    assert not (ws / "ran").exists()


def test_check_env_limits() -> None:
    assert check_env(None) == {}
    assert check_env({"A": "1"}) == {"A": "1"}
    with pytest.raises(Exception, match="NUL"):
        check_env({"A": "x\x00y"})
    with pytest.raises(Exception, match="too many"):
        check_env({f"K{i}": "v" for i in range(100)})


async def test_resolve_exec_env_hook(make: Callable[..., Harness]) -> None:
    h = make()
    runner = HookRunner()
    seen: list[ev.ResolveExecEnvEvent] = []

    def handler(event: ev.ResolveExecEnvEvent, ctx: ev.HookContext) -> dict[str, Any]:
        seen.append(event)
        return {"env": {"PLUGIN_TOKEN": "t0k", "LD_PRELOAD": "/evil.so", "PATH": "/evil"}}

    runner.add(HookRegistration("p", "resolve_exec_env", handler))
    h.services["hooks"] = runner
    result = await h.exec("env", env={"PLUGIN_TOKEN": "model"})
    env = dict(line.split("=", 1) for line in text_of(result).splitlines()[1:] if "=" in line)
    assert env["PLUGIN_TOKEN"] == "t0k"  # the operator's plugin wins over the model
    assert "LD_PRELOAD" not in env and env["PATH"] == h.policy.path
    assert seen and seen[0].session_key == SESSION and seen[0].tool_name == "exec"
    assert seen[0].context.run_id == "run-1"


# -- background processes --------------------------------------------------------------------------
async def _until_status(h: Harness, session_id: str, status: str) -> ToolResult:
    deadline = time.monotonic() + 10
    while True:
        result = await h.process("list")
        if f"{session_id}: {status}" in text_of(result) or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.05)


async def _poll_until(h: Harness, session_id: str, needle: str) -> str:
    seen = ""
    deadline = time.monotonic() + 10
    while needle not in seen and time.monotonic() < deadline:
        body = text_of(await h.process("poll", session_id=session_id)).split("\n", 1)[1]
        if body != "(no new output)":
            seen += body + "\n"
        await asyncio.sleep(0.05)
    return seen


async def test_background_poll_write_log(make: Callable[..., Harness]) -> None:
    h = make()
    started = await h.exec("echo ready; cat", background=True)
    assert not started.is_error, text_of(started)
    sid = started.details["sessionId"]
    assert sid.startswith("proc_") and started.details["status"] == "running"
    assert "ready" in await _poll_until(h, sid, "ready")
    assert "(no new output)" in text_of(await h.process("poll", session_id=sid))
    wrote = await h.process("write", session_id=sid, data="hello\n")
    assert not wrote.is_error, text_of(wrote)
    assert "hello" in await _poll_until(h, sid, "hello")
    listed = await h.process("list")
    assert f"{sid}: running" in text_of(listed) and "echo ready; cat" in text_of(listed)
    await h.process("write", session_id=sid)  # no data: close stdin, so cat ends
    assert f"{sid}: exited (exit code 0)" in text_of(await _until_status(h, sid, "exited"))
    log = await h.process("log", session_id=sid)
    assert "ready\nhello" in text_of(log)
    late = await h.process("write", session_id=sid, data="x")
    assert late.is_error and "exited" in text_of(late)


async def test_background_kill_and_scoping(make: Callable[..., Harness]) -> None:
    h = make()
    started = await h.exec("sleep 30 & echo $!; sleep 30", background=True)
    sid = started.details["sessionId"]
    child = int((await _poll_until(h, sid, "\n")).split()[0])
    # another session neither sees nor controls it
    assert "No background processes" in text_of(await h.process("list", session_key="agent:main:other"))
    other = await h.process("kill", session_key="agent:main:other", session_id=sid)
    assert other.is_error and "Unknown session_id" in text_of(other)
    killed = await h.process("kill", session_id=sid)
    assert f"{sid}: killed" in text_of(killed)
    assert killed.details["status"] == "killed"
    pid = started.details["pid"]
    assert await eventually(lambda: gone(pid) and gone(child))
    missing = await h.process("poll")
    assert missing.is_error and "needs session_id" in text_of(missing)


async def test_background_timeout_and_capacity(make: Callable[..., Harness]) -> None:
    h = make(max_background=1)
    first = await h.exec("sleep 30", background=True, timeout_seconds=1)
    sid = first.details["sessionId"]
    second = await h.exec("sleep 30", background=True)
    assert second.is_error and "too many background processes" in text_of(second)
    assert f"{sid}: timed out" in text_of(await _until_status(h, sid, "timed out"))
    assert await eventually(lambda: gone(first.details["pid"]))
    # the slot is free once the session is reaped (its pipes drained), which on a loaded machine
    # comes a little after its pid is gone: a refused try starts nothing, so try again meanwhile
    for _ in range(100):
        third = await h.exec("echo again", background=True)
        if not third.is_error:
            break
        await asyncio.sleep(0.05)
    assert not third.is_error, text_of(third)


async def test_background_under_allowlist_and_shutdown(make: Callable[..., Harness]) -> None:
    h = make("allowlist", ("sleep",))
    started = await h.exec("sleep 30", background=True)
    assert not started.is_error, text_of(started)
    refused = await h.exec("sleep 30 && touch ran", background=True)
    assert refused.is_error and "allowlist miss" in text_of(refused)
    await h.backend.aclose()
    assert await eventually(lambda: gone(started.details["pid"]))
    assert "killed" in text_of(await h.process("list"))


def test_tools_are_plain_tools() -> None:
    tools = make_exec_tools(ExecPolicy("full"))
    assert all(isinstance(t, Tool) for t in tools)
    assert "/bin/sh -c" in tools[0].description
