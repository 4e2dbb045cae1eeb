"""The Docker backend against a real engine: the bubblewrap backend's escape tests, workspace
access, file tools on the container's view, pruning and a crashed gateway's containers.

Runs when a Docker engine answers (``.ci/run`` installs and starts one, then sets
``HOMARUS_REQUIRE_DOCKER=1`` so that a missing engine or image fails instead of skipping). The
image is ``make sandbox-image``'s, built here when missing. Every container is named with this
run's prefix and removed at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from homarus.config.sandbox import SandboxConfig
from homarus.sandbox.docker import DEFAULT_IMAGE, DockerSandbox
from homarus.sandbox.docker_runner import engine_available
from homarus.sandbox.output import ExecResult
from homarus.tools.base import ToolContext
from homarus.tools.files import file_tools
from homarus.tools.paths import PathEscape
from homarus.tools.sandbox_sessions import SandboxSessions, SandboxView
from tests.sandbox.probes import FORK_BOMB

ROOT = Path(__file__).parents[2]
REQUIRED = os.environ.get("HOMARUS_REQUIRE_DOCKER") == "1"
PREFIX = f"homarus-t{os.getpid()}-"

if shutil.which("docker") is None or not engine_available():
    if REQUIRED:
        raise RuntimeError("HOMARUS_REQUIRE_DOCKER=1 but no Docker engine answers `docker info`")
    pytest.skip("no Docker engine answers `docker info`", allow_module_level=True)


def docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module", autouse=True)
def image() -> Iterator[str]:
    if docker("image", "inspect", DEFAULT_IMAGE).returncode != 0:
        built = subprocess.run(
            ["bash", str(ROOT / "scripts" / "sandbox-image.sh")], capture_output=True, text=True, timeout=1200
        )
        if built.returncode != 0:
            why = f"could not build {DEFAULT_IMAGE}: {built.stderr[-1500:]}"
            if REQUIRED:
                pytest.fail(why)
            pytest.skip(why)
    yield DEFAULT_IMAGE
    ours = docker("ps", "-aq", "--filter", f"name=^{PREFIX}").stdout.split()
    if ours:
        docker("rm", "-f", *ours)


@pytest.fixture
def agent_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "agent-ws"
    ws.mkdir(mode=0o700)
    (ws / "AGENTS.md").write_text("the agent's notes\n")
    return ws


@pytest.fixture
async def make(state: Path, agent_ws: Path) -> AsyncIterator[Callable[..., SandboxSessions]]:
    made: list[SandboxSessions] = []

    def factory(access: str = "none", **docker_cfg: Any) -> SandboxSessions:
        cfg = SandboxConfig.model_validate(
            {
                "mode": "all",
                "backend": "docker",
                "scope": "session",
                "workspaceAccess": access,
                "limits": {"pids": 64, "fileSizeMb": 1, "cpuSeconds": 20, "memoryMb": 256},
                "docker": {"containerPrefix": PREFIX, **docker_cfg},
            }
        )
        sessions = SandboxSessions(
            cfg, state_dir=state, agent_workspace=lambda _: agent_ws, max_output_bytes=10_000, max_timeout_s=60
        )
        made.append(sessions)
        return sessions

    yield factory
    for sessions in made:
        for view in sessions.views():
            if view.backend is not None:
                await view.backend.aclose()


async def run(view: SandboxView, cmd: str, timeout: float = 20, env: dict[str, str] | None = None) -> ExecResult:
    assert view.backend is not None, view.unavailable
    return await view.backend.run(cmd, str(view.root), env or {}, timeout)


def container_of(view: SandboxView) -> str:
    backend: Any = view.backend
    return str(backend.sandbox.container_name(backend.scope_key))


# -- the escape tests of the bubblewrap backend ------------------------------------------------


async def test_identity_and_workspace(make: Callable[..., SandboxSessions]) -> None:
    view = make().view_for("agent:main:t1", "main")
    r = await run(view, "id -u; id -g; pwd; echo hi > f; cat f; grep CapEff /proc/self/status")
    # the sandbox user under a root gateway; a gateway of the docker group: its own user (who owns
    # the isolated workspace; Docker gives a non-root user no capability to enter it otherwise)
    uid, gid = ("65534", "65534") if os.geteuid() == 0 else (str(os.geteuid()), str(os.getegid()))
    assert r.stdout.split()[:4] == [uid, gid, "/workspace", "hi"], r
    assert r.stdout.split()[-1] == "0000000000000000"  # no capability at all
    assert (view.root / "f").read_text() == "hi\n"


async def test_no_shadow_no_state_dir(make: Callable[..., SandboxSessions], state: Path) -> None:
    view = make().view_for("agent:main:t2", "main")
    r = await run(view, f"cat /etc/shadow; cat {state}/secret.json; ls {state}; echo done")
    assert "hunter2" not in r.stdout and "root:" not in r.stdout, r
    assert "Permission denied" in r.stderr and "No such file or directory" in r.stderr
    assert r.stdout.strip() == "done"


async def test_read_only_outside_workspace(make: Callable[..., SandboxSessions]) -> None:
    view = make().view_for("agent:main:t3", "main")
    writes = "for p in /usr/x /etc/x /etc/passwd /x /bin/x; do echo x > $p; done"
    r = await run(view, f"{writes}; echo ok > /tmp/t && cat /tmp/t")
    assert r.stderr.count("Read-only file system") + r.stderr.count("Permission denied") == 5, r.stderr
    assert r.stdout.strip() == "ok"


async def test_no_network_and_no_dangerous_syscalls(make: Callable[..., SandboxSessions]) -> None:
    probe = (
        "import socket, ctypes\n"
        "s = socket.socket(); s.settimeout(3)\n"
        "try:\n"
        "    s.connect(('1.1.1.1', 80)); print('connected')\n"
        "except OSError as e: print('connect', e.errno)\n"
        "try:\n"
        "    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print('raw open')\n"
        "except OSError as e: print('raw', e.errno)\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "calls = (('ptrace', (0, 0, 0, 0)), ('unshare', (0x10000000,)), ('mount', (b'x', b'/tmp', b'x', 0, None)))\n"
        "for name, args in calls:\n"
        "    rc = getattr(libc, name)(*args); print(name, rc, ctypes.get_errno())\n"
        "print(open('/proc/net/dev').read().count(':'))\n"
    )
    view = make().view_for("agent:main:t4", "main")
    r = await run(view, 'python3 -c "$P"', env={"P": probe})
    lines = r.stdout.splitlines()
    assert lines[0] == "connect 101", r  # ENETUNREACH: network none, only the loopback device
    assert lines[1] == "raw 1"  # EPERM: no CAP_NET_RAW
    # Docker's default seccomp profile lets ptrace reach the container's own processes (they share
    # the scope anyway; no host process is visible); new namespaces and mounts are refused
    assert {"unshare -1 1", "mount -1 1"} <= set(lines[2:5]), r
    assert lines[5] == "1"  # lo


async def test_no_host_processes(make: Callable[..., SandboxSessions]) -> None:
    view = make().view_for("agent:main:t5", "main")
    r = await run(view, "ls /proc | grep -c '^[0-9]*$'; cat /proc/1/cmdline | tr '\\0' ' '")
    count, pid1 = r.stdout.split("\n", 1)
    assert int(count) <= 7, r  # the container's own: its PID 1 (docker-init), its sleep, this command
    assert pid1.strip() == "/sbin/docker-init -- sleep infinity"  # a PID 1 that reaps zombies


async def test_no_host_secrets_in_env(make: Callable[..., SandboxSessions], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOMARUS_TEST_SECRET", "s3cret")
    view = make().view_for("agent:main:t6", "main")
    r = await run(view, "env", env={"FOO": "bar", "SERVICE_TOKEN": "t0k", "LD_PRELOAD": "/x.so", "PATH": "/evil"})
    assert "s3cret" not in r.stdout and "t0k" not in r.stdout, r
    env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert env["FOO"] == "bar" and env["HOME"] == "/workspace" and "/evil" not in env["PATH"]


async def test_timeout_kills_the_command_and_what_it_left_in_the_container(
    make: Callable[..., SandboxSessions],
) -> None:
    view = make().view_for("agent:main:t7", "main")
    marker = "987.654"
    started = time.monotonic()
    r = await run(view, f"sleep {marker} & setsid sleep {marker} & sleep {marker}", timeout=1)
    assert r.timed_out and time.monotonic() - started < 15, r
    left = docker("exec", container_of(view), "ps", "-eo", "args").stdout
    assert marker not in left, left  # the one that left the process group too


async def test_what_a_command_leaves_running_ends_with_it_and_its_exit_status_and_stdin_stay(
    make: Callable[..., SandboxSessions],
) -> None:
    view = make().view_for("agent:main:t7d", "main")
    assert view.backend is not None
    r = await view.backend.run("sleep 432.1 & read line; echo got $line; exit 3", str(view.root), {}, 20, b"hello\n")
    assert (r.exit_code, r.stdout) == (3, "got hello\n"), r
    assert "432.1" not in docker("exec", container_of(view), "ps", "-eo", "args").stdout  # as on the host


async def test_abort_kills_the_command_in_the_container(make: Callable[..., SandboxSessions]) -> None:
    view = make().view_for("agent:main:t7b", "main")
    assert view.backend is not None
    abort = asyncio.Event()
    asyncio.get_running_loop().call_later(1.0, abort.set)
    r = await view.backend.run("sleep 876.5", str(view.root), {}, 30, abort=abort)
    assert r.aborted, r
    assert "876.5" not in docker("exec", container_of(view), "ps", "-eo", "args").stdout


async def test_a_killed_background_command_leaves_nothing_in_the_container(
    make: Callable[..., SandboxSessions],
) -> None:
    view = make().view_for("agent:main:t7c", "main")
    assert view.backend is not None
    session = await view.backend.start(
        "sleep 543.2 & setsid sleep 543.2 & wait", str(view.root), {}, 60, owner="o", label="l"
    )
    name = container_of(view)
    for _ in range(50):
        if docker("exec", name, "ps", "-eo", "args").stdout.count("543.2") >= 2:
            break
        await asyncio.sleep(0.1)
    session.kill()
    await view.backend.aclose()  # waits for the container's side to be cleaned up too
    assert "543.2" not in docker("exec", name, "ps", "-eo", "args").stdout


async def test_fork_bomb_bounded(make: Callable[..., SandboxSessions]) -> None:
    probe = FORK_BOMB.format(sleep=3)
    view = make().view_for("agent:main:t8", "main")
    r = await run(view, 'python3 -c "$P"', env={"P": probe}, timeout=20)
    lines = r.stdout.split()
    assert lines[:2] == ["refused", "11"], r  # EAGAIN: the container's pids limit (limits.pids)
    assert int(lines[2]) < 64


async def test_file_size_and_memory_limits(make: Callable[..., SandboxSessions]) -> None:
    view = make().view_for("agent:main:t9", "main")
    r = await run(view, "head -c 3000000 /dev/zero > big; wc -c < big")
    assert r.stdout.split()[-1] == str(1024 * 1024), r  # limits.fileSizeMb
    hog = "python3 -c 'b = bytearray(600 * 1024 * 1024); print(len(b))'"
    r = await run(view, hog, timeout=30)
    assert "629145600" not in r.stdout and r.exit_code != 0, r  # limits.memoryMb: 256 MiB


async def test_output_truncated(make: Callable[..., SandboxSessions]) -> None:
    view = make().view_for("agent:main:t10", "main")
    r = await run(view, "head -c 100000 /dev/zero | tr '\\0' a")
    assert r.truncated and "bytes omitted" in r.stdout and len(r.stdout) < 11_000


# -- workspace access, file tools ---------------------------------------------------------------


async def test_workspace_access_none_sees_only_its_own_workspace(
    make: Callable[..., SandboxSessions], agent_ws: Path
) -> None:
    view = make("none").view_for("agent:main:w1", "main")
    r = await run(view, f"ls /agent {agent_ws} 2>&1; ls /workspace")
    assert "AGENTS.md" not in r.stdout and view.root != agent_ws, r


async def test_workspace_access_ro_reads_the_agent_workspace_and_cannot_write_it(
    make: Callable[..., SandboxSessions], agent_ws: Path
) -> None:
    view = make("ro").view_for("agent:main:w2", "main")
    assert not view.files_writable
    r = await run(view, "cat /agent/AGENTS.md; echo x > /agent/new; echo y > /workspace/own && echo wrote-own")
    assert r.stdout.splitlines() == ["the agent's notes", "wrote-own"], r
    assert "Read-only file system" in r.stderr
    assert not (agent_ws / "new").exists() and (view.root / "own").read_text() == "y\n"


async def test_workspace_access_rw_writes_the_agent_workspace(
    make: Callable[..., SandboxSessions], agent_ws: Path
) -> None:
    # the gateway here may run as root with a 0700 agent workspace: the container must still write it
    view = make("rw").view_for("agent:main:w3", "main")
    assert view.root == agent_ws.absolute()
    r = await run(view, "cat AGENTS.md && echo made > made.txt && echo ok")
    assert r.stdout.splitlines() == ["the agent's notes", "ok"], r
    assert (agent_ws / "made.txt").read_text() == "made\n"


async def test_file_tools_work_on_the_containers_workspace(make: Callable[..., SandboxSessions]) -> None:
    view = make().view_for("agent:main:f1", "main")
    ctx = ToolContext("agent:main:f1", "main", "run-1", "call-1", view.root, sandbox=view)
    tools = {t.name: t for t in file_tools()}
    wrote = await tools["write"].execute(ctx, {"path": "notes/plan.txt", "content": "step one\n"})
    assert not wrote.is_error, wrote
    r = await run(view, "cat /workspace/notes/plan.txt; echo 'from the container' > /workspace/notes/reply.txt")
    assert r.stdout == "step one\n", r
    read = await tools["read"].execute(ctx, {"path": "notes/reply.txt"})
    assert "from the container" in "".join(getattr(b, "text", "") for b in read.content)
    with pytest.raises(PathEscape):  # the file tools stay inside the sandbox's workspace
        await tools["read"].execute(ctx, {"path": "/etc/hostname"})


# -- lifecycle ----------------------------------------------------------------------------------


async def test_idle_containers_are_pruned(state: Path) -> None:
    now = [int(time.time() * 1000)]
    cfg = SandboxConfig.model_validate({"docker": {"containerPrefix": PREFIX}}).docker
    sb = DockerSandbox(cfg, state_dir=state, clock=lambda: now[0])
    name = await sb.ensure("agent:main:p1")
    assert json.loads(docker("inspect", name).stdout)[0]["State"]["Running"]
    assert await sb.prune(idle_hours=1) == []  # just used
    now[0] += 2 * 3_600_000
    assert await sb.prune(idle_hours=1) == [name]
    assert "No such" in docker("inspect", name).stderr
    assert sb.registry.load() == {}


CRASHING_GATEWAY = """
import asyncio, sys
from pathlib import Path
from homarus.config.sandbox import SandboxConfig
from homarus.sandbox.docker import DockerSandbox

async def main() -> None:
    cfg = SandboxConfig.model_validate({"docker": {"containerPrefix": sys.argv[2]}}).docker
    sb = DockerSandbox(cfg, state_dir=Path(sys.argv[1]))
    launch = await sb.launch("agent:main:crash", "echo started; sleep 765.4", "/workspace", {})
    proc = await asyncio.create_subprocess_exec(*launch.argv, env=launch.env, stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    print((await proc.stdout.readline()).decode().strip(), flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_a_crashed_gateways_container_is_taken_over(state: Path) -> None:
    gateway = subprocess.Popen(
        [sys.executable, "-c", CRASHING_GATEWAY, str(state), PREFIX], stdout=subprocess.PIPE, text=True
    )
    try:
        assert gateway.stdout is not None and gateway.stdout.readline().strip() == "started"
        gateway.send_signal(signal.SIGKILL)  # mid-command, nothing cleaned up
        gateway.wait(10)
    finally:
        gateway.kill()
        gateway.wait()
        if gateway.stdout is not None:
            gateway.stdout.close()
    cfg = SandboxConfig.model_validate({"docker": {"containerPrefix": PREFIX}}).docker
    sb = DockerSandbox(cfg, state_dir=state)
    name = sb.container_name("agent:main:crash")
    before = json.loads(docker("inspect", name).stdout)[0]["Id"]
    assert await sb.ensure("agent:main:crash") == name  # the same container, not a name clash
    assert json.loads(docker("inspect", name).stdout)[0]["Id"] == before
    assert sb.registry.load()[name].scope_key == "agent:main:crash"
    done = docker("exec", name, "sh", "-c", "echo alive")
    assert done.stdout.strip() == "alive"
    assert await sb.remove("agent:main:crash")
    assert "No such" in docker("inspect", name).stderr


async def test_auto_picks_docker_when_bubblewrap_does_not_work(
    state: Path, agent_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = SandboxConfig.model_validate({"mode": "all", "backend": "auto", "docker": {"containerPrefix": PREFIX}})
    sessions = SandboxSessions(cfg, state_dir=state, agent_workspace=lambda _: agent_ws)
    monkeypatch.setattr(sessions, "_bwrap_works", lambda: False)
    assert sessions.backend_kind() == "docker"
    view = sessions.view_for("agent:main:a1", "main")
    r = await run(view, "cat /proc/1/cmdline | tr '\\0' ' '")
    assert r.stdout.strip().endswith("sleep infinity"), r
    assert view.backend is not None
    await view.backend.aclose()
