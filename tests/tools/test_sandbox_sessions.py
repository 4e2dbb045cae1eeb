"""Sandboxed sessions: which sessions, which sandbox, path mapping for the file tools, pruning.

The exec cases start real bubblewrap sandboxes (skipped where bwrap is missing).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from homarus.config.sandbox import SandboxConfig
from homarus.errors import InvalidRequest
from homarus.messages import TextContent
from homarus.tools.base import ToolContext, ToolResult
from homarus.tools.exec import make_exec_tools
from homarus.tools.exec_policy import ExecPolicy
from homarus.tools.files import file_tools
from homarus.tools.sandbox_sessions import SandboxSessions, SandboxView

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def agent_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "agent-ws"
    ws.mkdir()
    (ws / "notes.md").write_text("agent notes\n")
    return ws


@pytest.fixture
async def make(tmp_path: Path, agent_ws: Path) -> AsyncIterator[Callable[..., SandboxSessions]]:
    made: list[SandboxSessions] = []

    def factory(clock: Callable[[], float] | None = None, **cfg: Any) -> SandboxSessions:
        sessions = SandboxSessions(
            SandboxConfig.model_validate(cfg),
            state_dir=tmp_path / "state",
            agent_workspace=lambda agent_id: agent_ws,
            clock=clock or Clock(),
        )
        made.append(sessions)
        return sessions

    yield factory
    for sessions in made:
        await sessions.aclose()


def text_of(result: ToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def ctx_for(view: SandboxView, key: str = "agent:main:group:g1") -> ToolContext:
    return ToolContext(key, "main", "run-1", "call-1", view.root, sandbox=view)


def test_which_sessions_and_scopes(make: Callable[..., SandboxSessions]) -> None:
    off, non_main, every = make(mode="off"), make(mode="non-main"), make(mode="all")
    assert not off.enabled and non_main.enabled
    assert not non_main.applies_to("main", "main", "main")
    assert non_main.applies_to("main", "group:g1", "main") and non_main.applies_to("main", "subagent:x", "main")
    assert every.applies_to("main", "main", "main")
    key = "agent:main:group:g1"
    assert make(mode="all", scope="session").scope_key(key, "main") == key
    assert make(mode="all", scope="agent").scope_key(key, "main") == "agent-main"
    assert make(mode="all", scope="shared").scope_key(key, "ops") == "shared"


@needs_bwrap
def test_views_are_reused_per_scope_and_isolated(make: Callable[..., SandboxSessions], agent_ws: Path) -> None:
    sessions = make(mode="all", scope="session")
    a1 = sessions.view_for("agent:main:a", "main")
    assert sessions.view_for("agent:main:a", "main") is a1
    b = sessions.view_for("agent:main:b", "main")
    assert b is not a1 and b.root != a1.root and agent_ws not in (a1.root, b.root)
    assert a1.files_writable and a1.agent_root is None
    rw = make(mode="all", workspaceAccess="rw").view_for("agent:main:a", "main")
    assert rw.root == agent_ws
    ro = make(mode="all", workspaceAccess="ro").view_for("agent:main:a", "main")
    assert not ro.files_writable and ro.agent_root == agent_ws.resolve()


@needs_bwrap
async def test_prune_closes_idle_and_old_sandboxes(make: Callable[..., SandboxSessions]) -> None:
    clock = Clock()
    sessions = make(clock, mode="all", scope="session", prune={"idleHours": 1, "maxAgeDays": 1})
    first = sessions.view_for("agent:main:a", "main")
    sessions.view_for("agent:main:b", "main")
    clock.now += 1800
    sessions.view_for("agent:main:b", "main")
    assert await sessions.prune() == 0
    clock.now += 1900  # a: idle 62 min; b: 32 min
    assert await sessions.prune() == 1
    assert [v.scope_key for v in sessions.views()] == ["agent:main:b"]
    assert sessions.view_for("agent:main:a", "main") is not first  # recreated on next use
    clock.now += 86_400 + 1  # everything is past its max age, even if used just now
    assert sessions.view_for("agent:main:b", "main").created_at == clock.now


async def test_no_working_sandbox_refuses_exec_never_the_host(
    make: Callable[..., SandboxSessions], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("homarus.tools.sandbox_sessions.engine_available", lambda *a, **k: False)  # no engine
    view = make(mode="all", backend="docker").view_for("agent:main:main", "main")
    assert view.backend is None
    exec_tool, _ = make_exec_tools(ExecPolicy("full"))
    result = await exec_tool.execute(ctx_for(view), {"command": "touch ran"})
    assert result.is_error and "never run on the host" in text_of(result)
    assert not (view.root / "ran").exists()


async def test_file_tools_map_workspace_and_agent_mounts(make: Callable[..., SandboxSessions], agent_ws: Path) -> None:
    sessions = make(mode="all", workspaceAccess="ro")
    sessions._kind = "bwrap"  # path mapping needs no running sandbox
    view = sessions.view_for("agent:main:g", "main")
    read, write, edit, patch = (t.execute for t in file_tools())
    ctx = ctx_for(view)
    (view.root / "a.txt").write_text("inside\n")
    assert "inside" in text_of(await read(ctx, {"path": "/workspace/a.txt"}))
    assert "inside" in text_of(await read(ctx, {"path": "a.txt"}))
    assert "agent notes" in text_of(await read(ctx, {"path": "/agent/notes.md"}))
    for call, args in (
        (write, {"path": "/workspace/b.txt", "content": "x"}),
        (write, {"path": "/agent/notes.md", "content": "x"}),
        (edit, {"path": "a.txt", "old_text": "inside", "new_text": "out"}),
    ):
        with pytest.raises(InvalidRequest, match="workspaceAccess is ro"):
            await call(ctx, args)
    with pytest.raises(InvalidRequest, match="workspaceAccess ro"):
        await patch(ctx, {"patch": "*** Begin Patch\n*** Add File: c.txt\n+x\n*** End Patch"})
    with pytest.raises(InvalidRequest, match="escapes"):
        await read(ctx, {"path": "/workspace/../agent-ws/notes.md"})
    assert (agent_ws / "notes.md").read_text() == "agent notes\n" and not (view.root / "b.txt").exists()


async def test_writable_sandbox_maps_writes_and_patches(make: Callable[..., SandboxSessions]) -> None:
    sessions = make(mode="all")
    sessions._kind = "bwrap"
    view = sessions.view_for("agent:main:g", "main")
    _, write, _, patch = (t.execute for t in file_tools())
    ctx = ctx_for(view)
    await write(ctx, {"path": "/workspace/dir/b.txt", "content": "hello"})
    assert (view.root / "dir" / "b.txt").read_text() == "hello"
    result = await patch(ctx, {"patch": "*** Begin Patch\n*** Add File: /workspace/c.txt\n+x\n*** End Patch"})
    assert not result.is_error and (view.root / "c.txt").read_text() == "x\n"
    with pytest.raises(InvalidRequest):
        await read_agent(ctx)


async def read_agent(ctx: ToolContext) -> ToolResult:
    """/agent is not mounted unless workspaceAccess is ro: it is just a path outside /workspace."""
    read = file_tools()[0].execute
    return await read(ctx, {"path": "/agent/notes.md"})


@needs_bwrap
async def test_rw_sandbox_works_on_the_agents_own_workspace_even_as_root(
    make: Callable[..., SandboxSessions], agent_ws: Path
) -> None:
    """workspaceAccess rw mounts the agent workspace itself: a root-owned 0700 directory when the
    gateway runs as root. The sandbox user (65534, never root) still works on it, and nothing on
    disk is opened up for anyone else."""
    os.chmod(agent_ws, 0o700)
    (agent_ws / "private.md").write_text("mine\n")
    os.chmod(agent_ws / "private.md", 0o600)
    before = {p.name: (p.stat().st_mode, p.stat().st_uid) for p in [agent_ws, agent_ws / "private.md"]}
    view = make(mode="all", workspaceAccess="rw").view_for("agent:main:g", "main")
    assert view.root == agent_ws
    exec_tool, _ = make_exec_tools(ExecPolicy("deny"))
    result = await exec_tool.execute(
        ctx_for(view), {"command": "pwd; id -u; cat private.md; echo more >> private.md; echo new > made.txt"}
    )
    assert not result.is_error, text_of(result)
    assert text_of(result).splitlines()[1:4] == ["/workspace", "65534", "mine"], text_of(result)
    assert (agent_ws / "private.md").read_text() == "mine\nmore\n" and (agent_ws / "made.txt").exists()
    after = {p.name: (p.stat().st_mode, p.stat().st_uid) for p in [agent_ws, agent_ws / "private.md"]}
    assert after == before  # no chmod, no chown


@needs_bwrap
async def test_exec_runs_in_the_session_sandbox(make: Callable[..., SandboxSessions]) -> None:
    view = make(mode="all", scope="session").view_for("agent:main:g", "main")
    exec_tool, process_tool = make_exec_tools(ExecPolicy("deny"))  # the host policy does not apply
    ctx = ctx_for(view)
    write = file_tools()[1].execute  # what the file tools create, commands may change
    await write(ctx, {"path": "/workspace/sub/f.txt", "content": "old"})
    result = await exec_tool.execute(ctx, {"command": "pwd; id -u; echo hi > f.txt", "workdir": "/workspace/sub"})
    assert text_of(result).splitlines()[1:3] == ["/workspace/sub", "65534"], text_of(result)
    assert (view.root / "sub" / "f.txt").read_text() == "hi\n"
    started = await exec_tool.execute(ctx, {"command": "sleep 30", "background": True})
    assert not started.is_error, text_of(started)
    listed = await process_tool.execute(ctx, {"action": "list"})
    assert started.details["sessionId"] in text_of(listed)
    killed = await process_tool.execute(ctx, {"action": "kill", "session_id": started.details["sessionId"]})
    assert "killed" in text_of(killed)


async def test_docker_backend_is_chosen_when_an_engine_answers(
    make: Callable[..., SandboxSessions], monkeypatch: pytest.MonkeyPatch
) -> None:
    import homarus.tools.sandbox_sessions as module
    from homarus.tools.sandboxed import DockerExecBackend

    monkeypatch.setattr(module, "engine_available", lambda: True)
    sessions = make(mode="all", backend="docker", scope="session")
    view = sessions.view_for("agent:main:g", "main")
    assert isinstance(view.backend, DockerExecBackend) and view.backend.scope_key == "agent:main:g"
    assert view.root.parent.name == "sandboxes" and view.root.is_dir()
    if shutil.which("docker") is None:
        return
    # the engine is not there (its socket answers nobody): the command does not start, and says
    # why in one line; nothing runs on the host
    monkeypatch.setenv("DOCKER_HOST", f"unix://{view.root.parent}/no-engine.sock")
    exec_tool, _ = make_exec_tools(ExecPolicy("full"))
    result = await exec_tool.execute(ctx_for(view), {"command": "touch ran"})
    assert result.is_error and "did not start" in text_of(result), text_of(result)
    assert "no Docker engine answers" in text_of(result) and "none ran on the host" in text_of(result)
    assert not (view.root / "ran").exists()
