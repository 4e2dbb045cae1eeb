"""Schedule arithmetic: at / every / cron, zones and DST, seconds-first fields, stagger, backoff."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from homarus.cron.models import AtSchedule, CronExprSchedule, EverySchedule
from homarus.cron.schedule import (
    BACKOFF_MS,
    DEFAULT_STAGGER_MS,
    ScheduleError,
    backoff_ms,
    first_run,
    next_run,
    normalize_schedule,
    parse_at,
    stagger_offset_ms,
)


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


def iso(value: int | None) -> str:
    assert value is not None
    return datetime.fromtimestamp(value / 1000, UTC).isoformat()


def cron(expr: str, tz: str | None = None, stagger: int | None = 0) -> CronExprSchedule:
    return CronExprSchedule(kind="cron", expr=expr, tz=tz, stagger_ms=stagger)


NOW = ms("2026-01-15T10:07:30+00:00")


def test_at_iso_without_offset_is_utc_and_relative_resolves_against_now() -> None:
    assert parse_at("2026-01-15T12:00:00") == ms("2026-01-15T12:00:00+00:00")
    assert parse_at("2026-01-15T12:00:00+02:00") == ms("2026-01-15T10:00:00+00:00")
    assert parse_at("+20m", NOW) == NOW + 20 * 60_000
    assert parse_at("1h30m", NOW) == NOW + 90 * 60_000
    fixed = normalize_schedule(AtSchedule(kind="at", at="+20m"), NOW, "j")
    assert isinstance(fixed, AtSchedule) and fixed.at == "2026-01-15T10:27:30.000Z"
    # once stored, a relative time can no longer be read without the moment it was added
    with pytest.raises(ScheduleError, match="resolved when the job is added"):
        parse_at("+20m")


def test_at_runs_once() -> None:
    s = AtSchedule(kind="at", at="2026-01-15T12:00:00Z")
    assert next_run(s, NOW, "j") == ms("2026-01-15T12:00:00+00:00")
    assert next_run(s, ms("2026-01-15T12:00:00+00:00"), "j") is None
    past = AtSchedule(kind="at", at="2026-01-01T00:00:00Z")
    assert first_run(past, NOW, "j") == ms("2026-01-01T00:00:00+00:00")  # overdue: runs at once


@pytest.mark.parametrize("bad", ["tomorrow", "2026-13-01T00:00:00", "+20x", ""])
def test_bad_at_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ScheduleError, match="ISO-8601"):
        parse_at(bad, NOW)


def test_every_is_anchored() -> None:
    s = EverySchedule(kind="every", every_ms=600_000, anchor_ms=ms("2026-01-15T10:00:00+00:00"))
    assert iso(next_run(s, NOW, "j")) == "2026-01-15T10:10:00+00:00"
    assert iso(next_run(s, ms("2026-01-15T10:10:00+00:00"), "j")) == "2026-01-15T10:20:00+00:00"
    before = ms("2026-01-15T09:00:00+00:00")
    assert iso(next_run(s, before, "j")) == "2026-01-15T10:00:00+00:00"
    filled = normalize_schedule(EverySchedule(kind="every", every_ms=1000), NOW, "j")
    assert isinstance(filled, EverySchedule) and filled.anchor_ms == NOW


def test_cron_in_utc_and_in_a_zone() -> None:
    assert iso(next_run(cron("15 * * * *"), NOW, "j")) == "2026-01-15T10:15:00+00:00"
    # 09:00 in New York (EST, UTC-5) is 14:00 UTC
    assert iso(next_run(cron("0 9 * * *", "America/New_York"), NOW, "j")) == "2026-01-15T14:00:00+00:00"


def test_six_fields_put_seconds_first() -> None:
    every_20s = cron("*/20 * * * * *")
    assert iso(next_run(every_20s, NOW, "j")) == "2026-01-15T10:07:40+00:00"
    at_second_5 = cron("5 30 10 * * *")
    assert iso(next_run(at_second_5, NOW, "j")) == "2026-01-15T10:30:05+00:00"


def test_dst_fall_back_runs_a_fixed_time_once() -> None:
    # Europe/Berlin leaves summer time on 2026-10-25 at 03:00 → 02:00: 02:30 happens twice
    s = cron("30 2 * * *", "Europe/Berlin")
    runs = []
    t = ms("2026-10-24T12:00:00+00:00")
    for _ in range(3):
        t = next_run(s, t, "j") or 0
        runs.append(iso(t))
    assert runs == [
        "2026-10-25T00:30:00+00:00",  # 02:30 CEST, the first one only
        "2026-10-26T01:30:00+00:00",  # 02:30 CET
        "2026-10-27T01:30:00+00:00",
    ]


def test_dst_fall_back_keeps_hourly_jobs_in_real_time() -> None:
    s = cron("0 * * * *", "Europe/Berlin")
    t = ms("2026-10-24T23:30:00+00:00")
    runs = []
    for _ in range(4):
        t = next_run(s, t, "j") or 0
        runs.append(iso(t))
    # 02:00 CEST, 02:00 CET (the repeated hour), 03:00 CET, 04:00 CET: one run per real hour
    assert runs == [
        "2026-10-25T00:00:00+00:00",
        "2026-10-25T01:00:00+00:00",
        "2026-10-25T02:00:00+00:00",
        "2026-10-25T03:00:00+00:00",
    ]


def test_dst_spring_forward_moves_a_skipped_time_to_the_first_valid_moment() -> None:
    # America/New_York jumps from 02:00 EST to 03:00 EDT on 2026-03-08: 02:30 does not exist that day
    s = cron("30 2 * * *", "America/New_York")
    t = ms("2026-03-07T12:00:00+00:00")
    runs = []
    for _ in range(3):
        t = next_run(s, t, "j") or 0
        runs.append(iso(t))
    assert runs == [
        "2026-03-08T07:00:00+00:00",  # 03:00 EDT, once
        "2026-03-09T06:30:00+00:00",  # 02:30 EDT
        "2026-03-10T06:30:00+00:00",
    ]


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("61 * * * *", "out of range"),
        ("* * *", "expected 5 fields, or 6 with seconds first"),
        ("a b c d e", "not acceptable"),
        ("*/0 * * * *", "step"),
        ("1 2 3 4 5 6 7", "expected 5 fields"),
    ],
)
def test_invalid_expressions_are_clear_errors(expr: str, message: str) -> None:
    with pytest.raises(ScheduleError, match="invalid cron expression") as err:
        normalize_schedule(cron(expr), NOW, "j")
    assert message in err.value.message
    assert "[" not in err.value.message  # croniter's rotated copy of the expression is not shown


def test_expression_without_a_next_time() -> None:
    with pytest.raises(ScheduleError, match="has no next run time"):
        normalize_schedule(cron("0 0 30 2 *"), NOW, "j")
    assert next_run(cron("0 0 30 2 *"), NOW, "j") is None


def test_unknown_zone() -> None:
    with pytest.raises(ScheduleError, match='unknown time zone "Mars/Olympus"'):
        normalize_schedule(cron("* * * * *", "Mars/Olympus"), NOW, "j")


def test_top_of_hour_stagger_is_deterministic_and_bounded() -> None:
    hourly = cron("0 * * * *", stagger=None)
    offsets = {job: stagger_offset_ms(hourly, job) for job in ("a", "b", "c", "d")}
    assert offsets == {job: stagger_offset_ms(hourly, job) for job in offsets}  # same job, same offset
    assert len(set(offsets.values())) > 1
    assert all(0 <= o < DEFAULT_STAGGER_MS for o in offsets.values())
    top = ms("2026-01-15T11:00:00+00:00")
    assert next_run(hourly, NOW, "a") == top + offsets["a"]
    # exact timing on request, and no stagger for expressions that are not top-of-hour
    assert stagger_offset_ms(cron("0 * * * *", stagger=0), "a") == 0
    assert stagger_offset_ms(cron("15 * * * *", stagger=None), "a") == 0
    assert stagger_offset_ms(cron("0 9 * * *", stagger=None), "a") == 0
    assert 0 <= stagger_offset_ms(cron("15 * * * *", stagger=10_000), "a") < 10_000


def test_staggered_run_is_never_in_the_past() -> None:
    hourly = cron("0 * * * *", stagger=None)
    offset = stagger_offset_ms(hourly, "a")
    run = ms("2026-01-15T11:00:00+00:00") + offset
    assert next_run(hourly, run - 1, "a") == run
    assert next_run(hourly, run, "a") == run + 3_600_000


def test_backoff_sequence() -> None:
    assert [backoff_ms(n) for n in range(1, 8)] == [30_000, 60_000, 300_000, 900_000, 3_600_000, 3_600_000, 3_600_000]
    assert BACKOFF_MS[0] == 30_000
