"""The index file on disk: its two connections, recovery from corruption, and atomic rebuilds.

* Two :class:`MemoryStore` connections: a writer for sync and a reader for searches (WAL lets a
  search read while a sync writes).
* A file SQLite cannot read at open, or that reports itself malformed during a sync, is moved
  aside to ``<name>.corrupt-<time>`` with its ``-wal``/``-shm`` and a fresh index is created; the
  reason is kept in :attr:`IndexFile.recovered` so status and search results can say so.
* A full rebuild fills a temporary file next to the index (``<name>.tmp-<id>``, with the old
  file's embedding cache copied in) and renames it over the index only once complete. The old
  files are first renamed to ``<name>.backup-<id>`` and restored if the rename fails; a failure
  while filling just deletes the temp file. Searches hold :attr:`IndexFile.swap_lock` while
  they read, so none runs against a connection being closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from homarus.memory.backend import IndexStore, Matrix, Stamp
from homarus.memory.sqlite import DB_ERRORS, binding
from homarus.memory.store import MemoryStore

__all__ = ["IndexFile", "is_corruption", "remove_db_files"]

log = logging.getLogger(__name__)

_SUFFIXES = ("", "-wal", "-shm")


_OPEN_ERRORS: tuple[type[Exception], ...] = DB_ERRORS


def is_corruption(exc: BaseException) -> bool:
    """SQLite's words for a damaged file (as opposed to a locked or busy one)."""
    text = str(exc).lower()
    return isinstance(exc, DB_ERRORS) and ("malformed" in text or "not a database" in text or "corrupt" in text)


def remove_db_files(base: Path) -> None:
    for suffix in _SUFFIXES:
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{base}{suffix}")


class IndexFile:
    def __init__(self, path: Path, *, use_vec: bool, clock: Callable[[], float]) -> None:
        self.path = path
        self.use_vec = use_vec
        self.clock = clock
        self.writer: MemoryStore | None = None
        self.reader: MemoryStore | None = None
        #: held (in worker threads) by a search's reads and by the swap of a rebuild
        self.swap_lock = threading.Lock()
        self._open_lock = asyncio.Lock()
        #: why the file was rebuilt from nothing (it was unreadable); cleared by a completed rebuild
        self.recovered: str | None = None
        #: bumped (under the swap lock) whenever another file takes the index's place: chunk ids
        #: read before and after refer to different chunks
        self.epoch = 0
        self.location = str(path)
        self.shared = False
        self.engine = f"{binding().name} {binding().sqlite_version}"
        #: one sync writes at a time (the manager already runs one; this keeps the promise local)
        self._write_lock = asyncio.Lock()

    async def ensure_open(self) -> MemoryStore:
        return (await self._ensure_both())[1]

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[MemoryStore]:
        async with self._write_lock:
            writer, _ = await self._ensure_both()
            yield writer

    def is_corruption(self, exc: BaseException) -> bool:
        return is_corruption(exc)

    def load_matrix(self, model: str) -> tuple[Stamp | None, Matrix]:
        # its own connection: searches keep reading meanwhile
        store = MemoryStore.open(self.path, use_vec=False)
        try:
            return None, store.vector_matrix(model)
        finally:
            store.close()

    def persisted_in(self, vec_loaded: bool) -> str:
        return "sqlite-vec" if vec_loaded else "BLOB column"

    async def _ensure_both(self) -> tuple[MemoryStore, MemoryStore]:
        if self.writer is None or self.reader is None:
            async with self._open_lock:
                if self.writer is None or self.reader is None:
                    self.writer, self.reader = await asyncio.to_thread(self._open_both)
        writer, reader = self.writer, self.reader
        if writer is None or reader is None:  # closed by a concurrent swap that failed to reopen
            raise RuntimeError("memory index is not open")
        return writer, reader

    def _open_both(self) -> tuple[MemoryStore, MemoryStore]:
        # no PRAGMA quick_check here: it reads the whole file (seconds at 100k chunks); damage
        # found later surfaces as a "malformed" error and goes through recover()
        try:
            writer = MemoryStore.open(self.path, use_vec=self.use_vec)
            writer.index_meta()
        except _OPEN_ERRORS as exc:
            self._move_aside(exc)
            writer = MemoryStore.open(self.path, use_vec=self.use_vec)
        reader = MemoryStore.open(self.path, use_vec=self.use_vec)
        return writer, reader

    def _move_aside(self, exc: BaseException) -> None:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(self.clock())}")
        log.error("memory index %s is unreadable (%s); moved to %s and rebuilt", self.path, exc, aside)
        for suffix in _SUFFIXES:
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
        self.recovered = f"index file was unreadable ({exc}); moved to {aside.name} and rebuilt"

    async def recover(self, exc: BaseException) -> None:
        """The open file turned out damaged: move it aside and start an empty one."""

        def swap() -> None:
            with self.swap_lock:
                for store in (self.writer, self.reader):
                    if store is not None:
                        with contextlib.suppress(*DB_ERRORS):
                            store.close()
                self.writer = self.reader = None
                self._move_aside(exc)
                self.epoch += 1
                self.writer, self.reader = self._open_both()

        await asyncio.to_thread(swap)

    async def rebuild(self, fill: Callable[[IndexStore], Awaitable[None]], *, seed_cache: bool) -> None:
        """Run ``fill`` on a fresh temp file, then swap it in (or delete it if ``fill`` fails)."""
        tmp = self.path.with_name(f"{self.path.name}.tmp-{uuid.uuid4().hex[:12]}")
        new = await asyncio.to_thread(MemoryStore.open, tmp, use_vec=self.use_vec)
        try:
            if seed_cache and self.path.exists():
                try:
                    await asyncio.to_thread(new.seed_cache_from, self.path)
                except DB_ERRORS as exc:
                    log.warning("memory: embedding cache not carried over: %s", exc)
            await fill(new)
        except BaseException:
            await asyncio.to_thread(new.close)
            remove_db_files(tmp)
            raise
        await asyncio.to_thread(new.close)
        await asyncio.to_thread(self._swap_in, tmp)
        self.recovered = None

    def _swap_in(self, tmp: Path) -> None:
        with self.swap_lock:
            for store in (self.writer, self.reader):
                if store is not None:
                    store.close()
            self.writer = self.reader = None
            backup = self.path.with_name(f"{self.path.name}.backup-{uuid.uuid4().hex[:12]}")
            moved: list[str] = []
            try:
                for suffix in _SUFFIXES:
                    if os.path.exists(f"{self.path}{suffix}"):
                        os.replace(f"{self.path}{suffix}", f"{backup}{suffix}")
                        moved.append(suffix)
                for suffix in ("-wal", "-shm"):
                    if os.path.exists(f"{tmp}{suffix}"):
                        os.replace(f"{tmp}{suffix}", f"{self.path}{suffix}")
                os.replace(tmp, self.path)
            except OSError:
                for suffix in moved:
                    os.replace(f"{backup}{suffix}", f"{self.path}{suffix}")
                remove_db_files(tmp)
                self.writer, self.reader = self._open_both()
                raise
            remove_db_files(backup)
            self.epoch += 1
            self.writer, self.reader = self._open_both()

    async def close(self) -> None:
        for store in (self.writer, self.reader):
            if store is not None:
                await asyncio.to_thread(store.close)
        self.writer = self.reader = None
