"""Where a memory index lives: the two shapes the indexer, the retriever and the manager rely on.

Two implementations: one SQLite file per agent (``indexfile.IndexFile`` over ``store.MemoryStore``,
the default) and PostgreSQL tables shared by every gateway of a cluster (``pg_index.PgIndex`` over
``pg_store.PgMemoryStore``). Only these two modules know which one they talk to.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from homarus.memory.store import ChunkRow, FileRow, NewChunk

__all__ = ["Index", "IndexStore", "Matrix", "Stamp"]

#: (epoch, generation) of an index's content: another epoch means other chunk ids; a later
#: generation of the same epoch only has more (or fewer) chunks
Stamp = tuple[int, int]
Matrix = tuple["npt.NDArray[np.int64]", "npt.NDArray[np.float32]"]


class IndexStore(Protocol):
    """One index's rows (blocking: callers use ``asyncio.to_thread``)."""

    @property
    def vec_available(self) -> bool: ...

    def index_meta(self) -> dict[str, Any] | None: ...
    def set_index_meta(self, meta: dict[str, Any]) -> None: ...
    def files(self) -> dict[str, FileRow]: ...
    def vectors_by_hash(self, path: str, model: str) -> dict[str, tuple[bytes, int]]: ...
    def replace_files(self, files: Sequence[tuple[FileRow, Sequence[NewChunk]]], model: str) -> None: ...
    def touch_file(self, file: FileRow) -> None: ...
    def delete_files(self, paths: Sequence[str]) -> int: ...
    def chunks_missing_vectors(self, model: str, limit: int) -> list[tuple[int, str, str]]: ...
    def set_vectors(self, items: Sequence[tuple[int, bytes, int]]) -> None: ...
    def counts(self) -> tuple[int, int, int]: ...
    def cache_get(self, key: tuple[str, str, str], hashes: Sequence[str]) -> dict[str, tuple[bytes, int]]: ...
    def cache_put(self, key: tuple[str, str, str], items: Sequence[tuple[str, bytes, int]]) -> None: ...
    def cache_prune(self, max_entries: int) -> int: ...
    def fts(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]]: ...
    def chunk_rows(self, seqs: Sequence[int]) -> dict[int, ChunkRow]: ...
    def vector_matrix(self, model: str) -> Matrix: ...
    def vec_knn(self, query: bytes, k: int) -> list[tuple[int, float]]: ...

    def stamp(self) -> Stamp | None:
        """The content's stamp when other processes write this index too (None: only we do)."""
        ...


class Index(Protocol):
    """An agent's index as a whole: opening it, the one writer, rebuilds, matrix loads."""

    #: held (in worker threads) by a search's reads and by a rebuild's swap
    swap_lock: threading.Lock
    #: why the index was rebuilt from nothing (it was unreadable), for status and results
    recovered: str | None
    #: bumped when another index takes this one's place (chunk ids change meaning)
    epoch: int
    #: where the index is, for status (never a secret)
    location: str
    #: what holds it, for status ("pysqlite3 3.46.0", "PostgreSQL 15.8")
    engine: str
    #: other processes write it too: its stamp is read from the store, not counted here
    shared: bool

    @property
    def reader(self) -> IndexStore | None: ...

    async def ensure_open(self) -> IndexStore:
        """Open on first use; returns the store searches read."""
        ...

    def writing(self) -> AbstractAsyncContextManager[IndexStore]:
        """The store a sync writes, held by one writer at a time (across processes where they share it)."""
        ...

    async def recover(self, exc: BaseException) -> None: ...

    def is_corruption(self, exc: BaseException) -> bool:
        """Whether ``exc`` says the index itself is damaged (then ``recover`` and rebuild)."""
        ...

    async def rebuild(self, fill: Callable[[IndexStore], Awaitable[None]], *, seed_cache: bool) -> None:
        """Fill a new index with ``fill`` and put it in place of the current one, all or nothing
        (called inside ``writing()``)."""
        ...

    def load_matrix(self, model: str) -> tuple[Stamp | None, Matrix]:
        """Every vector, read apart from searches (blocking), with the stamp it reflects when shared."""
        ...

    def persisted_in(self, vec_loaded: bool) -> str:
        """Where vectors are kept, for status."""
        ...

    async def close(self) -> None: ...
