"""InjectionQueue: dedupe, TTL, bounds, exactly-once drains, persistence, file modes."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from homarus.plugins.injections import InjectionQueue

KEY = "agent:main:main"


class FakeClock:
    def __init__(self, t: float = 1_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_enqueue_and_drain_in_chronological_order_across_plugins(tmp_path: Path) -> None:
    clock = FakeClock()
    q = InjectionQueue(tmp_path / "injections", clock=clock)
    a = q.enqueue(KEY, "alpha", "first", metadata={"n": 1}, plugin_name="Alpha")
    clock.t += 1
    b = q.enqueue(KEY, "beta", "second", placement="append_context")
    clock.t += 1
    c = q.enqueue(KEY, "alpha", "third", idempotency_key="k")
    assert a.enqueued and b.enqueued and c.enqueued and a.reason is None
    assert len({a.id, b.id, c.id}) == 3
    assert [e.text for e in q.pending(KEY)] == ["first", "second", "third"]
    drained = q.drain(KEY)
    assert [(e.id, e.plugin_id, e.text) for e in drained] == [
        (a.id, "alpha", "first"),
        (b.id, "beta", "second"),
        (c.id, "alpha", "third"),
    ]
    assert drained[0].to_json() == {
        "id": a.id,
        "pluginId": "alpha",
        "pluginName": "Alpha",
        "text": "first",
        "placement": "prepend_context",
        "createdAt": 1_000_000,
        "idempotencyKey": None,
        "ttlMs": None,
        "metadata": {"n": 1},
    }
    assert drained[1].placement == "append_context" and drained[2].idempotency_key == "k"
    assert q.drain(KEY) == [] and q.pending(KEY) == []
    assert not q.path_for(KEY).exists()  # an empty queue leaves no file


def test_duplicate_per_plugin_idempotency_key(tmp_path: Path) -> None:
    q = InjectionQueue(tmp_path)
    first = q.enqueue(KEY, "alpha", "one", idempotency_key="daily")
    dup = q.enqueue(KEY, "alpha", "one again", idempotency_key="daily")
    assert (dup.enqueued, dup.reason, dup.id) == (False, "duplicate", first.id)
    assert first.to_json(KEY) == {"enqueued": True, "id": first.id, "sessionKey": KEY}
    assert dup.to_json(KEY) == {"enqueued": False, "id": first.id, "sessionKey": KEY, "reason": "duplicate"}
    assert q.enqueue(KEY, "beta", "other plugin, same key", idempotency_key="daily").enqueued
    assert q.enqueue("agent:main:other", "alpha", "other session", idempotency_key="daily").enqueued
    assert [e.text for e in q.drain(KEY)] == ["one", "other plugin, same key"]
    assert q.enqueue(KEY, "alpha", "after the drain", idempotency_key="daily").enqueued


def test_ttl_expiry_drops_entries(tmp_path: Path) -> None:
    clock = FakeClock()
    q = InjectionQueue(tmp_path, clock=clock)
    q.enqueue(KEY, "p", "short", ttl_ms=1_000)
    q.enqueue(KEY, "p", "long", ttl_ms=10_000)
    q.enqueue(KEY, "p", "forever")
    clock.t += 0.999
    assert [e.text for e in q.pending(KEY)] == ["short", "long", "forever"]
    clock.t += 0.001
    assert [e.text for e in q.drain(KEY)] == ["long", "forever"]
    q.enqueue(KEY, "p", "stale", ttl_ms=5, idempotency_key="x")
    clock.t += 1
    # the expired entry neither blocks its idempotency key nor counts toward capacity
    assert q.enqueue(KEY, "p", "fresh", idempotency_key="x").enqueued
    assert [e.text for e in q.drain(KEY)] == ["fresh"]


def test_bounds_and_invalid_input(tmp_path: Path) -> None:
    q = InjectionQueue(tmp_path)
    for i in range(50):
        assert q.enqueue(KEY, "p", f"t{i}").enqueued
    full = q.enqueue(KEY, "p", "one too many")
    assert (full.enqueued, full.reason) == (False, "capacity")
    assert len(q.drain(KEY)) == 50
    assert q.enqueue(KEY, "p", "x" * 20_000).enqueued
    bad_inputs: list[dict[str, object]] = [
        dict(text="x" * 20_001),
        dict(text="   "),
        dict(placement="middle"),
        dict(ttl_ms=0),
        dict(metadata={"blob": "y" * 20_000}),
        dict(metadata={"fn": object()}),
        dict(plugin_id=""),
        dict(session_key=""),
    ]
    for bad in bad_inputs:
        args: dict[str, object] = {"session_key": KEY, "plugin_id": "p", "text": "ok", **bad}
        res = q.enqueue(**args)  # type: ignore[arg-type]
        assert (res.enqueued, res.reason) == (False, "invalid_input"), bad
    assert len(q.pending(KEY)) == 1


def test_exactly_once_with_concurrent_drains_and_enqueues(tmp_path: Path) -> None:
    store = tmp_path / "injections"
    total = 40
    producer = InjectionQueue(store)
    got: list[list[str]] = [[], []]
    start = threading.Barrier(3)

    def drainer(slot: int) -> None:
        q = InjectionQueue(store)  # separate instances share only the files and their locks
        start.wait()
        for _ in range(60):
            got[slot].extend(e.id for e in q.drain(KEY))

    def produce() -> None:
        start.wait()
        for i in range(total):
            assert producer.enqueue(KEY, f"p{i % 3}", f"text {i}").enqueued

    threads = [threading.Thread(target=drainer, args=(i,)) for i in (0, 1)] + [threading.Thread(target=produce)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    leftover = [e.id for e in producer.drain(KEY)]
    everything = got[0] + got[1] + leftover
    assert len(everything) == total and len(set(everything)) == total


def test_two_threads_draining_the_same_queue(tmp_path: Path) -> None:
    q = InjectionQueue(tmp_path)
    ids = {q.enqueue(KEY, "p", f"t{i}").id for i in range(30)}
    results: list[list[str]] = [[], []]
    start = threading.Barrier(2)

    def drain(slot: int) -> None:
        start.wait()
        results[slot] = [e.id for e in InjectionQueue(tmp_path).drain(KEY)]

    threads = [threading.Thread(target=drain, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(map(len, results)) == [0, 30]  # one drain got everything, the other nothing
    assert set(results[0] + results[1]) == ids


def test_persistence_across_instances_and_file_mode(tmp_path: Path) -> None:
    store = tmp_path / "state" / "injections"
    first = InjectionQueue(store)
    res = first.enqueue(KEY, "p", "survives a restart", ttl_ms=60_000, metadata={"why": "test"})
    path = first.path_for(KEY)
    assert path.parent == store and path.name == f"{hashlib.sha256(KEY.encode()).hexdigest()}.json"
    assert path.stat().st_mode & 0o777 == 0o600 and store.stat().st_mode & 0o777 == 0o700
    on_disk = json.loads(path.read_text())
    assert on_disk["sessionKey"] == KEY and on_disk["entries"][0]["id"] == res.id
    assert not path.with_name(path.name + ".lock").exists()  # the lock is gone once released

    again = InjectionQueue(store)
    drained = again.drain(KEY)
    assert [(e.id, e.text, e.ttl_ms, e.metadata) for e in drained] == [
        (res.id, "survives a restart", 60_000, {"why": "test"})
    ]
    assert InjectionQueue(store).drain(KEY) == []


def test_clear_and_corrupt_file(tmp_path: Path) -> None:
    q = InjectionQueue(tmp_path)
    q.enqueue(KEY, "p", "a")
    q.enqueue(KEY, "p", "b")
    assert q.clear(KEY) == 2 and q.drain(KEY) == []
    assert q.clear(KEY) == 0
    q.path_for(KEY).write_text("{not json")
    assert q.drain(KEY) == []  # set aside, not fatal for the turn
    assert [p.name for p in tmp_path.iterdir() if ".corrupt." in p.name]
    assert q.enqueue(KEY, "p", "fresh").enqueued and [e.text for e in q.drain(KEY)] == ["fresh"]
