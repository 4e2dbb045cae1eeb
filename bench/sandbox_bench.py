"""Exec latency: a trivial command on the host vs in the bubblewrap sandbox (cold and reused), and
the time the allowlist analysis takes per command.

Run with ``.venv/bin/python bench/sandbox_bench.py [--n N]`` (or ``make bench``). Everything runs in
this process against a temp state dir; nothing listens on the network.

Rows:

* **host**: ``exec`` tool call ``true`` through :class:`HostBackend` (``/bin/sh -c true``).
* **sandbox, reused**: the same call in a session whose sandbox already exists (one ``bwrap`` per
  command: new namespaces, mounts, seccomp filter, rlimits, ``setpriv`` when run as root).
* **sandbox, cold**: the first call of a new session (``scope: session``): workspace directory,
  generated ``/etc``, then the same launch.
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

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import summarize  # after the sys.path line above
from homarus.config.sandbox import SandboxConfig
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

    cfg = SandboxConfig.model_validate({"mode": "all", "scope": "session"})
    sandboxes = SandboxSessions(cfg, state_dir=root / "state", agent_workspace=lambda _: ws)
    if not sandboxes.available():
        print("bubblewrap is not available: sandbox rows skipped")
        return rows
    view = sandboxes.view_for("agent:main:warm", "main")
    sctx = ToolContext("agent:main:warm", "main", "r", "c", view.root, sandbox=view)
    await exec_tool.execute(sctx, {"command": "true"})
    reused = await _time_exec(n, lambda: exec_tool.execute(sctx, {"command": "true"}))
    rows.append(("sandbox, reused: exec `true`", summarize(reused)))
    cold: list[float] = []
    for i in range(max(n // 4, 5)):
        start = time.perf_counter()
        fresh = sandboxes.view_for(f"agent:main:cold{i}", "main")
        fctx = ToolContext(f"agent:main:cold{i}", "main", "r", "c", fresh.root, sandbox=fresh)
        result = await exec_tool.execute(fctx, {"command": "true"})
        cold.append((time.perf_counter() - start) * 1000)
        assert not result.is_error
    rows.append(("sandbox, cold (new session): exec `true`", summarize(cold)))
    await sandboxes.aclose()
    return rows


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
