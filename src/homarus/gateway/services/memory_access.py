"""The agent's memory as a run reaches it: the memory manager, built only once there is memory.

A run's tools get a :class:`MemoryAccess` as ``services["memory"]``. While the agent's workspace
has no memory files (``MEMORY.md``, ``memory/``) and no extra memory paths are configured, a
search finds nothing and says why, and a read answers as the manager would for a missing file:
no SQLite index is created, no embedding model loaded, no watcher started. The first call after a
memory file appears (written by this very run, say) builds the manager through the gateway's
:class:`~homarus.gateway.services.memory.MemoryHub` and hands over to it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from homarus.memory import has_memory_files

if TYPE_CHECKING:
    from pathlib import Path

    from homarus.gateway.context import GatewayContext
    from homarus.memory.manager import MemoryManager
    from homarus.sessions.keys import SessionKey

__all__ = ["NO_MEMORY_YET", "MemoryAccess", "memory_for", "session_started"]

NO_MEMORY_YET = "no memory yet: MEMORY.md and memory/*.md do not exist in the workspace"


def memory_for(gateway: GatewayContext, agent_id: str) -> MemoryAccess | None:
    """The memory a run of ``agent_id`` may use (None when ``memorySearch.enabled`` is false)."""
    paths = gateway.config.agents.defaults.memory_paths
    if paths is None:
        return None
    return MemoryAccess(gateway, agent_id, gateway.workspace_dir(agent_id), paths)


def session_started(gateway: GatewayContext, key: SessionKey) -> None:
    """A session's run starts: warm its memory (``sync.onSessionStart``) when there is any."""
    access = memory_for(gateway, key.agent_id)
    manager = access.manager() if access is not None else None
    if manager is not None:
        manager.warm_session(key.canonical)


class MemoryAccess:
    def __init__(self, gateway: GatewayContext, agent_id: str, workspace: Path, extra_paths: tuple[str, ...]) -> None:
        self.gateway = gateway
        self.agent_id = agent_id
        self.workspace = workspace
        self.extra_paths = extra_paths

    def manager(self) -> MemoryManager | None:
        """The agent's manager once there is memory to index (built on that first call)."""
        if not self.extra_paths and not has_memory_files(self.workspace):
            return None
        return self.gateway.memory.for_agent(self.agent_id)

    async def search(self, query: str, max_results: int | None = None, min_score: float | None = None) -> Any:
        manager = self.manager()
        if manager is None:
            from homarus.memory.results import SearchResponse  # loaded by the first search

            return SearchResponse((), "fts-only", None, None, "fresh", reason=NO_MEMORY_YET)
        return await manager.search(query, max_results, min_score)

    async def read(self, path: str, from_line: int | None = None, lines: int | None = None) -> Any:
        manager = self.manager()
        if manager is None:  # the reader's own answer for a path that is not there (or not allowed)
            from homarus.memory.reader import read_memory_file  # loaded by the first read

            return await asyncio.to_thread(
                read_memory_file, path, workspace=self.workspace, extra_paths=(), from_line=from_line, lines=lines
            )
        return await manager.read(path, from_line, lines)
