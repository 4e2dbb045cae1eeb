"""The agent's workspace: its working directory and the Markdown files injected into its prompt.

A new workspace is seeded with short starter files; after that the files belong to the user and
the agent, and nothing here writes to them again. Reading is bounded (per file and in total) and
safe: a symlink may point anywhere inside the workspace but never outside it, and only regular
files are read.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from homarus.fs import ensure_private_dir

__all__ = [
    "BOOTSTRAP_FILES",
    "STARTER_FILES",
    "SUBAGENT_FILES",
    "BootstrapFile",
    "ensure_workspace",
    "load_bootstrap_files",
]

#: injected into the system prompt, in this order
BOOTSTRAP_FILES = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md")
SUBAGENT_FILES = ("AGENTS.md", "TOOLS.md")
#: present only until the first-run conversation is done, so its absence is not reported
_FIRST_RUN_FILE = "BOOTSTRAP.md"
_HEAD_SHARE = 0.75

STARTER_FILES: dict[str, str] = {
    "AGENTS.md": """If BOOTSTRAP.md exists, this is your first run: do what it says, then delete it.
Edit these files as you learn what works.

## Memory
- You start each session with no memory. Write down what must last.
- Daily notes: memory/YYYY-MM-DD.md (append only). Lasting facts: MEMORY.md.

## Boundaries
- Ask before anything that leaves this machine (mail, posts, payments) or cannot be undone.
- Prefer recoverable actions: move to a trash folder instead of deleting.
- Private things stay private. In group chats, speak when you add something.
""",
    "SOUL.md": """- Be useful, not performative: no filler, no flattery, get to the point.
- Have opinions; say when you disagree and when you do not know.
- Look things up yourself (files, context) before asking.
- Short by default, thorough when it matters.
- You have access to someone's life. Treat it with care.

This is yours to change. If you change it, tell the user.
""",
    "TOOLS.md": """Notes for your tools on this setup (hosts, SSH aliases, devices, folders). None yet.
""",
    "IDENTITY.md": """- Name:
- Kind: (assistant, familiar, ghost in the machine...)
- Vibe:
- Emoji:
""",
    "USER.md": """- Name:
- Call them:
- Time zone:
- Notes:
""",
    "HEARTBEAT.md": """# Heartbeat checklist: list tasks below (headings only = no heartbeats)
""",
    "BOOTSTRAP.md": """This workspace is new and you have no memories yet.
1. Introduce yourself and learn who the user is and how they want to be addressed.
2. Decide together on your name, vibe and emoji; write them to IDENTITY.md.
3. Record what you learned in USER.md; adjust SOUL.md if they want a different tone.
4. Delete this file when done.
""",
}


@dataclass(frozen=True, slots=True)
class BootstrapFile:
    name: str
    #: what goes into the prompt (already truncated); empty when missing or omitted
    content: str
    truncated: bool
    missing: bool
    #: size of the file as read (for a very large file: its size in bytes)
    original_chars: int

    @property
    def omitted(self) -> bool:
        """The file exists but the total budget left no room for any of it."""
        return self.truncated and not self.content


# -- creation ------------------------------------------------------------------------------------
def ensure_workspace(path: Path) -> bool:
    """Create the workspace with starter files if it is new (missing or empty); return whether it was.

    Existing files are never replaced, even if one appears while the starters are written.
    """
    if path.is_dir():
        with os.scandir(path) as entries:
            if any(True for _ in entries):
                return False
    else:
        ensure_private_dir(path)
    os.chmod(path, 0o700)
    for name, text in STARTER_FILES.items():
        try:
            fd = os.open(path / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    return True


# -- reading -------------------------------------------------------------------------------------
def _read_limit(max_chars: int) -> int:
    """Bytes read in full before only the ends of a file are read (the middle is cut anyway)."""
    return max(1 << 20, 8 * max_chars)


#: (path, limit) -> (inode, size, mtime_ns, ctime_ns, result): the bootstrap files are read on every
#: run and change rarely; one lstat tells whether the cached text is still the file's
_READ_CACHE: dict[tuple[str, int], tuple[int, int, int, int, tuple[str, int]]] = {}
_READ_CACHE_MAX = 512


def _read_safely(root: Path, name: str, max_chars: int) -> tuple[str, int] | None:
    """(text, original size) of ``root/name``; None if absent, unreadable, not regular or outside.

    ``root`` is already resolved: a regular file (not a link) directly in it cannot be outside, so
    it needs one ``lstat``, and its text is reused while inode, size, mtime and ctime are unchanged.
    A symlink takes the full path (resolve, then check it stays inside)."""
    path = root / name
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        key = (str(path), max_chars)
        cached = _READ_CACHE.get(key)
        if cached is not None and cached[:4] == (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns):
            return cached[4]
        found = _read_resolved(root, name, max_chars)
        if found is not None:
            if len(_READ_CACHE) >= _READ_CACHE_MAX:
                _READ_CACHE.clear()
            _READ_CACHE[key] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, found)
        return found
    if not stat.S_ISLNK(st.st_mode):
        return None
    return _read_resolved(root, name, max_chars)


def _read_resolved(root: Path, name: str, max_chars: int) -> tuple[str, int] | None:
    try:
        target = (root / name).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(root):
        return None
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as fh:
        limit = _read_limit(max_chars)
        if info.st_size <= limit:
            text = fh.read(limit + 1).decode("utf-8-sig", errors="replace")
            return text, len(text)
        head = fh.read(limit // 2).decode("utf-8-sig", errors="replace")
        fh.seek(-(limit // 2), os.SEEK_END)
        tail = fh.read().decode("utf-8", errors="replace")
        return head + tail, info.st_size


def _truncate(name: str, text: str, original: int, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters, keeping head and tail around a marker."""
    if len(text) <= limit and original <= len(text):
        return text, False
    marker = f"\n\n[... {name} truncated: the middle was cut; read the file for all {original} characters ...]\n\n"
    room = limit - len(marker)
    if room < 2:
        return text[:limit], True
    head = int(room * _HEAD_SHARE)
    tail = room - head
    return f"{text[:head].rstrip()}{marker}{text[len(text) - tail :].lstrip()}", True


def load_bootstrap_files(
    workspace: Path, *, max_chars: int = 20_000, total_max_chars: int = 60_000, subagent: bool = False
) -> list[BootstrapFile]:
    """The bootstrap files in prompt order, each bounded by ``max_chars`` and all by ``total_max_chars``.

    Missing files are reported (``missing=True``), except BOOTSTRAP.md, which exists only until
    the first run is done. Once the total budget runs out, later files are cut or left empty
    (``truncated=True``). Sub-agents get only AGENTS.md and TOOLS.md. MEMORY.md is not loaded here.
    """
    try:
        root = workspace.resolve(strict=True)
    except (OSError, RuntimeError):
        root = None
    remaining = total_max_chars
    out: list[BootstrapFile] = []
    for name in SUBAGENT_FILES if subagent else BOOTSTRAP_FILES:
        found = _read_safely(root, name, max_chars) if root is not None else None
        if found is None:
            if name != _FIRST_RUN_FILE:
                out.append(BootstrapFile(name, "", truncated=False, missing=True, original_chars=0))
            continue
        text, original = found
        limit = min(max_chars, remaining)
        if limit <= 0:
            out.append(BootstrapFile(name, "", truncated=original > 0, missing=False, original_chars=original))
            continue
        content, cut = _truncate(name, text, original, limit)
        remaining -= len(content)
        out.append(BootstrapFile(name, content, truncated=cut, missing=False, original_chars=original))
    return out
