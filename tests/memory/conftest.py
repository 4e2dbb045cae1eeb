from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from homarus.config.memory import MemorySearchConfig
from homarus.memory.embedding import EmbeddingProvider
from homarus.memory.manager import MemoryManager

ManagerFactory = Callable[..., MemoryManager]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    return workspace


@pytest.fixture
async def make_manager(ws: Path, tmp_path: Path) -> AsyncIterator[ManagerFactory]:
    made: list[MemoryManager] = []

    def factory(
        provider: EmbeddingProvider | None = None,
        config: dict[str, Any] | MemorySearchConfig | None = None,
        **kwargs: Any,
    ) -> MemoryManager:
        cfg = config if isinstance(config, MemorySearchConfig) else MemorySearchConfig.model_validate(config or {})
        kwargs.setdefault("db_path", tmp_path / "state" / "memory" / "main.sqlite")
        kwargs.setdefault("workspace", ws)
        m = MemoryManager(agent_id="main", config=cfg, provider=provider, **kwargs)
        made.append(m)
        return m

    yield factory
    for m in made:
        await m.aclose()
