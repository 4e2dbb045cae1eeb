"""A stdio MCP server inside bubblewrap (``mcp.servers.<name>.sandbox: true``).

The SDK spawns the server itself, so the server's command becomes the sandbox launcher's
(:mod:`homarus.sandbox.launch`), which ``exec``-s into ``bwrap``. Inside, the server runs as the
unprivileged sandbox user, with the system directories read-only, its own directory (or ``cwd``)
read-write at ``/workspace``, no network unless ``sandboxNetwork``, and the host paths it needs
to run read-only: ``sandboxReadPaths`` plus the install prefix of its command, of the command's
real file and of a ``#!`` interpreter (a virtualenv and the Python it points to, a
``node_modules``), so ``command: /srv/venv/bin/some-server`` works without listing them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from homarus.config.mcp import McpServerConfig
from homarus.sandbox.bwrap import sandbox_workspace
from homarus.sandbox.launch import launcher_argv

__all__ = ["install_prefixes", "sandboxed_command"]

#: mounted read-only in every sandbox already
_SYSTEM = (Path("/usr"), Path("/bin"), Path("/sbin"), Path("/lib"), Path("/lib64"))


def sandboxed_command(name: str, cfg: McpServerConfig, sandbox_root: Path) -> tuple[str, list[str], str]:
    """(command, args, cwd) that start the server ``name`` in the sandbox; its own directory is
    ``sandbox_root/<name>``."""
    assert cfg.command is not None
    command = shutil.which(cfg.command) or cfg.command
    workspace = Path(cfg.cwd).resolve() if cfg.cwd else sandbox_workspace(sandbox_root, name, root=sandbox_root)
    reads = [*cfg.sandbox_read_paths, *install_prefixes(command)]
    argv = launcher_argv(
        [command, *cfg.args],
        workspace=workspace,
        read_paths=list(dict.fromkeys(reads)),
        network=cfg.sandbox_network,
        limits=cfg.sandbox_limits.model_dump(),
    )
    return argv[0], argv[1:], str(workspace)


def install_prefixes(command: str) -> list[str]:
    """The directories a command needs besides the system's: for ``X/bin/cmd``, ``X``; the same
    for the file the command links to and for its ``#!`` interpreter."""
    found: list[str] = []
    seen: set[str] = set()
    todo = [command]
    while todo and len(seen) < 8:
        path = todo.pop()
        if path in seen or not path.startswith("/"):
            continue
        seen.add(path)
        for candidate in (Path(path), Path(os.path.realpath(path))):
            prefix = candidate.parent.parent if candidate.parent.name in ("bin", ".bin") else candidate.parent
            if not _system(prefix) and str(prefix) not in found:
                found.append(str(prefix))
        interpreter = _shebang(path)
        if interpreter is not None:
            todo.append(interpreter)
            todo.append(os.path.realpath(interpreter))
    return found


def _system(path: Path) -> bool:
    return path == Path("/") or any(path == s or s in path.parents for s in _SYSTEM)


def _shebang(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words:
        return None
    if words[0].endswith("/env") and len(words) > 1:  # ``#!/usr/bin/env node``: the one on PATH
        return shutil.which(words[-1])
    return words[0]
