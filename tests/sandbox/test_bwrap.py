"""Escape tests in a real bubblewrap sandbox (skipped without bwrap, except in CI)."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from homarus.config.sandbox import SandboxLimits
from homarus.sandbox.bwrap import BwrapBackend, sandbox_workspace
from homarus.sandbox.output import ExecResult
from homarus.tools.sandboxed import SandboxExecBackend
from tests.sandbox.probes import FORK_BOMB

if shutil.which("bwrap") is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("bwrap is required in CI (apt-get install bubblewrap)")
    pytest.skip("bubblewrap (bwrap) is not installed", allow_module_level=True)

PY = "/usr/bin/python3"
needs_python = pytest.mark.skipif(not os.path.exists(PY), reason="no /usr/bin/python3 to probe syscalls with")


@pytest.fixture
def backend(state: Path) -> Iterator[BwrapBackend]:
    limits = SandboxLimits(pids=64, file_size_mb=1, cpu_seconds=20, memory_mb=1024)
    b = BwrapBackend(sandbox_workspace(state, "agent:main:test"), limits=limits, max_output_bytes=10_000)
    assert b.available()
    yield b
    asyncio.run(b.aclose())


def run(b: BwrapBackend, cmd: str, timeout: float = 10, env: dict[str, str] | None = None) -> ExecResult:
    """``cmd`` through the one exec loop the tools use (``SandboxExecBackend`` over ``b``)."""
    runner = SandboxExecBackend(b, max_output_bytes=b.max_output_bytes)
    return asyncio.run(runner.run(cmd, str(b.workspace), env or {}, timeout))


def test_a_sandbox_workspace_needs_no_capability(backend: BwrapBackend) -> None:
    # its workspace is the sandbox user's own: no CAP_DAC_OVERRIDE for anything inside
    assert backend.dac_override is False
    if backend.root_mode:
        out = run(backend, "grep CapEff /proc/self/status")
        assert out.stdout.split()[-1] == "0000000000000000", out.stdout


def test_identity_and_workspace(backend: BwrapBackend) -> None:
    r = run(backend, "id -u; id -g; pwd; echo hi > f; cat f")
    assert r.stdout.split() == ["65534", "65534", "/workspace", "hi"], r
    assert (backend.workspace / "f").read_text() == "hi\n"


def test_no_shadow_no_state_dir(backend: BwrapBackend, state: Path) -> None:
    r = run(backend, f"cat /etc/shadow; cat {state}/secret.json; cat /workspace/../../{state}/secret.json; echo done")
    assert "hunter2" not in r.stdout
    assert "root:" not in r.stdout
    assert "No such file or directory" in r.stderr or "Permission denied" in r.stderr
    assert r.stdout.strip() == "done"


def test_read_only_outside_workspace(backend: BwrapBackend) -> None:
    r = run(
        backend, "for p in /usr/x /etc/x /etc/passwd /x /bin/x; do echo x > $p; done; echo ok > /tmp/t && cat /tmp/t"
    )
    assert r.stderr.count("Read-only file system") == 5, r.stderr
    assert r.stdout.strip() == "ok"


@needs_python
def test_network_and_dangerous_syscalls(backend: BwrapBackend) -> None:
    probe = (
        "import socket, ctypes, errno\n"
        "for fam in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET):\n"
        "    try:\n"
        "        kind = socket.SOCK_RAW if fam == socket.AF_PACKET else socket.SOCK_DGRAM\n"
        "        socket.socket(fam, kind); print('open', fam)\n"
        "    except OSError as e: print('refused', e.errno)\n"
        "socket.socket(socket.AF_UNIX); print('unix ok')\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "calls = (('ptrace', (0, 0, 0, 0)), ('unshare', (0x10000000,)), ('mount', (b'x', b'/tmp', b'x', 0, None)))\n"
        "for name, args in calls:\n"
        "    rc = getattr(libc, name)(*args); print(name, rc, ctypes.get_errno())\n"
    )
    r = run(backend, f'{PY} -c "$P"', env={"P": probe})
    lines = r.stdout.splitlines()
    assert lines[:4] == ["refused 1"] * 4, r
    assert "unix ok" in lines
    assert {"ptrace -1 1", "unshare -1 1", "mount -1 1"} <= set(lines)


def test_no_host_processes(backend: BwrapBackend) -> None:
    r = run(backend, "ls /proc | grep -c '^[0-9]*$'")
    assert int(r.stdout.strip()) <= 5, r


def test_no_host_secrets_in_env(backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOMARUS_TEST_SECRET", "s3cret")
    r = run(backend, "env", env={"FOO": "bar", "SERVICE_TOKEN": "t0k", "LD_PRELOAD": "/x.so", "PATH": "/evil"})
    assert "s3cret" not in r.stdout and "t0k" not in r.stdout
    env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert env["FOO"] == "bar" and env["HOME"] == "/workspace" and env["PATH"] == "/usr/local/bin:/usr/bin:/bin"


def _marker_pids(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def test_timeout_kills_everything(backend: BwrapBackend) -> None:
    marker = "987.654"
    started = time.monotonic()
    r = run(backend, f"sleep {marker} & setsid sleep {marker} & sleep {marker}", timeout=1)
    assert r.timed_out and time.monotonic() - started < 8
    deadline = time.monotonic() + 3
    while _marker_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _marker_pids(marker) == []


@needs_python
def test_fork_bomb_bounded(backend: BwrapBackend) -> None:
    probe = FORK_BOMB.format(sleep=5)
    r = run(backend, f'{PY} -c "$P"', env={"P": probe}, timeout=8)
    lines = r.stdout.split()
    assert lines[:2] == ["refused", "11"], r  # EAGAIN from RLIMIT_NPROC
    assert int(lines[2]) < 64
    assert r.duration_ms < 7000  # the leader exits; the sleeping children die with the namespace


def test_file_size_limit(backend: BwrapBackend) -> None:
    r = run(backend, "head -c 3000000 /dev/zero > big; echo rc=$?; wc -c < big")
    assert r.stdout.split()[-1] == str(1024 * 1024), r


def test_output_truncated(backend: BwrapBackend) -> None:
    r = run(backend, "head -c 100000 /dev/zero | tr '\\0' a")
    assert r.truncated and "bytes omitted" in r.stdout and len(r.stdout) < 11_000


def test_read_paths_are_read_only_where_the_command_looks(state: Path, tmp_path: Path) -> None:
    """A read path under /tmp, reached through a symlinked directory (a virtualenv linked into a
    checkout), is visible at the path as given, read-only, behind world-passable parents; /tmp
    itself stays the sandbox's own sticky tmpfs."""
    real = tmp_path / "real-tools"
    real.mkdir(mode=0o755)
    (real / "tool.txt").write_text("from the host\n")
    os.chmod(tmp_path, 0o755)  # noqa: S103  (the sandbox user passes through it)
    link = tmp_path / "linked"
    link.symlink_to(real, target_is_directory=True)
    hidden = tmp_path / "other.txt"
    hidden.write_text("not listed")
    b = BwrapBackend(sandbox_workspace(state, "agent:main:reads"), read_paths=[link])
    try:
        r = run(b, f"cat {link}/tool.txt; touch {link}/new 2>/dev/null || echo ro; "
                   f"test -e {hidden} || echo hidden; stat -c %a /tmp")  # fmt: skip
        assert r.stdout.split("\n")[:4] == ["from the host", "ro", "hidden", "1777"], r
    finally:
        asyncio.run(b.aclose())
