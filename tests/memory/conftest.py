from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from homarus.config.memory import MemorySearchConfig
from homarus.memory.embedding import EmbeddingProvider
from homarus.memory.manager import MemoryManager
from homarus.storage.blocking import BlockingDatabase

ManagerFactory = Callable[..., MemoryManager]
Backend = Literal["embedded", "postgres"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked ``both_backends`` run on the SQLite file and on a real PostgreSQL."""
    if "memory_backend" in metafunc.fixturenames:
        both = metafunc.definition.get_closest_marker("both_backends") is not None
        metafunc.parametrize("memory_backend", ["embedded", "postgres"] if both else ["embedded"])


@pytest.fixture
async def memory_db(memory_backend: Backend, request: pytest.FixtureRequest) -> AsyncIterator[BlockingDatabase | None]:
    """The migrated database a ``postgres`` test's managers share (None for ``embedded``)."""
    if memory_backend == "embedded":
        yield None
        return
    from homarus.storage.migrations import migrate_at

    url = request.getfixturevalue("pg_url")
    await migrate_at(url)
    db = BlockingDatabase(url, max_size=8, timeout_s=5.0)
    yield db
    await asyncio.to_thread(db.close)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    return workspace


@pytest.fixture
async def make_manager(ws: Path, tmp_path: Path, memory_db: BlockingDatabase | None) -> AsyncIterator[ManagerFactory]:
    made: list[MemoryManager] = []

    def factory(
        provider: EmbeddingProvider | None = None,
        config: dict[str, Any] | MemorySearchConfig | None = None,
        **kwargs: Any,
    ) -> MemoryManager:
        cfg = config if isinstance(config, MemorySearchConfig) else MemorySearchConfig.model_validate(config or {})
        own_file = "db_path" in kwargs
        kwargs.setdefault("db_path", tmp_path / "state" / "memory" / "main.sqlite")
        kwargs.setdefault("workspace", ws)
        if memory_db is not None and "index" not in kwargs:
            from homarus.memory.pg_index import PgIndex

            # a manager given a file of its own gets an index of its own (an agent named after it)
            agent = Path(kwargs["db_path"]).stem if own_file else "main"
            kwargs["index"] = PgIndex(memory_db, agent, use_vec=cfg.store.vector.enabled)
        m = MemoryManager(agent_id="main", config=cfg, provider=provider, **kwargs)
        made.append(m)
        return m

    yield factory
    for m in made:
        await m.aclose()
