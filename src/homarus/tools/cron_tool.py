"""The model's ``cron`` tool: look at, create, change, remove and trigger scheduled jobs.

The tool reaches the scheduler through ``ctx.services.cron`` (any object with the
:class:`CronControl` shape; the gateway lends its cron service), so this layer never imports the
gateway. Jobs a model creates belong to its own agent unless it names another. ``run`` only
enqueues: a cron run started from inside a cron run must not wait on the lane it occupies.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function
from homarus.tools.services import CronControl

__all__ = ["cron_tool"]

MAX_OUTPUT_CHARS = 20_000
Action = Literal["status", "list", "add", "update", "remove", "run", "runs"]


def _control(ctx: ToolContext) -> CronControl:
    service = ctx.services.cron
    if service is None:
        raise InvalidRequest("cron is not available in this context")
    return service


def _need(value: Any, what: str, action: str) -> Any:
    if value is None:
        raise InvalidRequest(f"cron {action}: {what} is required")
    return value


def _job_line(job: dict[str, Any]) -> str:
    schedule = job.get("schedule", {})
    when = schedule.get("at") or schedule.get("expr") or f"every {schedule.get('everyMs')} ms"
    state = job.get("state", {})
    flags = "" if job.get("enabled", True) else " (disabled)"
    last = f", last {state['lastRunStatus']}" if state.get("lastRunStatus") else ""
    return f"{job.get('id')}  {job.get('name')}  [{schedule.get('kind')}: {when}]{flags}{last}"


async def cron(
    ctx: ToolContext,
    action: Action,
    job_id: Annotated[str | None, Field(max_length=128)] = None,
    job: dict[str, Any] | None = None,
    patch: dict[str, Any] | None = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
    include_disabled: bool = True,
) -> ToolResult:
    """Manage scheduled jobs (reminders, recurring checks, timed agent runs).

    Actions: status; list; add (job: {name, schedule, payload, ...}); update (job_id, patch); remove
    (job_id); run (job_id: start it now); runs (job_id: its recent run history).
    schedule: {"kind":"at","at":"2026-01-31T09:00:00Z" or "+20m"} | {"kind":"every","everyMs":3600000}
    | {"kind":"cron","expr":"0 9 * * 1-5","tz":"Europe/Berlin"}.
    payload: {"kind":"systemEvent","text":...} posts a note into the main session; {"kind":"agentTurn",
    "message":...} runs an isolated agent turn whose reply is announced to the main session.
    """
    svc = _control(ctx)
    if action == "status":
        data = svc.status()
        text = json.dumps(data)
    elif action == "list":
        data = svc.list_jobs(include_disabled=include_disabled, limit=limit)
        lines = [_job_line(j) for j in data["jobs"]]
        text = "\n".join(lines) if lines else "no cron jobs"
    elif action == "add":
        data = await svc.add(_need(job, "job", action), default_agent_id=ctx.agent_id)
        text = f"added {_job_line(data)}; next run at {data.get('state', {}).get('nextRunAtMs')} (epoch ms)"
    elif action == "update":
        data = await svc.update(_need(job_id, "job_id", action), _need(patch, "patch", action))
        text = f"updated {_job_line(data)}"
    elif action == "remove":
        data = await svc.remove(_need(job_id, "job_id", action))
        text = "removed" if data.get("removed") else f"no such job: {job_id}"
    elif action == "run":
        data = await svc.run(_need(job_id, "job_id", action), mode="force", wait=False)
        text = "started" if data.get("enqueued") else f"not started: {data.get('reason')}"
    else:
        data = await svc.runs(_need(job_id, "job_id", action), limit=limit)
        text = json.dumps(data["entries"], ensure_ascii=False) if data["entries"] else "no runs yet"
    return ToolResult.text(text[:MAX_OUTPUT_CHARS], details=data)


def cron_tool() -> Tool:
    return tool_from_function(
        cron, tags=frozenset({"automation"}), summary="Reminders and scheduled jobs", deferred=True
    )
