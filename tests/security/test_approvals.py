"""ApprovalManager: request/wait/resolve, id lookup, errors, deadlines, lingering, bounds, memory."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from homarus.errors import InvalidRequest, NotFound, Unavailable
from homarus.security.approvals import ApprovalManager, ApprovalRecord, plugin_remember_key


class FakeClock:
    def __init__(self, t: float = 1_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Recorder:
    def __init__(self) -> None:
        self.requested: list[ApprovalRecord] = []
        self.resolved: list[ApprovalRecord] = []

    def manager(self, kind: str = "plugin", **kwargs: Any) -> ApprovalManager:
        return ApprovalManager(kind, on_requested=self.requested.append, on_resolved=self.resolved.append, **kwargs)


PAYLOAD = {"title": "Run rm?", "toolName": "exec"}


async def test_request_wait_resolve() -> None:
    rec = Recorder()
    clock = FakeClock()
    m = rec.manager(clock=clock)
    r = m.request(PAYLOAD, timeout_ms=5_000)
    assert r.id.startswith("plugin:") and r.kind == "plugin" and r.pending
    assert (r.created_at_ms, r.expires_at_ms) == (1_000_000, 1_005_000)
    assert rec.requested == [r] and m.list() == [r] and m.get(r.id) is r
    assert r.summary() == {"id": r.id, "request": PAYLOAD, "createdAtMs": 1_000_000, "expiresAtMs": 1_005_000}

    waiter = asyncio.create_task(m.wait(r.id))
    late_waiter = asyncio.create_task(m.wait(r.id))
    await asyncio.sleep(0)
    clock.t += 1
    out = m.resolve(r.id, "allow-once", resolved_by="alice")
    assert out is r and await waiter == "allow-once" and await late_waiter == "allow-once"
    assert (r.decision, r.resolved_by, r.resolved_at_ms, r.reason) == ("allow-once", "alice", 1_001_000, "resolved")
    assert rec.resolved == [r] and m.list() == []
    assert await m.wait(r.id) == "allow-once"  # lingering: a late waiter still learns it
    with pytest.raises(NotFound) as exc:
        m.resolve(r.id, "deny", resolved_by="bob")  # no second decision
    assert exc.value.details == {"reason": "APPROVAL_NOT_FOUND"}


async def test_exec_kind_ids_are_plain_and_plugin_prefix_reserved() -> None:
    m = Recorder().manager("exec")
    assert not m.request(PAYLOAD, timeout_ms=1000).id.startswith("plugin:")
    assert m.request(PAYLOAD, timeout_ms=1000, id="abc").id == "abc"
    with pytest.raises(InvalidRequest, match="reserved"):
        m.request(PAYLOAD, timeout_ms=1000, id="plugin:x")
    assert Recorder().manager().request(PAYLOAD, timeout_ms=1000, id="x").id == "plugin:x"
    m.cancel_all()


async def test_duplicate_pending_id_refused_but_reusable_after_resolution() -> None:
    m = Recorder().manager("exec")
    m.request(PAYLOAD, timeout_ms=1000, id="dup")
    with pytest.raises(InvalidRequest, match=r"^approval id already pending$"):
        m.request(PAYLOAD, timeout_ms=1000, id="dup")
    m.resolve("dup", "deny", resolved_by=None)
    again = m.request({"n": 2}, timeout_ms=1000, id="dup")
    assert again.pending and m.get("dup") is again
    m.cancel_all()


async def test_prefix_resolution_and_ambiguity() -> None:
    m = Recorder().manager("exec")
    a = m.request(PAYLOAD, timeout_ms=1000, id="abc-111")
    b = m.request(PAYLOAD, timeout_ms=1000, id="abc-222")
    with pytest.raises(InvalidRequest, match=r"^ambiguous approval id prefix; use the full id$"):
        m.resolve("abc", "deny", resolved_by=None)
    assert m.resolve("abc-2", "deny", resolved_by=None) is b and a.pending
    assert m.resolve("abc", "allow-once", resolved_by=None) is a  # unique among pending now

    p = Recorder().manager()
    r = p.request(PAYLOAD, timeout_ms=1000)
    uuid_part = r.id.removeprefix("plugin:")
    assert p.resolve(uuid_part[:8], "deny", resolved_by=None) is r  # the kind prefix may be omitted


async def test_unknown_and_invalid() -> None:
    m = Recorder().manager()
    r = m.request(PAYLOAD, timeout_ms=1000)
    with pytest.raises(InvalidRequest, match=r"^invalid decision$"):
        m.resolve(r.id, "maybe", resolved_by=None)
    for bad in ("plugin:nope", "", "   "):
        with pytest.raises(NotFound, match=r"^unknown or expired approval id$") as exc:
            m.resolve(bad, "deny", resolved_by=None)
        assert exc.value.details == {"reason": "APPROVAL_NOT_FOUND"}
    with pytest.raises(NotFound):
        await m.wait("plugin:nope")
    assert r.pending
    m.cancel_all()


async def test_allow_always_can_be_disabled_per_record() -> None:
    m = Recorder().manager()
    r = m.request(PAYLOAD, timeout_ms=1000, allow_always=False, remember_key="p:exec")
    with pytest.raises(InvalidRequest) as exc:
        m.resolve(r.id, "allow-always", resolved_by=None)
    assert exc.value.details is not None and exc.value.details["reason"] == "APPROVAL_ALLOW_ALWAYS_UNAVAILABLE"
    assert r.pending
    m.resolve(r.id, "allow-once", resolved_by=None)
    assert not m.remembers("p:exec")


async def test_timeout_by_loop_timer_resolves_none() -> None:
    rec = Recorder()
    m = rec.manager()
    r = m.request(PAYLOAD, timeout_ms=30)
    assert await asyncio.wait_for(m.wait(r.id), 2) is None
    assert (r.decision, r.reason, r.pending) == (None, "timeout", False)
    assert rec.resolved == [r] and m.list() == []
    with pytest.raises(NotFound):
        m.resolve(r.id, "allow-once", resolved_by=None)


async def test_timeout_by_injected_clock() -> None:
    clock = FakeClock()
    m = Recorder().manager(clock=clock)
    r = m.request(PAYLOAD, timeout_ms=60_000)
    waiter = asyncio.create_task(m.wait(r.id))
    await asyncio.sleep(0)
    clock.t += 59
    assert m.list() == [r]
    clock.t += 1
    assert m.list() == []  # any access notices the deadline
    assert await waiter is None and r.reason == "timeout"


async def test_abort_cancels_with_none() -> None:
    rec = Recorder()
    m = rec.manager()
    r = m.request(PAYLOAD, timeout_ms=60_000)
    abort = asyncio.Event()
    waiter = asyncio.create_task(m.wait(r.id, abort=abort))
    other = asyncio.create_task(m.wait(r.id))
    await asyncio.sleep(0)
    abort.set()
    assert await waiter is None and await other is None
    assert (r.reason, r.decision) == ("cancelled", None) and rec.resolved == [r]
    # an already-set abort cancels at once; a decision that came first wins over a later abort
    r2 = m.request(PAYLOAD, timeout_ms=60_000)
    assert await m.wait(r2.id, abort=abort) is None and r2.reason == "cancelled"
    r3 = m.request(PAYLOAD, timeout_ms=60_000)
    m.resolve(r3.id, "deny", resolved_by=None)
    assert await m.wait(r3.id, abort=abort) == "deny"


async def test_cancelling_a_waiter_keeps_the_approval() -> None:
    m = Recorder().manager()
    r = m.request(PAYLOAD, timeout_ms=60_000)
    waiter = asyncio.create_task(m.wait(r.id))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert r.pending
    m.resolve(r.id, "allow-once", resolved_by=None)
    assert await m.wait(r.id) == "allow-once"


async def test_linger_then_vanish_with_clock_and_timer() -> None:
    clock = FakeClock()
    m = Recorder().manager(clock=clock)
    r = m.request(PAYLOAD, timeout_ms=60_000)
    m.resolve(r.id, "deny", resolved_by=None)
    clock.t += 14.9
    assert m.get(r.id) is r
    clock.t += 0.1
    assert m.get(r.id) is None
    with pytest.raises(NotFound):
        await m.wait(r.id)

    fast = Recorder().manager(linger_s=0.02)
    r2 = fast.request(PAYLOAD, timeout_ms=60_000)
    fast.resolve(r2.id, "deny", resolved_by=None)
    assert fast.get(r2.id) is r2
    await asyncio.sleep(0.06)
    assert fast._records == {}  # the timer dropped it without any access


async def test_pending_bound_and_lingering_bound() -> None:
    m = Recorder().manager("exec", max_pending=3, max_lingering=2)
    ids = [m.request(PAYLOAD, timeout_ms=60_000).id for _ in range(3)]
    with pytest.raises(Unavailable, match="too many pending approvals"):
        m.request(PAYLOAD, timeout_ms=60_000)
    for i in ids:
        m.resolve(i, "deny", resolved_by=None)
    assert [m.get(i) is not None for i in ids] == [False, True, True]  # oldest lingering dropped
    m.request(PAYLOAD, timeout_ms=60_000)  # room again
    m.cancel_all()


async def test_allow_always_memory() -> None:
    rec = Recorder()
    m = rec.manager(max_remembered=2)
    r = m.request(PAYLOAD, timeout_ms=60_000, remember_key="p1:exec")
    assert not m.remembers("p1:exec")
    m.resolve(r.id, "allow-always", resolved_by="op")
    assert m.remembers("p1:exec") and m.remembered() == ["p1:exec"]
    # the next request with that key is answered at once, without asking anyone
    again = m.request(PAYLOAD, timeout_ms=60_000, remember_key="p1:exec")
    assert (again.decision, again.resolved_by, again.pending) == ("allow-always", "remembered", False)
    assert await m.wait(again.id) == "allow-always"
    assert rec.requested == [r] and rec.resolved == [r]
    # but not when this request disallows allow-always
    strict = m.request(PAYLOAD, timeout_ms=60_000, remember_key="p1:exec", allow_always=False)
    assert strict.pending
    m.remember("k2")
    m.remember("k3")
    assert m.remembered() == ["k2", "k3"]  # bounded, oldest dropped
    assert m.forget("k2") and not m.forget("k2")
    m.cancel_all()


async def test_listener_errors_are_isolated() -> None:
    def boom(record: ApprovalRecord) -> None:
        raise RuntimeError("listener broke")

    m = ApprovalManager("plugin", on_requested=boom, on_resolved=boom)
    r = m.request(PAYLOAD, timeout_ms=60_000)
    m.resolve(r.id, "deny", resolved_by=None)
    assert await m.wait(r.id) == "deny"


async def test_expire_now_and_cancel_all() -> None:
    rec = Recorder()
    m = rec.manager()
    r = m.request(PAYLOAD, timeout_ms=60_000)
    m.expire(r.id, "no-approval-route")
    assert (r.decision, r.reason) == (None, "no-approval-route") and await m.wait(r.id) is None
    with pytest.raises(NotFound):
        m.expire(r.id)
    m.request(PAYLOAD, timeout_ms=60_000)
    m.request(PAYLOAD, timeout_ms=60_000)
    assert m.cancel_all() == 2 and len(m) == 0
    assert [x.reason for x in rec.resolved] == ["no-approval-route", "shutdown", "shutdown"]


async def test_ask_in_one_step() -> None:
    m = Recorder().manager()
    key = plugin_remember_key("guard", "exec")
    assert key is not None and plugin_remember_key("guard", None) is None
    assert await m.ask(PAYLOAD, timeout_ms=60_000, route_available=False) is None  # nobody to ask
    asker = asyncio.create_task(m.ask(PAYLOAD, timeout_ms=60_000, remember_key=key))
    await asyncio.sleep(0)
    (pending,) = m.list()
    m.resolve(pending.id, "allow-always", resolved_by="op")
    assert await asker == "allow-always"
    # remembered: answered even without a route, and without asking anyone
    assert await m.ask(PAYLOAD, timeout_ms=60_000, remember_key=key, route_available=False) == "allow-always"
    abort = asyncio.Event()
    abort.set()
    assert await m.ask(PAYLOAD, timeout_ms=60_000, abort=abort) is None
