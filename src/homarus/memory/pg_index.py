"""An agent's memory index shared by the gateways of a cluster (``storage.backend: postgres``).

The :class:`~homarus.memory.backend.Index` over ``pg_store``:

* **One writer in the cluster.** A sync first takes a session-level advisory lock on the agent
  (``pg_try_advisory_lock``, polled with a fresh pooled connection each time, so a waiting gateway
  holds no connection) and does every write on the connection that holds it. A gateway that dies
  or loses the database loses the lock with its connection, and cannot write on without it.
  Every gateway may start a sync (its watcher, a search finding the index dirty); one waiting for
  another's finds the files already indexed and only looks, so memory is indexed once, by whoever
  gets there first: the lock is the leadership, handed over when its holder goes.
* **Full rebuilds by generation.** A rebuild fills a new generation beside the current one while
  searches keep reading the current one, then switches ``memory_indexes.generation`` in one
  UPDATE and deletes the old rows. A rebuild cut short (an error, ``kill -9``) leaves rows of a
  generation nobody reads; the next writer deletes them before it starts.
* **Staleness across gateways.** Searches read the index's stamp (generation, version) and
  reload their vector matrix when another gateway changed it (``retrieval``).

Nothing is cached on disk here, and nothing can be corrupt in the SQLite sense: ``recover`` is
never needed. The pool is the cluster's; closing the index does not close it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from homarus.memory.backend import IndexStore, Matrix, Stamp
from homarus.memory.pg_store import Connect, PgMemoryStore
from homarus.storage.database import StorageUnavailable

if TYPE_CHECKING:
    from psycopg import Connection

    from homarus.storage.blocking import BlockingDatabase

__all__ = ["LOCK_CLASS", "PgIndex"]

log = logging.getLogger(__name__)

#: the advisory lock namespace of memory indexes ("mem"); the second half is a hash of the agent
LOCK_CLASS = 0x6D656D
#: how often a waiting writer tries the lock
POLL_S = 0.25
#: chunks written by one sync after which the table's statistics are refreshed
ANALYZE_AFTER = 100


class PgIndex:
    shared = True

    def __init__(self, db: BlockingDatabase, agent_id: str, *, use_vec: bool, wait_s: float = 900.0) -> None:
        self.db = db
        self.agent_id = agent_id
        self.use_vec = use_vec
        #: how long a sync waits for another gateway's to end before it fails (retryably)
        self.wait_s = wait_s
        self.swap_lock = threading.Lock()
        self.recovered: str | None = None
        self.epoch = 0  # a shared index says its stamp itself
        self.location = f"postgresql://{db.where} (agent {agent_id})"
        self.engine = "PostgreSQL"
        self._reader: PgMemoryStore | None = None
        self._open_lock = asyncio.Lock()
        #: one writer of this process at a time (the others of the cluster wait on the advisory lock)
        self._local = asyncio.Lock()
        self._writer: PgMemoryStore | None = None

    @property
    def reader(self) -> PgMemoryStore | None:
        return self._reader

    async def ensure_open(self) -> PgMemoryStore:
        if self._reader is None:
            async with self._open_lock:
                if self._reader is None:
                    self._reader = await asyncio.to_thread(self._open)
        return self._reader

    def _open(self) -> PgMemoryStore:
        with self.db.connection() as conn:
            version = conn.execute("SHOW server_version").fetchone()
            conn.execute("INSERT INTO memory_indexes(agent) VALUES (%s) ON CONFLICT DO NOTHING", (self.agent_id,))
            vec = self.use_vec and _vector_column(conn)
        if version is not None:
            self.engine = f"PostgreSQL {str(version[0]).split()[0]}"
        return PgMemoryStore(self.db.connection, self.agent_id, vec=vec)

    # -- the one writer ---------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[PgMemoryStore]:
        reader = await self.ensure_open()
        async with self._local:
            conn, release = await self._lock()
            try:
                gen = await asyncio.to_thread(self._prepare, conn)
                writer = self._writer = PgMemoryStore(
                    _held(self.db, conn), self.agent_id, gen=gen, vec=reader.vec_available
                )
                yield writer
                if writer.written >= ANALYZE_AFTER:
                    await asyncio.to_thread(_analyze, writer)
            finally:
                self._writer = None
                await asyncio.to_thread(release)

    async def _lock(self) -> tuple[Connection[Any], Callable[[], None]]:
        """A pooled connection holding the agent's lock, and how to give both back."""
        deadline = time.monotonic() + self.wait_s
        while True:
            attempt = asyncio.ensure_future(asyncio.to_thread(self._try_lock))
            try:
                held = await asyncio.shield(attempt)
            except asyncio.CancelledError:  # the lock may be taken all the same: give it back then
                attempt.add_done_callback(_give_back)
                raise
            if held is not None:
                return held
            if time.monotonic() >= deadline:
                raise StorageUnavailable(
                    f"the memory index of agent {self.agent_id} has been written by another gateway"
                    f" for over {self.wait_s:g} s"
                )
            await asyncio.sleep(POLL_S)

    def _try_lock(self) -> tuple[Connection[Any], Callable[[], None]] | None:
        stack = contextlib.ExitStack()
        conn = stack.enter_context(self.db.connection())
        try:
            with self.db.errors():
                row = conn.execute(
                    "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (LOCK_CLASS, self.agent_id)
                ).fetchone()
        except BaseException:
            stack.close()
            raise
        if row is None or not row[0]:
            stack.close()
            return None

        def release() -> None:
            try:
                conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_CLASS, self.agent_id))
            except Exception as exc:  # a broken connection: closing it drops the lock server-side
                log.warning("memory: releasing the index lock of %s failed: %s", self.agent_id, exc)
                conn.close()
            finally:
                with contextlib.suppress(StorageUnavailable):
                    stack.close()

        return conn, release

    def _prepare(self, conn: Connection[Any]) -> int:
        """Under the lock: the current generation, after deleting what a cut-short writer left."""
        with self.db.errors(), conn.transaction():
            conn.execute("INSERT INTO memory_indexes(agent) VALUES (%s) ON CONFLICT DO NOTHING", (self.agent_id,))
            row = conn.execute("SELECT generation FROM memory_indexes WHERE agent = %s", (self.agent_id,)).fetchone()
            gen = int(row[0]) if row else 1
            _drop_other_generations(conn, self.agent_id, gen)
        return gen

    async def rebuild(self, fill: Callable[[IndexStore], Awaitable[None]], *, seed_cache: bool) -> None:
        """Fill the next generation, then make it the current one (the cache is shared by every
        generation: ``seed_cache`` has nothing to do here)."""
        writer = self._writer
        if writer is None or writer.gen is None:
            raise RuntimeError("a rebuild runs inside writing()")
        old = writer.gen
        new = PgMemoryStore(writer.connect, self.agent_id, gen=old + 1, vec=writer.vec_available)
        try:
            await fill(new)
        except BaseException:
            # the rows of a generation nobody reads; gone now, or before the next writer starts
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._drop_generation, writer, old + 1)
            raise
        await asyncio.to_thread(self._switch, writer, old, old + 1)

    def _drop_generation(self, writer: PgMemoryStore, gen: int) -> None:
        with writer.connect() as conn, conn.transaction():
            for table in ("memory_chunks", "memory_files", "memory_generations"):
                conn.execute(f"DELETE FROM {table} WHERE agent = %s AND gen = %s", (self.agent_id, gen))  # noqa: S608

    def _switch(self, writer: PgMemoryStore, old: int, new: int) -> None:
        with writer.connect() as conn:
            with conn.transaction():
                cur = conn.execute(
                    "UPDATE memory_indexes SET generation = %s, version = version + 1"
                    " WHERE agent = %s AND generation = %s",
                    (new, self.agent_id, old),
                )
                if cur.rowcount != 1:  # cannot happen under the lock; never switch blind
                    raise RuntimeError(f"memory index of {self.agent_id} changed generation during a rebuild")
            writer.gen = new
            with conn.transaction():
                _drop_other_generations(conn, self.agent_id, new)
        _analyze(writer)

    # -- the rest of the Index -----------------------------------------------------------------
    def is_corruption(self, exc: BaseException) -> bool:
        return False

    async def recover(self, exc: BaseException) -> None:
        raise exc

    def load_matrix(self, model: str) -> tuple[Stamp | None, Matrix]:
        reader = self._reader
        if reader is None:
            raise RuntimeError("memory index is not open")
        return reader.stamped_matrix(model)

    def persisted_in(self, vec_loaded: bool) -> str:
        return "pgvector" if vec_loaded else "bytea column"

    async def close(self) -> None:
        self._reader = None


def _give_back(attempt: asyncio.Future[tuple[Connection[Any], Callable[[], None]] | None]) -> None:
    if not attempt.cancelled() and attempt.exception() is None and (held := attempt.result()) is not None:
        held[1]()


def _held(db: BlockingDatabase, conn: Connection[Any]) -> Connect:
    """The lock holder's connection as a store's connection source (one caller at a time)."""
    lock = threading.Lock()

    @contextlib.contextmanager
    def use() -> Iterator[Connection[Any]]:
        with lock, db.errors():
            yield conn

    return use


def _analyze(writer: PgMemoryStore) -> None:
    # the planner needs fresh statistics to take the GIN index: searched with none after a first
    # index of 10,000 chunks, a keyword query took 1.3 s instead of 5 ms (autovacuum comes later)
    with writer.connect() as conn:
        conn.execute("ANALYZE memory_chunks")


def _drop_other_generations(conn: Connection[Any], agent: str, keep: int) -> None:
    for table in ("memory_chunks", "memory_files", "memory_generations"):
        conn.execute(
            f"DELETE FROM {table} WHERE agent = %s AND (gen < %s OR gen > %s)",  # noqa: S608 - constant names
            (agent, keep, keep),
        )


def _vector_column(conn: Connection[Any]) -> bool:
    """Whether chunks have a pgvector column, adding it (and the extension) when it can."""
    import psycopg

    try:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
            if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
                return False
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        present = conn.execute(
            "SELECT 1 FROM information_schema.columns"
            " WHERE table_name = 'memory_chunks' AND column_name = 'embedding_v'"
        ).fetchone()
        if present is None:
            conn.execute("ALTER TABLE memory_chunks ADD COLUMN IF NOT EXISTS embedding_v vector")
            _mirror_existing(conn)
    except psycopg.Error as exc:
        log.warning("memory: pgvector is not usable (%s); vectors are searched in process", exc)
        return False
    return True


def _mirror_existing(conn: Connection[Any]) -> None:
    """Vectors stored before the extension was there, copied into the new column."""
    from homarus.memory.pg_store import vector_literal

    while True:
        rows = conn.execute(
            "SELECT seq, embedding FROM memory_chunks WHERE embedding IS NOT NULL AND embedding_v IS NULL LIMIT 500"
        ).fetchall()
        if not rows:
            return
        with conn.cursor() as cur:
            cur.executemany(
                "UPDATE memory_chunks SET embedding_v = %s::vector WHERE seq = %s",
                [(vector_literal(bytes(r[1])), r[0]) for r in rows],
            )
