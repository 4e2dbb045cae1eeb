"""FailureLimiter and SlidingWindowBudget driven by a fake clock."""

from __future__ import annotations

import pytest

from homarus.security import ratelimit
from homarus.security.ratelimit import FailureLimiter, SlidingWindowBudget, ceil_seconds


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def limiter(clock: FakeClock, max_attempts: int = 10, window_s: float = 60, lockout_s: float = 300) -> FailureLimiter:
    return FailureLimiter(max_attempts, window_s, lockout_s, clock=clock)


# --- FailureLimiter ------------------------------------------------------------------------------


def test_unknown_key_is_not_locked(clock: FakeClock) -> None:
    assert limiter(clock).retry_after("1.2.3.4") is None


def test_ten_failures_in_window_lock_for_300s(clock: FakeClock) -> None:
    lim = limiter(clock)
    for _ in range(9):
        assert lim.record_failure("ip") is None
        clock.advance(5)
    assert lim.retry_after("ip") is None
    assert lim.record_failure("ip") == 300
    assert lim.retry_after("ip") == 300
    clock.advance(299.5)
    assert lim.retry_after("ip") == pytest.approx(0.5)
    clock.advance(0.5)
    assert lim.retry_after("ip") is None


def test_lock_is_per_key(clock: FakeClock) -> None:
    lim = limiter(clock)
    for _ in range(10):
        lim.record_failure("a")
    assert lim.retry_after("a") == 300
    assert lim.retry_after("b") is None
    assert lim.record_failure("b") is None


def test_window_slides(clock: FakeClock) -> None:
    lim = limiter(clock)
    for _ in range(9):
        lim.record_failure("ip")
    clock.advance(60)  # the first nine are now exactly one window old: expired
    assert lim.record_failure("ip") is None
    assert lim.retry_after("ip") is None
    for _ in range(8):
        assert lim.record_failure("ip") is None
    assert lim.record_failure("ip") == 300  # ten within the new window


def test_failures_spread_over_more_than_a_window_never_lock(clock: FakeClock) -> None:
    lim = limiter(clock)
    for _ in range(100):
        assert lim.record_failure("ip") is None
        clock.advance(6.7)  # ten failures span 9 * 6.7 = 60.3 s > one window


def test_failure_just_inside_window_still_counts(clock: FakeClock) -> None:
    lim = limiter(clock)
    for _ in range(9):
        lim.record_failure("ip")
    clock.advance(59.999)
    assert lim.record_failure("ip") == 300


def test_reset_on_success_clears_count_and_lock(clock: FakeClock) -> None:
    lim = limiter(clock)
    for _ in range(9):
        lim.record_failure("ip")
    lim.reset("ip")
    assert lim.record_failure("ip") is None  # count starts over
    for _ in range(9):
        lim.record_failure("ip")
    assert lim.retry_after("ip") == 300
    lim.reset("ip")
    assert lim.retry_after("ip") is None
    lim.reset("never-seen")  # no error


def test_count_restarts_after_lockout(clock: FakeClock) -> None:
    lim = limiter(clock, max_attempts=3, window_s=60, lockout_s=30)
    for _ in range(2):
        lim.record_failure("ip")
    assert lim.record_failure("ip") == 30
    clock.advance(31)
    assert lim.retry_after("ip") is None
    assert lim.record_failure("ip") is None
    assert lim.record_failure("ip") is None
    assert lim.record_failure("ip") == 30


def test_custom_limits(clock: FakeClock) -> None:
    lim = limiter(clock, max_attempts=1, window_s=10, lockout_s=42)
    assert lim.record_failure("k") == 42
    assert lim.retry_after("k") == 42


def test_number_of_keys_is_bounded(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratelimit, "_MAX_KEYS", 3)
    lim = limiter(clock, max_attempts=1)
    for key in ("a", "b", "c"):
        lim.record_failure(key)
    lim.record_failure("a")  # "a" becomes the most recent; "b" is now the oldest
    lim.record_failure("d")
    assert lim.retry_after("b") is None  # evicted
    assert lim.retry_after("a") == 300
    assert lim.retry_after("c") == 300
    assert lim.retry_after("d") == 300


def test_real_key_bound_is_ten_thousand(clock: FakeClock) -> None:
    lim = limiter(clock, max_attempts=1)
    lim.record_failure("first")
    assert lim.retry_after("first") == 300
    for i in range(10_000):
        lim.record_failure(f"k{i}")
    assert lim.retry_after("first") is None
    assert lim.retry_after("k0") == 300
    assert lim.retry_after("k9999") == 300


# --- SlidingWindowBudget ------------------------------------------------------------------------------


def test_budget_three_per_minute(clock: FakeClock) -> None:
    budget = SlidingWindowBudget(3, 60, clock=clock)
    assert budget.try_acquire("dev") is None
    clock.advance(10)
    assert budget.try_acquire("dev") is None
    clock.advance(10)
    assert budget.try_acquire("dev") is None
    clock.advance(5)
    assert budget.try_acquire("dev") == pytest.approx(35)  # first use frees at t+60
    clock.advance(34)
    assert budget.try_acquire("dev") == pytest.approx(1)
    clock.advance(1)
    assert budget.try_acquire("dev") is None
    assert budget.try_acquire("dev") == pytest.approx(10)  # second use (t+10) frees next


def test_budget_refusals_do_not_consume(clock: FakeClock) -> None:
    budget = SlidingWindowBudget(1, 60, clock=clock)
    assert budget.try_acquire("k") is None
    for _ in range(5):
        assert budget.try_acquire("k") == pytest.approx(60)
    clock.advance(60)
    assert budget.try_acquire("k") is None


def test_budget_per_key(clock: FakeClock) -> None:
    budget = SlidingWindowBudget(3, 60, clock=clock)
    for _ in range(3):
        assert budget.try_acquire("a") is None
    assert budget.try_acquire("a") == pytest.approx(60)
    assert budget.try_acquire("b") is None


def test_budget_retry_after_has_a_floor(clock: FakeClock) -> None:
    budget = SlidingWindowBudget(1, 60, clock=clock)
    budget.try_acquire("k")
    clock.advance(59.99999)
    retry = budget.try_acquire("k")
    assert retry == 0.001


def test_budget_number_of_keys_is_bounded(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratelimit, "_MAX_KEYS", 2)
    budget = SlidingWindowBudget(1, 60, clock=clock)
    for key in ("a", "b", "c"):
        assert budget.try_acquire(key) is None
    assert budget.try_acquire("a") is None  # "a" was evicted, so its use was forgotten
    assert budget.try_acquire("c") == pytest.approx(60)


@pytest.mark.parametrize(("seconds", "expected"), [(0.0, 1), (0.001, 1), (1.0, 1), (1.2, 2), (34.5, 35), (300, 300)])
def test_ceil_seconds(seconds: float, expected: int) -> None:
    assert ceil_seconds(seconds) == expected
