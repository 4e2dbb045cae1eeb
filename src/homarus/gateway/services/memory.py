"""Memory at the gateway: one :class:`MemoryManager` per agent, made on first use.

At gateway start the default agent's memory is indexed in the background when its workspace has
memory files; otherwise the manager (SQLite file, or the cluster's PostgreSQL tables when the
gateway is one of several; the embedding provider chain, the ``watchfiles`` watcher) is created
the first time a run needs memory that exists (:mod:`homarus.gateway.services.memory_access`).
The local embedding model loads on the first embedding. ``agents.defaults.memorySearch.enabled:
false`` gives no manager, and the memory tools then say memory is disabled.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Protocol

from homarus.memory.chain import build_embedding_provider
from homarus.memory.embedding import EmbeddingProvider
from homarus.memory.manager import MemoryManager, embedding_settings

if TYPE_CHECKING:
    from pathlib import Path

    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig
    from homarus.storage.cluster import Cluster

__all__ = ["MemoryHost", "MemoryHub"]

log = logging.getLogger("homarus.memory")


class MemoryHost(Protocol):
    """What the agents' memories use of the gateway: the config, the state dir, the workspaces."""

    @property
    def config(self) -> HomarusConfig: ...

    paths: StatePaths

    @property
    def cluster(self) -> Cluster | None: ...

    def workspace_dir(self, agent_id: str) -> Path: ...


class MemoryHub:
    def __init__(self, gateway: MemoryHost) -> None:
        self.gateway = gateway
        self._managers: dict[str, MemoryManager] = {}
        self._providers: list[EmbeddingProvider] = []
        self._closed = False

    def for_agent(self, agent_id: str) -> MemoryManager | None:
        """The agent's memory (created on first call), or None when memory is off or closed."""
        cfg = self.gateway.config.agents.defaults.memory_search
        if not cfg.enabled or self._closed:
            return None
        manager = self._managers.get(agent_id)
        if manager is None:
            provider, reason = build_embedding_provider(embedding_settings(cfg), dict(os.environ))
            if provider is not None:
                self._providers.append(provider)
            else:
                log.info("memory for agent %s: keyword search only (%s)", agent_id, reason)
            index = None
            cluster = self.gateway.cluster
            if cluster is not None:  # every gateway searches, and one at a time writes, one index
                from homarus.memory.pg_index import PgIndex

                index = PgIndex(cluster.blocking, agent_id, use_vec=cfg.store.vector.enabled)
            manager = MemoryManager.from_config(
                index=index,
                agent_id=agent_id,
                workspace=self.gateway.workspace_dir(agent_id),
                state_dir=self.gateway.paths.state_dir,
                config=cfg,
                provider=provider,
                provider_reason=reason,
            )
            manager.start_watching()
            self._managers[agent_id] = manager
        return manager

    def index_at_startup(self) -> None:
        """Start indexing the default agent's memory in the background (the gateway calls this when
        that workspace has memory files: :func:`homarus.memory.has_memory_files`)."""
        agent_id = self.gateway.config.agents.default_id
        manager = self.for_agent(agent_id)
        if manager is not None:
            manager.sync_in_background("startup")

    async def aclose(self) -> None:
        self._closed = True
        managers, self._managers = dict(self._managers), {}
        for agent_id, manager in managers.items():
            try:
                await manager.aclose()
            except Exception:
                log.exception("closing memory of agent %s failed", agent_id)
        for provider in self._providers:
            await provider.aclose()
        self._providers.clear()
