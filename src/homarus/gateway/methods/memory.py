"""`memory.status` and `memory.search`: an agent's memory index for operators (reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from homarus.errors import InvalidRequest, Unavailable
from homarus.gateway.router import MethodCall, Params

if TYPE_CHECKING:
    from homarus.memory.manager import MemoryManager

__all__: list[str] = []


class StatusParams(Params):
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)


class SearchParams(StatusParams):
    query: str = Field(min_length=1, max_length=2000)
    max_results: int | None = Field(default=None, alias="maxResults", ge=1, le=100)
    min_score: float | None = Field(default=None, alias="minScore", ge=0.0, le=1.0)


def _manager(call: MethodCall, agent_id: str | None) -> MemoryManager:
    cfg = call.gateway.config
    agent = agent_id or cfg.agents.default_id
    if agent not in cfg.agents.ids:
        raise InvalidRequest(f'unknown agent id "{agent}"')
    manager = call.gateway.memory.for_agent(agent)
    if manager is None:
        raise Unavailable("memory is disabled (agents.defaults.memorySearch.enabled is false)")
    return manager


async def memory_status(call: MethodCall, p: StatusParams) -> dict[str, Any]:
    status = await _manager(call, p.agent_id).status()
    return status.to_dict()


async def memory_search(call: MethodCall, p: SearchParams) -> dict[str, Any]:
    response = await _manager(call, p.agent_id).search(p.query, max_results=p.max_results, min_score=p.min_score)
    return response.to_dict()
