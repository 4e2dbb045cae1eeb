"""Exec latency: a trivial command on the host vs in the bubblewrap sandbox (cold and reused), and
the time the allowlist analysis takes per command.

Run with ``.venv/bin/python bench/sandbox_bench.py [--n N]`` (or ``make bench``). Everything runs in
this process against a temp state dir; nothing listens on the network.

Rows:

* **host**: ``exec`` tool call ``true`` through :class:`HostBackend` (``/bin/sh -c true``).
* **bubblewrap, reused**: the same call in a session whose sandbox already exists (one ``bwrap``
  per command: new namespaces, mounts, seccomp filter, rlimits, ``setpriv`` when run as root).
* **bubblewrap, cold**: the first call of a new session (``scope: session``): workspace directory,
  generated ``/etc``, then the same launch.
* **docker, reused / cold**: the same through the Docker backend (when an engine answers and has
  ``make sandbox-image``'s image): ``docker exec`` in the session's running container; cold adds
  ``docker inspect``, ``create`` and ``start`` of a new container. The containers are removed after.
* **analysis**: :func:`plan_exec` (parse, unwrap, resolve on PATH, allowlist + safe-bin checks,
  rebuild) for a few command shapes, in µs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import summarize  # after the sys.path line above
from homarus.config.sandbox import SandboxConfig
from homarus.sandbox.docker import DockerSandbox
from homarus.tools.base import ToolContext
from homarus.tools.exec import make_exec_tools
from homarus.tools.exec_policy import ExecPolicy, plan_exec
from homarus.tools.process import HostBackend
from homarus.tools.sandbox_sessions import SandboxSessions

COMMANDS = {
    "simple (ls -la)": "ls -la",
    "pipeline (git log | grep x | wc -l)": "git log --oneline | grep fix | wc -l",
    "wrapped (nice -n 5 timeout 5 ls)": "nice -n 5 timeout 5 ls",
    "miss with chain (ls && curl x; rm y)": "ls && curl http://x; rm y",
    "refused ($(...) substitution)": "ls $(cat /etc/passwd)",
}


async def _time_exec(n: int, call: Callable[[], Awaitable[object]]) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def _bench(root: Path, n: int) -> list[tuple[str, dict[str, float]]]:
    ws = root / "ws"
    ws.mkdir()
    host = HostBackend()
    exec_tool, _ = make_exec_tools(ExecPolicy("full", ask="off"), host)
    ctx = ToolContext("agent:main:main", "main", "r", "c", ws)
    rows = [("host: exec `true`", summarize(await _time_exec(n, lambda: exec_tool.execute(ctx, {"command": "true"}))))]
    await host.aclose()

    bwrap_cfg = SandboxConfig.model_validate({"mode": "all", "scope": "session", "backend": "bwrap"})
    rows += await _sandbox_rows("bubblewrap", bwrap_cfg, root / "state-bwrap", ws, exec_tool, n, max(n // 4, 5))
    docker_cfg = SandboxConfig.model_validate(
        {"mode": "all", "scope": "session", "backend": "docker", "docker": {"containerPrefix": "homarus-bench-"}}
    )
    rows += await _sandbox_rows("docker", docker_cfg, root / "state-docker", ws, exec_tool, n, 5)
    return rows


async def _sandbox_rows(
    label: str, cfg: SandboxConfig, state: Path, ws: Path, exec_tool: Any, n: int, n_cold: int
) -> list[tuple[str, dict[str, float]]]:
    sandboxes = SandboxSessions(cfg, state_dir=state, agent_workspace=lambda _: ws)
    if not sandboxes.available():
        print(f"{label} is not available here: its rows are skipped")
        return []
    views = [sandboxes.view_for("agent:main:warm", "main")]
    sctx = ToolContext("agent:main:warm", "main", "r", "c", views[0].root, sandbox=views[0])
    first = await exec_tool.execute(sctx, {"command": "true"})
    if first.is_error:
        print(f"{label}: {first.content[0].text}: its rows are skipped")
        await _close(views)
        return []
    reused = await _time_exec(n, lambda: exec_tool.execute(sctx, {"command": "true"}))
    rows = [(f"{label}, reused: exec `true`", summarize(reused))]
    cold: list[float] = []
    for i in range(n_cold):
        start = time.perf_counter()
        fresh = sandboxes.view_for(f"agent:main:cold{i}", "main")
        views.append(fresh)
        fctx = ToolContext(f"agent:main:cold{i}", "main", "r", "c", fresh.root, sandbox=fresh)
        result = await exec_tool.execute(fctx, {"command": "true"})
        cold.append((time.perf_counter() - start) * 1000)
        assert not result.is_error, result
    rows.append((f"{label}, cold (new session): exec `true`", summarize(cold)))
    await _close(views)
    return rows


async def _close(views: list[Any]) -> None:
    """Background processes killed; a Docker session's container removed (the bench leaves none)."""
    for view in views:
        backend = view.backend
        if backend is not None:
            await backend.aclose()
            sandbox = getattr(backend, "sandbox", None)
            if isinstance(sandbox, DockerSandbox):
                await sandbox.remove(backend.scope_key)


def _analysis(n: int) -> list[tuple[str, float]]:
    policy = ExecPolicy("allowlist", ("/usr/bin/ls", "/usr/bin/git"), ask="on-miss")
    out = []
    for name, command in COMMANDS.items():
        plan_exec(command, policy, "/tmp")  # noqa: S108  (a cwd for PATH lookups only)
        start = time.perf_counter()
        for _ in range(n):
            plan_exec(command, policy, "/tmp")  # noqa: S108
        out.append((name, (time.perf_counter() - start) / n * 1e6))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=60, help="exec calls per row")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="homarus-sbx-bench-"))
    try:
        rows = asyncio.run(_bench(root, args.n))
        analysis = _analysis(2000)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    who = "root (setpriv to uid 65534)" if os.geteuid() == 0 else "unprivileged (user namespace)"
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} CPUs, gateway user: {who}")
    print("| exec path | n | p50 ms | p95 ms | min ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, s in rows:
        print(f"| {name} | {s['n']:.0f} | {s['p50']:.2f} | {s['p95']:.2f} | {s['min']:.2f} |")
    print()
    print("| allowlist analysis (plan_exec) | µs per command |")
    print("| --- | --- |")
    for name, us in analysis:
        print(f"| {name} | {us:.1f} |")


if __name__ == "__main__":
    main()
