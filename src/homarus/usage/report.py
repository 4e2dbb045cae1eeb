"""The ledger's rows as the original's ``usage.cost`` summary: totals, one entry per calendar day
(cut at the midnight of the time zone asked for), and the same totals by model, provider, agent,
channel and session.

Days: ``days`` back from today (default 30), a ``range`` ("7d", "30d", "90d", "1y", "all"), or
``startDate``/``endDate`` (``YYYY-MM-DD``, both). Time zone: UTC by default, the gateway's own
(``mode: "gateway"``), or ``mode: "specific"`` with an IANA ``timeZone`` (DST-aware) or a
``utcOffset`` such as ``UTC+5:30``; as in the original, a zone this machine does not know falls
back to the offset when one is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Any

from homarus.errors import InvalidRequest
from homarus.usage.ledger import HOUR_MS, Row

__all__ = ["DateRange", "cost_summary", "date_range", "empty_totals", "sessions_usage"]

DEFAULT_DAYS = 30
MAX_DAYS = 3650
#: sessions listed in a summary (the costliest first): the rest are in the totals only
MAX_SESSIONS = 50
_RANGES = {"7d": 7, "30d": 30, "90d": 90, "1y": 365}
_OFFSET = re.compile(r"^UTC([+-])(\d{1,2})(?::([0-5]\d))?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True, slots=True)
class DateRange:
    start_ms: int
    end_ms: int
    days: int
    zone: tzinfo

    def day_of(self, hour: int) -> str:
        return datetime.fromtimestamp(hour * HOUR_MS / 1000, self.zone).date().isoformat()


def _zone(mode: str | None, time_zone: str | None, utc_offset: str | None) -> tzinfo:
    if mode == "gateway":
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    if mode != "specific":
        return UTC
    offset = _offset(utc_offset)
    if time_zone:
        try:
            from zoneinfo import ZoneInfo

            return ZoneInfo(time_zone)
        except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
            if offset is not None:
                return offset
            raise InvalidRequest("invalid timeZone: expected a valid IANA time zone") from None
    if offset is not None:
        return offset
    if utc_offset:
        raise InvalidRequest("invalid utcOffset: expected UTC-12:00 through UTC+14:00")
    return UTC


def _offset(raw: str | None) -> tzinfo | None:
    m = _OFFSET.match((raw or "").strip())
    if m is None:
        return None
    minutes = (1 if m.group(1) == "+" else -1) * (int(m.group(2)) * 60 + int(m.group(3) or 0))
    return timezone(timedelta(minutes=minutes)) if -720 <= minutes <= 840 else None


def _parse_date(raw: str, name: str) -> date:
    try:
        if not _DATE.match(raw):
            raise ValueError(raw)
        return date.fromisoformat(raw)
    except ValueError:
        raise InvalidRequest(f"invalid {name}: expected a valid YYYY-MM-DD calendar date") from None


def date_range(
    *,
    days: int | None = None,
    range_: str | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
    mode: str | None = None,
    time_zone: str | None = None,
    utc_offset: str | None = None,
    now: datetime | None = None,
) -> DateRange:
    """The period a report covers, from the original's parameters (errors in its words)."""
    zone = _zone(mode, time_zone, utc_offset)
    today = (now or datetime.now(UTC)).astimezone(zone).date()
    if (start_date is None) != (end_date is None):
        raise InvalidRequest("startDate and endDate must be provided together")
    if start_date is not None and end_date is not None:
        first, last = _parse_date(start_date, "startDate"), _parse_date(end_date, "endDate")
        if first > last:
            raise InvalidRequest("startDate must not be after endDate")
    elif range_ == "all":
        first, last = date(1970, 1, 2), today
    else:
        n = _RANGES.get(range_ or "", DEFAULT_DAYS if days is None else days)
        if not 1 <= n <= MAX_DAYS:
            raise InvalidRequest(f"invalid days: expected 1 to {MAX_DAYS}")
        first, last = today - timedelta(days=n - 1), today
    start = datetime.combine(first, datetime.min.time(), zone)
    end = datetime.combine(last + timedelta(days=1), datetime.min.time(), zone)
    return DateRange(int(start.timestamp() * 1000), int(end.timestamp() * 1000) - 1, (last - first).days + 1, zone)


def empty_totals() -> dict[str, Any]:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "totalCost": 0.0,
        "inputCost": 0.0,
        "outputCost": 0.0,
        "cacheReadCost": 0.0,
        "cacheWriteCost": 0.0,
        "missingCostEntries": 0,
    }


def _add(totals: dict[str, Any], r: Row) -> None:
    totals["input"] += r.input
    totals["output"] += r.output
    totals["cacheRead"] += r.cache_read
    totals["cacheWrite"] += r.cache_write
    totals["totalTokens"] += r.total_tokens
    totals["totalCost"] += r.total_cost
    totals["inputCost"] += r.input_cost
    totals["outputCost"] += r.output_cost
    totals["cacheReadCost"] += r.cache_read_cost
    totals["cacheWriteCost"] += r.cache_write_cost
    totals["missingCostEntries"] += r.missing_cost
    if r.missing_cost:
        by_model = totals.setdefault("missingCostByModel", {})
        ref = f"{r.provider}/{r.model}"
        by_model[ref] = by_model.get(ref, 0) + r.missing_cost


def _grouped(rows: Iterable[Row], key: Callable[[Row], tuple[Any, ...]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        group = out.get(key(r))
        if group is None:
            group = out[key(r)] = {"calls": 0, "runs": 0, "totals": empty_totals()}
        group["calls"] += r.calls
        group["runs"] += r.runs
        _add(group["totals"], r)
    return out


def _costliest(groups: dict[tuple[Any, ...], dict[str, Any]]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    return sorted(groups.items(), key=lambda kv: (-kv[1]["totals"]["totalCost"], -kv[1]["totals"]["totalTokens"]))


def cost_summary(rows: list[Row], period: DateRange, *, updated_at: int) -> dict[str, Any]:
    """The ``usage.cost`` answer for ``rows`` over ``period`` (rows outside it are left out)."""
    first_hour, last_hour = -(-period.start_ms // HOUR_MS), period.end_ms // HOUR_MS
    rows = [r for r in rows if first_hour <= r.hour <= last_hour]
    totals = empty_totals()
    for r in rows:
        _add(totals, r)
    daily = _grouped(rows, lambda r: (period.day_of(r.hour),))
    sessions = _costliest(_grouped(rows, lambda r: (r.agent_id, r.session_key, r.channel)))
    return {
        "updatedAt": updated_at,
        "days": period.days,
        "startDate": period.day_of(first_hour),
        "endDate": period.day_of(last_hour),
        "daily": [{"date": d, **g["totals"]} for (d,), g in sorted(daily.items())],
        "totals": totals,
        "byModel": [
            {"provider": p, "model": m, "count": g["calls"], "runs": g["runs"], "totals": g["totals"]}
            for (p, m), g in _costliest(_grouped(rows, lambda r: (r.provider, r.model)))
        ],
        "byProvider": [
            {"provider": p, "count": g["calls"], "totals": g["totals"]}
            for (p,), g in _costliest(_grouped(rows, lambda r: (r.provider,)))
        ],
        "byAgent": [
            {"agentId": a, "totals": g["totals"]} for (a,), g in _costliest(_grouped(rows, lambda r: (r.agent_id,)))
        ],
        "byChannel": [
            {"channel": c, "totals": g["totals"]} for (c,), g in _costliest(_grouped(rows, lambda r: (r.channel,)))
        ],
        "sessions": [
            {"agentId": a, "key": k, "channel": c, "runs": g["runs"], "calls": g["calls"], "totals": g["totals"]}
            for (a, k, c), g in sessions[:MAX_SESSIONS]
        ],
        "sessionCount": len(sessions),
    }


def sessions_usage(
    rows: list[Row], period: DateRange, *, updated_at: int, limit: int, key: str | None = None
) -> dict[str, Any]:
    """The ``sessions.usage`` answer: each session's totals and days, costliest first, with the
    same aggregates as :func:`cost_summary` in the original's layout (message and tool counts
    are not in the ledger: left at zero rather than guessed)."""
    first_hour, last_hour = -(-period.start_ms // HOUR_MS), period.end_ms // HOUR_MS
    rows = [r for r in rows if first_hour <= r.hour <= last_hour and (key is None or r.session_key == key)]
    by_session: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        by_session.setdefault((r.agent_id, r.session_key), []).append(r)
    sessions: list[dict[str, Any]] = []
    for (agent, session), own in by_session.items():
        totals = empty_totals()
        for r in own:
            _add(totals, r)
        days = _grouped(own, lambda r: (period.day_of(r.hour),))
        models = _grouped(own, lambda r: (period.day_of(r.hour), r.provider, r.model))
        last = max(r.hour for r in own)
        usage: dict[str, Any] = {
            **totals,
            "firstActivity": min(r.hour for r in own) * HOUR_MS,
            "lastActivity": last * HOUR_MS,
            "dailyBreakdown": [
                {"date": d, "tokens": g["totals"]["totalTokens"], "cost": g["totals"]["totalCost"]}
                for (d,), g in sorted(days.items())
            ],
            "dailyModelUsage": [
                {"date": d, "provider": pr, "model": m, "tokens": g["totals"]["totalTokens"]}
                | {"cost": g["totals"]["totalCost"], "count": g["calls"]}
                for (d, pr, m), g in sorted(models.items())
            ],
        }
        channel = next((r.channel for r in own if r.channel), None)
        sessions.append(
            {"key": session, "agentId": agent, "updatedAt": last * HOUR_MS, "channel": channel, "usage": usage}
        )
    sessions.sort(key=lambda s: (-s["usage"]["totalCost"], -s["usage"]["totalTokens"]))
    summary = cost_summary(rows, period, updated_at=updated_at)
    daily = [{"date": d["date"], "tokens": d["totalTokens"], "cost": d["totalCost"]} for d in summary["daily"]]
    aggregates = {
        "sessionCount": len(sessions),
        "messages": {"total": 0, "user": 0, "assistant": 0, "toolCalls": 0, "toolResults": 0, "errors": 0},
        "tools": {"totalCalls": 0, "uniqueTools": 0, "tools": []},
        "byModel": summary["byModel"],
        "byProvider": summary["byProvider"],
        "byAgent": summary["byAgent"],
        "byChannel": summary["byChannel"],
        "byCreator": [],
        "costDaily": summary["daily"],
        "dailyLatency": [],
        "modelDaily": [u for s in sessions for u in s["usage"]["dailyModelUsage"]],
        "daily": [d | {"messages": 0, "toolCalls": 0, "errors": 0} for d in daily],
    }
    return {
        "updatedAt": updated_at,
        "startDate": summary["startDate"],
        "endDate": summary["endDate"],
        "sessions": sessions[:limit],
        "totals": summary["totals"],
        "aggregates": aggregates,
        "creatorOptions": [],
    }
