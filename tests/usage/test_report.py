"""usage.cost summaries: days cut at the asked time zone's midnight, groupings, bad parameters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from homarus.errors import InvalidRequest
from homarus.usage.ledger import HOUR_MS, Row
from homarus.usage.report import cost_summary, date_range

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def row(at: datetime, *, model: str = "gpt", agent: str = "main", session: str = "s", cost: float = 1.0) -> Row:
    hour = int(at.timestamp() * 1000) // HOUR_MS
    return Row(hour, agent, session, "telegram", "openai", model, 1, 1, 10, 5, 2, 0, 17, cost, 0, 0, 0, cost, 0)


def test_days_back_from_today_in_utc() -> None:
    period = date_range(days=7, now=NOW)
    assert period.days == 7
    assert datetime.fromtimestamp(period.start_ms / 1000, UTC) == datetime(2026, 11, 23, tzinfo=UTC)
    assert datetime.fromtimestamp((period.end_ms + 1) / 1000, UTC) == datetime(2026, 11, 30, tzinfo=UTC)
    assert date_range(now=NOW).days == 30 and date_range(range_="1y", now=NOW).days == 365


def test_a_day_is_cut_at_the_time_zones_midnight() -> None:
    late_utc = datetime(2026, 11, 28, 23, 30, tzinfo=UTC)  # already the 29th in Berlin, still the 28th in UTC
    rows = [row(late_utc), row(datetime(2026, 11, 29, 8, 0, tzinfo=UTC))]
    utc = cost_summary(rows, date_range(days=3, now=NOW), updated_at=0)
    assert [(d["date"], d["totalTokens"]) for d in utc["daily"]] == [("2026-11-28", 17), ("2026-11-29", 17)]
    berlin = date_range(days=3, mode="specific", time_zone="Europe/Berlin", now=NOW)
    by_berlin = cost_summary(rows, berlin, updated_at=0)
    assert [(d["date"], d["totalTokens"]) for d in by_berlin["daily"]] == [("2026-11-29", 34)]
    offset = date_range(days=3, mode="specific", utc_offset="UTC+5:30", now=NOW)
    assert cost_summary(rows, offset, updated_at=0)["daily"][0]["date"] == "2026-11-29"
    # an unknown zone with an offset falls back to the offset, as on the original
    assert date_range(days=1, mode="specific", time_zone="Mars/Olympus", utc_offset="UTC-3", now=NOW).days == 1


def test_totals_and_groupings() -> None:
    rows = [
        row(NOW, model="gpt", cost=2.0),
        row(NOW, model="claude", cost=5.0, session="t"),
        row(NOW, model="gpt", agent="ops", cost=1.0),
    ]
    s = cost_summary(rows, date_range(days=1, now=NOW), updated_at=123)
    assert s["updatedAt"] == 123 and s["totals"]["totalCost"] == pytest.approx(8.0)
    assert s["totals"]["totalTokens"] == 51 and s["totals"]["cacheRead"] == 6
    assert [(m["model"], m["count"]) for m in s["byModel"]] == [("claude", 1), ("gpt", 2)]  # costliest first
    assert [a["agentId"] for a in s["byAgent"]] == ["main", "ops"]
    assert s["sessionCount"] == 3 and s["sessions"][0]["key"] == "t"
    outside = cost_summary([row(datetime(2026, 1, 1, tzinfo=UTC))], date_range(days=1, now=NOW), updated_at=0)
    assert outside["totals"]["totalTokens"] == 0 and outside["daily"] == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start_date": "2026-11-01"}, "startDate and endDate must be provided together"),
        ({"start_date": "2026-11-05", "end_date": "2026-11-01"}, "startDate must not be after endDate"),
        ({"start_date": "2026-02-30", "end_date": "2026-03-01"}, "invalid startDate"),
        ({"start_date": "26-1-1", "end_date": "2026-03-01"}, "invalid startDate"),
        ({"mode": "specific", "time_zone": "Nowhere/City"}, "invalid timeZone"),
        ({"mode": "specific", "utc_offset": "UTC+15"}, "invalid utcOffset"),
        ({"days": 0}, "invalid days"),
    ],
)
def test_bad_parameters_are_refused_in_the_originals_words(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        date_range(now=NOW, **kwargs)  # type: ignore[arg-type]
