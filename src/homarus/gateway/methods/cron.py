"""`cron.list`, `cron.status`, `cron.runs` (read) and `cron.add/update/remove/run` (admin).

The handlers are thin: the job itself is validated by ``homarus.cron`` (one place for the rules
the methods, the model's ``cron`` tool and the CLI share). The service lives in
``runtime.services["cron"]`` once ``cron_wiring.start_cron`` ran; before that the methods answer
``UNAVAILABLE``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from homarus.cron.service import CronService
from homarus.errors import InvalidRequest, Unavailable
from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.security.scopes import ADMIN, READ

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway

__all__ = ["register", "service_of"]

_JOB_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"


class _JobRef(Params):
    id: str | None = Field(default=None, pattern=_JOB_ID)
    job_id: str | None = Field(default=None, alias="jobId", pattern=_JOB_ID)

    @model_validator(mode="after")
    def _one_id(self) -> _JobRef:
        if self.id is None and self.job_id is None:
            raise ValueError("jobId is required")
        if self.id is not None and self.job_id is not None and self.id != self.job_id:
            raise ValueError("id and jobId differ")
        return self

    @property
    def ref(self) -> str:
        return self.job_id or self.id or ""


class ListParams(Params):
    include_disabled: bool = Field(default=True, alias="includeDisabled")
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0)
    query: str | None = Field(default=None, max_length=200)
    enabled: Literal["all", "enabled", "disabled"] | None = None
    sort_by: Literal["nextRunAtMs", "updatedAtMs", "name"] = Field(default="nextRunAtMs", alias="sortBy")
    sort_dir: Literal["asc", "desc"] = Field(default="asc", alias="sortDir")


class AddParams(Params):
    """The job's own fields are checked by the cron models (nested objects stay plain JSON here)."""

    name: str
    schedule: dict[str, Any]
    payload: dict[str, Any]
    session_target: str | None = Field(default=None, alias="sessionTarget")
    wake_mode: str | None = Field(default=None, alias="wakeMode")
    agent_id: str | None = Field(default=None, alias="agentId")
    session_key: str | None = Field(default=None, alias="sessionKey")
    description: str | None = None
    enabled: bool | None = None
    delete_after_run: bool | None = Field(default=None, alias="deleteAfterRun")
    delivery: dict[str, Any] | None = None


class UpdateParams(_JobRef):
    patch: dict[str, Any]


class RemoveParams(_JobRef):
    pass


class RunParams(_JobRef):
    mode: Literal["force", "due"] = "force"


class RunsParams(_JobRef):
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0)


def service_of(gateway: Gateway) -> CronService:
    service = gateway.runtime.services.get("cron")
    if not isinstance(service, CronService):
        raise Unavailable("cron is not running", retryable=True)
    return service


async def cron_status(call: MethodCall, p: EmptyParams) -> dict[str, Any]:
    return service_of(call.gateway).status()


async def cron_list(call: MethodCall, p: ListParams) -> dict[str, Any]:
    return service_of(call.gateway).list_jobs(
        include_disabled=p.include_disabled,
        limit=p.limit,
        offset=p.offset,
        query=p.query,
        enabled=p.enabled,
        sort_by=p.sort_by,
        sort_dir=p.sort_dir,
    )


async def cron_add(call: MethodCall, p: AddParams) -> dict[str, Any]:
    spec = p.model_dump(by_alias=True, exclude_none=True)
    return await service_of(call.gateway).add(spec, default_agent_id=call.gateway.config.agents.default_id)


async def cron_update(call: MethodCall, p: UpdateParams) -> dict[str, Any]:
    if not p.patch:
        raise InvalidRequest("cron.update: patch is empty")
    return await service_of(call.gateway).update(p.ref, p.patch)


async def cron_remove(call: MethodCall, p: RemoveParams) -> dict[str, Any]:
    return await service_of(call.gateway).remove(p.ref)


async def cron_run(call: MethodCall, p: RunParams) -> dict[str, Any]:
    return await service_of(call.gateway).run(p.ref, mode=p.mode)


async def cron_runs(call: MethodCall, p: RunsParams) -> dict[str, Any]:
    return await service_of(call.gateway).runs(p.ref, limit=p.limit, offset=p.offset)


def register(gateway: Gateway) -> None:
    m = gateway.methods
    m.register("cron.status", cron_status, scope=READ)
    m.register("cron.list", cron_list, scope=READ, params=ListParams)
    m.register("cron.runs", cron_runs, scope=READ, params=RunsParams)
    m.register("cron.add", cron_add, scope=ADMIN, params=AddParams)
    m.register("cron.update", cron_update, scope=ADMIN, params=UpdateParams)
    m.register("cron.remove", cron_remove, scope=ADMIN, params=RemoveParams)
    m.register("cron.run", cron_run, scope=ADMIN, params=RunParams)
