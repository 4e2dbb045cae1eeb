"""Tests for the idempotency cache: TTL with a fake clock, size bound, terminal flags."""

from __future__ import annotations

import pytest

from homarus.queue.dedupe import DedupeCache, DedupeEntry


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_defaults() -> None:
    cache = DedupeCache()
    assert cache.ttl_s == 300.0
    assert cache.max_entries == 1000
    assert len(cache) == 0


def test_put_and_get(clock: FakeClock) -> None:
    cache = DedupeCache(clock=clock)
    entry = cache.put("agent:k1", "accepted", payload={"runId": "k1"})
    assert entry == DedupeEntry(1000.0, "accepted", True, {"runId": "k1"}, None)
    assert cache.get("agent:k1") is entry
    assert cache.get("agent:other") is None
    assert len(cache) == 1


def test_put_replaces_entry(clock: FakeClock) -> None:
    cache = DedupeCache(clock=clock)
    cache.put("k", "accepted")
    clock.now += 10
    cache.put("k", "error", ok=False, error={"code": "UNAVAILABLE"})
    got = cache.get("k")
    assert got is not None
    assert (got.ts, got.status, got.ok, got.payload, got.error) == (
        1010.0,
        "error",
        False,
        None,
        {"code": "UNAVAILABLE"},
    )
    assert len(cache) == 1


def test_ttl_expiry(clock: FakeClock) -> None:
    cache = DedupeCache(ttl_s=300, clock=clock)
    cache.put("k", "ok")
    clock.now += 300  # exactly at the TTL: still there
    assert cache.get("k") is not None
    clock.now += 0.001
    assert cache.get("k") is None
    assert len(cache) == 0  # an expired entry is dropped on read


def test_put_sweeps_expired_entries(clock: FakeClock) -> None:
    cache = DedupeCache(ttl_s=60, clock=clock)
    cache.put("old1", "ok")
    cache.put("old2", "ok")
    clock.now += 30
    cache.put("mid", "ok")
    clock.now += 31  # old1/old2 are now 61 s old, mid 31 s
    cache.put("new", "ok")
    assert len(cache) == 2
    assert cache.get("old1") is None
    assert cache.get("old2") is None
    assert cache.get("mid") is not None
    assert cache.get("new") is not None


def test_refreshing_a_key_renews_its_ttl(clock: FakeClock) -> None:
    cache = DedupeCache(ttl_s=60, clock=clock)
    cache.put("a", "accepted")
    cache.put("b", "accepted")
    clock.now += 50
    cache.put("a", "ok")  # a moves to the end with a new timestamp
    clock.now += 20
    cache.put("c", "ok")
    assert cache.get("b") is None
    assert cache.get("a") is not None
    assert len(cache) == 2


def test_max_entries_evicts_oldest(clock: FakeClock) -> None:
    cache = DedupeCache(max_entries=3, clock=clock)
    for i in range(5):
        clock.now += 1
        cache.put(f"k{i}", "ok")
    assert len(cache) == 3
    assert [cache.get(f"k{i}") is not None for i in range(5)] == [False, False, True, True, True]


def test_max_entries_eviction_respects_refresh(clock: FakeClock) -> None:
    cache = DedupeCache(max_entries=2, clock=clock)
    cache.put("a", "ok")
    cache.put("b", "ok")
    cache.put("a", "ok")  # a is now the newest
    cache.put("c", "ok")
    assert cache.get("b") is None
    assert cache.get("a") is not None
    assert cache.get("c") is not None


@pytest.mark.parametrize(
    ("status", "terminal"),
    [
        ("accepted", False),
        ("started", False),
        ("in_flight", False),
        ("ok", True),
        ("error", True),
        ("timeout", True),
        ("interrupted", True),
    ],
)
def test_terminal_flags(clock: FakeClock, status: str, terminal: bool) -> None:
    cache = DedupeCache(clock=clock)
    assert cache.put("k", status).terminal is terminal
