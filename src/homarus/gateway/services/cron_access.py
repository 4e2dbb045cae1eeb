"""The cron service as the model's ``cron`` tool reaches it: loaded on the tool's first call.

Lending this proxy (instead of the service) lets a run start without loading the job store,
its models and its scheduler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["LazyCron"]


class LazyCron:
    """The cron service as the model's ``cron`` tool sees it, loaded on the tool's first call."""

    def __init__(self, gateway: GatewayContext) -> None:
        self.gateway = gateway

    def status(self) -> dict[str, Any]:
        return self.gateway.cron.status()

    def list_jobs(self, *, include_disabled: bool = True, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        return self.gateway.cron.list_jobs(include_disabled=include_disabled, limit=limit, offset=offset)

    async def add(self, spec: dict[str, Any], *, default_agent_id: str | None = None) -> dict[str, Any]:
        return await self.gateway.cron.add(spec, default_agent_id=default_agent_id)

    async def update(self, job_id: str, patch: dict[str, Any]) -> dict[str, Any]:
        return await self.gateway.cron.update(job_id, patch)

    async def remove(self, job_id: str) -> dict[str, Any]:
        return await self.gateway.cron.remove(job_id)

    async def run(self, job_id: str, *, mode: Literal["force", "due"] = "force", wait: bool = True) -> dict[str, Any]:
        return await self.gateway.cron.run(job_id, mode=mode, wait=wait)

    async def runs(self, job_id: str, *, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        return await self.gateway.cron.runs(job_id, limit=limit, offset=offset)
