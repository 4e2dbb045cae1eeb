"""When a job runs next: ``at`` (once), ``every`` (anchored interval), ``cron`` (expression + zone).

Times are epoch milliseconds throughout. Cron expressions are computed in the job's IANA zone
by ``croniter`` (imported lazily: it is only needed once a cron job exists). Two rules on top:

* 6-field expressions put seconds **first** (as OpenClaw's croner does); croniter wants them
  last, so the fields are rotated before use.
* When clocks fall back, a wall-clock time happens twice. A job pinned to fixed hours
  ("30 2 * * *") runs at the first of the two only; expressions with a wildcard or step in the
  hour field keep running in real time. In the spring gap croniter moves a run to the first
  valid moment after it, which is what classic cron does too.

Top-of-hour expressions ("0 * * * *") get a deterministic per-job offset of up to 5 minutes so
many jobs do not all fire on the same second; ``staggerMs: 0`` keeps exact timing.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from homarus.cron.models import AtSchedule, CronExprSchedule, EverySchedule
from homarus.errors import InvalidRequest

__all__ = [
    "BACKOFF_MS",
    "DEFAULT_STAGGER_MS",
    "ScheduleError",
    "backoff_ms",
    "first_run",
    "next_run",
    "normalize_schedule",
    "parse_at",
    "stagger_offset_ms",
]

AnySchedule = AtSchedule | EverySchedule | CronExprSchedule
DEFAULT_STAGGER_MS = 5 * 60_000
BACKOFF_MS = (30_000, 60_000, 5 * 60_000, 15 * 60_000, 60 * 60_000)
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
_RELATIVE = re.compile(r"^\+?((?:\d+(?:ms|s|m|h|d|w))+)$")
_RELATIVE_PART = re.compile(r"(\d+)(ms|s|m|h|d|w)")
_FOLD_SKIP_LIMIT = 4


class ScheduleError(InvalidRequest):
    """A schedule that cannot be parsed or computed; the message says which part is wrong."""


def backoff_ms(consecutive_errors: int) -> int:
    """Delay before retrying after ``consecutive_errors`` failures in a row (>= 1)."""
    return BACKOFF_MS[min(max(consecutive_errors, 1), len(BACKOFF_MS)) - 1]


# -- at ----------------------------------------------------------------------------------------
def parse_at(text: str, now_ms: int | None = None) -> int:
    """``text`` as epoch ms: ISO-8601 (no offset = UTC), or relative ("+20m", "1h30m") to ``now_ms``."""
    raw = text.strip()
    rel = _RELATIVE.match(raw)
    if rel is not None:
        if now_ms is None:
            raise ScheduleError(f'relative time "{text}" must be resolved when the job is added')
        return now_ms + sum(int(n) * _UNITS_MS[u] for n, u in _RELATIVE_PART.findall(rel.group(1)))
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise ScheduleError(
            f'invalid "at" time "{text}": use ISO-8601 (e.g. 2026-01-31T09:00:00Z) or a relative time like "+20m"'
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- cron expressions ----------------------------------------------------------------------------
def _croniter() -> Any:
    return importlib.import_module("croniter").croniter


def _fields(expr: str) -> list[str]:
    """The expression in croniter's order (seconds last); raises ScheduleError on a bad field count."""
    fields = expr.split()
    if len(fields) == 1 and fields[0].startswith("@"):
        return fields
    if len(fields) == 5:
        return fields
    if len(fields) == 6:
        return [*fields[1:], fields[0]]
    raise ScheduleError(f'invalid cron expression "{expr}": expected 5 fields, or 6 with seconds first')


def _zone(tz: str | None) -> ZoneInfo:
    if tz is None:
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f'unknown time zone "{tz}": use an IANA name like Europe/Berlin') from None


def _fixed_hours(fields: list[str]) -> bool:
    return len(fields) >= 2 and not any(c in fields[1] for c in "*/")


def _top_of_hour(fields: list[str]) -> bool:
    if len(fields) < 5:
        return False
    seconds_zero = len(fields) == 5 or fields[5] == "0"
    return fields[0] == "0" and seconds_zero and re.fullmatch(r"\d+", fields[1]) is None


def stagger_offset_ms(schedule: CronExprSchedule, job_id: str) -> int:
    """The job's fixed offset inside its stagger window (0 when not staggered)."""
    window = schedule.stagger_ms
    if window is None:
        try:
            window = DEFAULT_STAGGER_MS if _top_of_hour(_fields(schedule.expr)) else 0
        except ScheduleError:
            window = 0
    if window <= 0:
        return 0
    digest = hashlib.sha256(job_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % window


def _second_occurrence(when: datetime, zone: ZoneInfo) -> bool:
    """Whether ``when`` is the repeat of a wall-clock time that a fall-back transition produced."""
    naive = when.astimezone(zone).replace(tzinfo=None)
    first = naive.replace(tzinfo=zone, fold=0).timestamp()
    second = naive.replace(tzinfo=zone, fold=1).timestamp()
    return first != second and when.timestamp() == second


def _cron_next(schedule: CronExprSchedule, after_ms: int, offset_ms: int) -> int | None:
    fields = _fields(schedule.expr)
    zone = _zone(schedule.tz)
    mod = importlib.import_module("croniter")
    base = datetime.fromtimestamp((after_ms - offset_ms) / 1000, zone)
    try:
        it = _croniter()(" ".join(fields), base)
    except (ValueError, KeyError, TypeError) as exc:
        # croniter quotes its own (field-rotated) copy of the expression: keep only the reason
        reason = re.sub(r"^\[[^\]]*\]\s*(is\s+)?", "", str(exc)) or "not acceptable"
        raise ScheduleError(f'invalid cron expression "{schedule.expr}": {reason}') from None
    skip_folds = _fixed_hours(fields)
    for _ in range(_FOLD_SKIP_LIMIT + 2):
        try:
            when: datetime = it.get_next(datetime)
        except mod.CroniterBadDateError:
            return None  # the expression names no reachable date (e.g. 30 February)
        except (ValueError, OverflowError) as exc:
            raise ScheduleError(f'cannot compute the next time of "{schedule.expr}": {exc}') from None
        if skip_folds and _second_occurrence(when, zone):
            continue
        ms = int(when.timestamp() * 1000) + offset_ms
        if ms > after_ms:
            return ms
    return None


# -- the public calculators ----------------------------------------------------------------------
def next_run(schedule: AnySchedule, after_ms: int, job_id: str) -> int | None:
    """The first run strictly after ``after_ms``, or None when the schedule has no further run."""
    if isinstance(schedule, AtSchedule):
        at = parse_at(schedule.at)
        return at if at > after_ms else None
    if isinstance(schedule, EverySchedule):
        anchor = schedule.anchor_ms if schedule.anchor_ms is not None else after_ms
        if after_ms < anchor:
            return anchor
        return anchor + ((after_ms - anchor) // schedule.every_ms + 1) * schedule.every_ms
    return _cron_next(schedule, after_ms, stagger_offset_ms(schedule, job_id))


def first_run(schedule: AnySchedule, now_ms: int, job_id: str) -> int | None:
    """A new (or re-enabled) job's first run: an ``at`` time already past runs at once."""
    if isinstance(schedule, AtSchedule):
        return parse_at(schedule.at)
    return next_run(schedule, now_ms, job_id)


def normalize_schedule(schedule: AnySchedule, now_ms: int, job_id: str) -> AnySchedule:
    """Check ``schedule`` and make it absolute: relative ``at`` → ISO, ``anchorMs`` filled in.

    Raises ScheduleError for a bad time, zone or expression, or one that never fires.
    """
    if isinstance(schedule, AtSchedule):
        return AtSchedule(kind="at", at=_iso(parse_at(schedule.at, now_ms)))
    if isinstance(schedule, EverySchedule):
        anchor = schedule.anchor_ms if schedule.anchor_ms is not None else now_ms
        return schedule.model_copy(update={"anchor_ms": anchor})
    _zone(schedule.tz)
    if _cron_next(schedule, now_ms, 0) is None:
        raise ScheduleError(f'cron expression "{schedule.expr}" has no next run time')
    return schedule
