"""Long-term memory: Markdown files indexed into SQLite (FTS5 + sqlite-vec), or into PostgreSQL
when several gateways share one (``backend``), and searched hybrid.

This package file stays import-free: :func:`has_memory_files` lets the gateway decide whether
memory is worth loading at all.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["has_memory_files"]


def has_memory_files(workspace: Path) -> bool:
    """Whether ``workspace`` holds memory to index (``MEMORY.md`` or a ``memory/`` directory)."""
    return (workspace / "MEMORY.md").is_file() or (workspace / "memory").is_dir()
