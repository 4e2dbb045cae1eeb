"""``usage.cost`` (what the model calls cost, from the usage ledger) and ``usage.status``.

``usage.status`` is, on the original, the providers' own quota windows (plan limits read from
their accounts): Homarus asks no vendor for those, so it answers with none, not with made-up
figures; the accounting it keeps itself is ``usage.cost``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.router import MethodCall, Params
from homarus.protocol.compat import compat_params
from homarus.usage.report import MAX_DAYS, DateRange, cost_summary, date_range, sessions_usage

__all__: list[str] = []


class CostParams(Params):
    """The original's ``usage.cost`` parameters."""

    days: int | None = Field(default=None, ge=1, le=MAX_DAYS)
    range: Literal["7d", "30d", "90d", "1y", "all"] | None = None
    start_date: str | None = Field(default=None, alias="startDate", max_length=10)
    end_date: str | None = Field(default=None, alias="endDate", max_length=10)
    mode: Literal["utc", "gateway", "specific"] | None = None
    utc_offset: str | None = Field(default=None, alias="utcOffset", max_length=16)
    time_zone: str | None = Field(default=None, alias="timeZone", max_length=64)
    agent_id: str | None = Field(default=None, alias="agentId", min_length=1, max_length=64)
    agent_scope: Literal["all"] | None = Field(default=None, alias="agentScope")


@compat_params(
    inert={
        "groupBy": "a session's usage is kept under its key whatever its session ids: rows are families already",
        "includeHistorical": "a session's usage is kept under its key whatever its session ids",
        "includeContextWeight": "context weights are not kept in the usage ledger",
        "creatorKey": "a single-user gateway: every session has the one creator",
    }
)
class SessionsParams(CostParams):
    key: str | None = Field(default=None, min_length=1, max_length=512)
    limit: int = Field(default=100, ge=1, le=1000)


def _agent(call: MethodCall, p: CostParams) -> str | None:
    gw = call.gateway
    if p.agent_scope == "all" and p.agent_id is not None:
        raise InvalidRequest("agentScope=all cannot be combined with agentId")
    agent = None if p.agent_scope == "all" else (p.agent_id or gw.config.agents.default_id)
    if agent is not None and agent not in gw.config.agents.ids:
        raise InvalidRequest(f'unknown agent id "{agent}"')
    return agent


def _period(p: CostParams) -> DateRange:
    return date_range(
        days=p.days,
        range_=p.range,
        start_date=p.start_date,
        end_date=p.end_date,
        mode=p.mode,
        time_zone=p.time_zone,
        utc_offset=p.utc_offset,
    )


async def usage_cost(call: MethodCall, p: CostParams) -> dict[str, Any]:
    agent, period = _agent(call, p), _period(p)
    rows = await asyncio.to_thread(call.gateway.usage.rows, period.start_ms, period.end_ms, agent)
    summary = cost_summary(rows, period, updated_at=int(time.time() * 1000))
    summary["agentScope"] = "all" if agent is None else agent
    return summary


async def sessions_usage_(call: MethodCall, p: SessionsParams) -> dict[str, Any]:
    """``sessions.usage``: each session's tokens and cost over the period (the Usage view)."""
    agent, period = _agent(call, p), _period(p)
    rows = await asyncio.to_thread(call.gateway.usage.rows, period.start_ms, period.end_ms, agent)
    return sessions_usage(rows, period, updated_at=int(time.time() * 1000), limit=p.limit, key=p.key)


async def usage_status(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"updatedAt": int(time.time() * 1000), "providers": []}
