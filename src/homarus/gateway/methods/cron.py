"""`cron.get`, `cron.list`, `cron.status`, `cron.runs` (read) and `cron.add/update/remove/run` (admin).

The handlers are thin: the job itself is validated by ``homarus.cron`` (one place for the rules
the methods, the model's ``cron`` tool and the CLI share). The service is the gateway's ``cron``,
loaded and started on first use when no job store existed at start.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from homarus.errors import InvalidRequest
from homarus.gateway.router import EmptyParams, MethodCall, Params
from homarus.patterns import Pattern
from homarus.protocol.compat import Unsupported, compat_params

__all__: list[str] = []

_JOB_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"


class _JobRef(Params):
    id: Annotated[str, Pattern(_JOB_ID)] | None = None
    job_id: Annotated[str, Pattern(_JOB_ID)] | None = Field(default=None, alias="jobId")

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


@compat_params(
    inert={
        "sessionKey": "jobs are listed per agent (agentId); a job's session is in its row",
        "sessionAgentId": "jobs are listed per agent (agentId); a job's session is in its row",
    }
)
class ListParams(Params):
    include_disabled: bool = Field(default=True, alias="includeDisabled")
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0)
    query: str | None = Field(default=None, max_length=200)
    enabled: Literal["all", "enabled", "disabled"] | None = None
    sort_by: Literal["nextRunAtMs", "updatedAtMs", "name"] = Field(default="nextRunAtMs", alias="sortBy")
    sort_dir: Literal["asc", "desc"] = Field(default="asc", alias="sortDir")
    #: the original's (v4) options: one agent's jobs; delivery previews and compact rows (Homarus
    #: has no previews and one row shape: accepted, no effect)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    include_delivery_previews: bool | None = Field(default=None, alias="includeDeliveryPreviews")
    compact: bool | None = None
    #: v4 filters, applied: the schedule kind, the last run's status, what triggers the job
    schedule_kind: Literal["all", "at", "every", "cron"] | None = Field(default=None, alias="scheduleKind")
    last_run_status: str | None = Field(default=None, alias="lastRunStatus", max_length=32)
    trigger: str | None = Field(default=None, max_length=32)


@compat_params(
    inert={
        "declarationKey": "jobs declared by plugins are not a Homarus feature",
        "displayName": "a job's name is what every view shows",
        "owner": "Homarus has one owner: every job is theirs",
    },
    unsupported={
        "failureAlert": Unsupported("failed runs are in cron.runs and the audit log; no alerts are sent", False),
        "pacing": Unsupported("schedules are fixed (at, every, cron); there is no dynamic cadence"),
        "trigger": Unsupported("jobs run on their schedule; script triggers are not a Homarus feature"),
    },
)
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
    #: the job's ``configRevision`` as the caller read it: refused if the job changed since
    expected_config_revision: str | None = Field(default=None, alias="expectedConfigRevision", max_length=128)


class RemoveParams(_JobRef):
    pass


class GetParams(_JobRef):
    pass


class RunParams(_JobRef):
    mode: Literal["force", "due"] = "force"
    #: Homarus's: answer once the run is over, with its status (``homarus cron run``); the
    #: original's clients leave it out and get ``runId`` at once, to wait on through cron.runs
    wait: bool = False


class RunsParams(Params):
    """One job's runs (``scope: "job"``, the default when an id is given) or every job's."""

    scope: Literal["job", "all"] | None = None
    id: Annotated[str, Pattern(_JOB_ID)] | None = None
    job_id: Annotated[str, Pattern(_JOB_ID)] | None = Field(default=None, alias="jobId")
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0)
    statuses: list[str] | None = Field(default=None, max_length=10)
    status: str | None = Field(default=None, max_length=32)
    delivery_statuses: list[str] | None = Field(default=None, alias="deliveryStatuses", max_length=10)
    delivery_status: str | None = Field(default=None, alias="deliveryStatus", max_length=32)
    query: str | None = Field(default=None, max_length=200)
    sort_dir: Literal["asc", "desc"] = Field(default="desc", alias="sortDir")
    #: v4: one agent's runs (Homarus's jobs run for the default agent unless they name one)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    run_id: str | None = Field(default=None, alias="runId", min_length=1, max_length=256)

    @model_validator(mode="after")
    def _scope(self) -> RunsParams:
        if self.id is not None and self.job_id is not None and self.id != self.job_id:
            raise ValueError("id and jobId differ")
        if self.scope == "job" and self.ref is None:
            raise ValueError('scope "job" needs id or jobId')
        if self.scope == "all" and self.ref is not None:
            raise ValueError('scope "all" takes no id')
        return self

    @property
    def ref(self) -> str | None:
        return self.job_id or self.id


async def cron_status(call: MethodCall, p: EmptyParams) -> dict[str, Any]:
    return call.gateway.cron.status()


async def cron_list(call: MethodCall, p: ListParams) -> dict[str, Any]:
    return call.gateway.cron.list_jobs(
        include_disabled=p.include_disabled,
        limit=p.limit,
        offset=p.offset,
        query=p.query,
        enabled=p.enabled,
        sort_by=p.sort_by,
        sort_dir=p.sort_dir,
        schedule_kind=p.schedule_kind,
        last_run_status=p.last_run_status,
    )


async def cron_add(call: MethodCall, p: AddParams) -> dict[str, Any]:
    spec = p.model_dump(by_alias=True, exclude_none=True)
    return await call.gateway.cron.add(spec, default_agent_id=call.gateway.config.agents.default_id)


async def cron_update(call: MethodCall, p: UpdateParams) -> dict[str, Any]:
    if not p.patch:
        raise InvalidRequest("cron.update: patch is empty")
    return await call.gateway.cron.update(p.ref, p.patch, expected_revision=p.expected_config_revision)


async def cron_remove(call: MethodCall, p: RemoveParams) -> dict[str, Any]:
    return await call.gateway.cron.remove(p.ref)


async def cron_get(call: MethodCall, p: GetParams) -> dict[str, Any]:
    return call.gateway.cron.get(p.ref)


async def cron_run(call: MethodCall, p: RunParams) -> dict[str, Any]:
    return await call.gateway.cron.run(p.ref, mode=p.mode, wait=p.wait)


async def cron_runs(call: MethodCall, p: RunsParams) -> dict[str, Any]:
    # "all" is the original's way of saying "no filter"
    statuses = [s for s in (*(p.statuses or ()), *([p.status] if p.status else [])) if s != "all"]
    deliveries = [
        s for s in (*(p.delivery_statuses or ()), *([p.delivery_status] if p.delivery_status else [])) if s != "all"
    ]
    return await call.gateway.cron.runs(
        p.ref,
        limit=p.limit,
        offset=p.offset,
        statuses=statuses,
        delivery_statuses=deliveries,
        query=p.query,
        ascending=p.sort_dir == "asc",
        run_id=p.run_id,
    )
