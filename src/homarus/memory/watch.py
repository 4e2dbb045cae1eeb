"""Watching memory files so the index follows edits without waiting for a search.

Two ``watchfiles`` watchers run side by side: one on the workspace root, *not* recursive (it only
cares about ``MEMORY.md``, ``memory.md`` and the ``memory`` directory appearing or vanishing), and
one recursive watcher on ``memory/`` and the extra paths. Watching the whole workspace recursively
would put an inotify watch on every directory an agent ever cloned into it. When ``memory/``
appears or disappears the recursive watcher is restarted on the new set of directories.

A batch of changes (``watchfiles`` groups them over the debounce window, 1.5 s by default) marks
the index dirty and runs a sync; a failing sync is logged and the watcher keeps going.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from homarus.memory.index import SyncReport
from homarus.memory.sources import IGNORED_DIRS, resolve_extra_path
from homarus.tasks import cancel_and_wait

__all__ = ["MemoryWatcher"]

log = logging.getLogger(__name__)

ROOT_NAMES = frozenset({"MEMORY.md", "memory.md", "memory"})


class _Syncable(Protocol):
    def mark_dirty(self, paths: Iterable[str] | None = None) -> None: ...

    async def sync(
        self, *, force: bool = False, reason: str = "manual", paths: Iterable[str] | None = None
    ) -> SyncReport: ...


class MemoryWatcher:
    def __init__(
        self, target: _Syncable, *, workspace: Path, extra_paths: Sequence[str] = (), debounce_ms: int = 1500
    ) -> None:
        self.target = target
        self.workspace = Path(os.path.abspath(workspace))
        self.extra_paths = tuple(extra_paths)
        self.debounce_ms = max(1, debounce_ms)
        self._task: asyncio.Task[None] | None = None
        #: syncs started by the watcher (for tests and status)
        self.syncs = 0

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="memory-watch")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    def _tree_targets(self) -> list[Path]:
        targets = [self.workspace / "memory"]
        for raw in self.extra_paths:
            p = resolve_extra_path(raw, self.workspace)
            targets.append(p)
        return [p for p in targets if p.exists() and not p.is_symlink()]

    async def _run(self) -> None:
        if not self.workspace.is_dir():
            log.info("memory watch: workspace %s does not exist; not watching", self.workspace)
            return
        while True:
            restart = asyncio.Event()
            tasks = [asyncio.create_task(self._watch_root(restart))]
            tree = self._tree_targets()
            if tree:
                tasks.append(asyncio.create_task(self._watch_tree(tree, restart)))
            try:
                await restart.wait()
            finally:
                await cancel_and_wait(*tasks)

    async def _watch_root(self, restart: asyncio.Event) -> None:
        from watchfiles import awatch

        def wanted(_change: object, path: str) -> bool:
            return os.path.basename(path) in ROOT_NAMES

        async for changes in awatch(
            self.workspace, watch_filter=wanted, debounce=self.debounce_ms, recursive=False, stop_event=restart
        ):
            await self._changed({p for _, p in changes})
            if any(os.path.basename(p) == "memory" for _, p in changes):
                restart.set()  # memory/ appeared or went away: watch the new tree

    async def _watch_tree(self, tree: list[Path], restart: asyncio.Event) -> None:
        from watchfiles import Change, awatch

        def wanted(change: Change, path: str) -> bool:
            if any(part in IGNORED_DIRS for part in Path(path).parts):
                return False
            # a deleted directory may have held Markdown files; a new one may already hold some,
            # written before the watch on it was in place (the sync lists it)
            return change == Change.deleted or path.lower().endswith(".md") or os.path.isdir(path)

        async for changes in awatch(*tree, watch_filter=wanted, debounce=self.debounce_ms, stop_event=restart):
            await self._changed({p for _, p in changes})

    async def _changed(self, paths: set[str]) -> None:
        self.target.mark_dirty(paths)
        self.syncs += 1
        try:
            await self.target.sync(reason="watch", paths=paths)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # keep watching: the next change retries
            log.warning("memory watch: sync failed: %s", exc)
