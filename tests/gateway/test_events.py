"""EventBus: global seq for broadcasts, none for targeted sends, per-recipient scope guards."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from homarus.gateway.events import EventBus
from homarus.security.scopes import ADMIN, APPROVALS, PAIRING, READ, WRITE


@dataclass
class FakeRecipient:
    conn_id: str
    role: str = "operator"
    scopes: frozenset[str] = frozenset()
    caps: frozenset[str] = frozenset()
    accept: bool = True
    pushed: list[tuple[str, bool]] = field(default_factory=list)

    def push(self, text: str, *, droppable: bool = False) -> bool:
        self.pushed.append((text, droppable))
        return self.accept

    @property
    def frames(self) -> list[dict[str, Any]]:
        return [orjson.loads(t) for t, _ in self.pushed]

    @property
    def events(self) -> list[str]:
        return [f["event"] for f in self.frames]


def bus_with(*recipients: FakeRecipient) -> EventBus:
    bus = EventBus()
    for r in recipients:
        bus.add(r)
    return bus


# --- membership ---------------------------------------------------------------------------------


def test_add_remove_len_recipients() -> None:
    a, b = FakeRecipient("a"), FakeRecipient("b")
    bus = bus_with(a, b)
    assert len(bus) == 2
    assert bus.recipients() == [a, b]
    bus.remove("a")
    bus.remove("missing")  # no error
    assert len(bus) == 1
    assert bus.recipients() == [b]


def test_add_same_conn_id_replaces() -> None:
    old, new = FakeRecipient("c"), FakeRecipient("c")
    bus = bus_with(old, new)
    assert bus.recipients() == [new]
    bus.broadcast("tick")
    assert old.pushed == []
    assert len(new.pushed) == 1


# --- broadcast and seq -----------------------------------------------------------------------------


def test_broadcast_frame_shape_and_seq() -> None:
    r = FakeRecipient("a")
    bus = bus_with(r)
    assert bus.last_seq == 0
    assert bus.broadcast("tick", {"ts": 123}) == 1
    assert r.frames == [{"type": "event", "event": "tick", "payload": {"ts": 123}, "seq": 1}]
    assert bus.last_seq == 1


def test_seq_increments_per_broadcast() -> None:
    r = FakeRecipient("a")
    bus = bus_with(r)
    seqs = [bus.broadcast("tick", {"n": i}) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    assert [f["seq"] for f in r.frames] == [1, 2, 3, 4, 5]
    assert bus.last_seq == 5


def test_seq_is_global_and_advances_even_without_recipients() -> None:
    bus = EventBus()
    assert bus.broadcast("tick") == 1
    r = FakeRecipient("late")
    bus.add(r)
    assert bus.broadcast("tick") == 2
    assert r.frames == [{"type": "event", "event": "tick", "seq": 2}]


def test_same_encoded_text_goes_to_everyone() -> None:
    a, b = FakeRecipient("a"), FakeRecipient("b")
    bus_with(a, b).broadcast("presence", {"presence": []}, state_version={"presence": 3, "health": 1})
    assert a.pushed == b.pushed
    assert a.frames == [
        {
            "type": "event",
            "event": "presence",
            "payload": {"presence": []},
            "seq": 1,
            "stateVersion": {"presence": 3, "health": 1},
        }
    ]


def test_broadcast_droppable_flag_passed_through() -> None:
    r = FakeRecipient("a")
    bus = bus_with(r)
    bus.broadcast("chat", {"state": "delta"}, droppable=True)
    bus.broadcast("chat", {"state": "final"})
    assert [d for _, d in r.pushed] == [True, False]


def test_broadcast_reaches_recipient_even_if_its_push_refuses() -> None:
    full, ok = FakeRecipient("full", accept=False), FakeRecipient("ok")
    bus = bus_with(full, ok)
    assert bus.broadcast("tick") == 1
    assert len(full.pushed) == 1
    assert len(ok.pushed) == 1


def test_recipient_removed_during_broadcast_is_safe() -> None:
    bus = EventBus()

    @dataclass
    class Leaver(FakeRecipient):
        def push(self, text: str, *, droppable: bool = False) -> bool:
            bus.remove(self.conn_id)
            return super().push(text, droppable=droppable)

    a, b = Leaver("a"), FakeRecipient("b")
    bus.add(a)
    bus.add(b)
    bus.broadcast("tick")
    assert len(a.pushed) == 1
    assert len(b.pushed) == 1
    assert bus.recipients() == [b]


# --- scope guards -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "scopes", "guard", "delivered"),
    [
        ("operator", frozenset({READ}), READ, True),
        ("operator", frozenset({WRITE}), READ, True),
        ("operator", frozenset({ADMIN}), READ, True),
        ("operator", frozenset(), READ, False),
        ("operator", frozenset({PAIRING}), READ, False),
        ("operator", frozenset({READ}), WRITE, False),
        ("operator", frozenset({APPROVALS}), APPROVALS, True),
        ("operator", frozenset({READ, WRITE}), APPROVALS, False),
        ("operator", frozenset({ADMIN}), APPROVALS, True),
        ("operator", frozenset({ADMIN}), PAIRING, True),
        ("operator", frozenset({PAIRING}), PAIRING, True),
        ("node", frozenset({ADMIN}), READ, False),
        ("node", frozenset({READ}), READ, False),
        ("node", frozenset({PAIRING}), PAIRING, False),
        ("node", frozenset(), None, True),
        ("operator", frozenset(), None, True),
    ],
)
def test_guard(role: str, scopes: frozenset[str], guard: str | None, delivered: bool) -> None:
    r = FakeRecipient("x", role=role, scopes=scopes)
    bus_with(r).broadcast("device.pair.requested", {"requestId": "q"}, guard=guard)
    assert (len(r.pushed) == 1) is delivered


def test_guarded_broadcast_still_consumes_seq() -> None:
    reader = FakeRecipient("reader", scopes=frozenset({READ}))
    approver = FakeRecipient("approver", scopes=frozenset({APPROVALS}))
    bus = bus_with(reader, approver)
    bus.broadcast("tick")
    bus.broadcast("exec.approval.requested", {"id": "a1"}, guard=APPROVALS)
    bus.broadcast("tick")
    assert [f["seq"] for f in reader.frames] == [1, 3]  # a gap, as in the original
    assert [f["seq"] for f in approver.frames] == [1, 2, 3]
    assert approver.events == ["tick", "exec.approval.requested", "tick"]


# --- targeted send_to ----------------------------------------------------------------------------------


def test_send_to_has_no_seq_and_counts_deliveries() -> None:
    a, b, c = FakeRecipient("a"), FakeRecipient("b"), FakeRecipient("c")
    bus = bus_with(a, b, c)
    assert bus.send_to(["a", "c", "ghost"], "sessions.changed", {"sessionKey": "k"}) == 2
    assert a.frames == [{"type": "event", "event": "sessions.changed", "payload": {"sessionKey": "k"}}]
    assert c.frames == a.frames
    assert b.pushed == []
    assert bus.last_seq == 0
    assert bus.broadcast("tick") == 1  # targeted sends did not consume a seq


def test_send_to_ignores_refused_pushes_in_count() -> None:
    ok, full = FakeRecipient("ok"), FakeRecipient("full", accept=False)
    bus = bus_with(ok, full)
    assert bus.send_to(["ok", "full"], "session.message", {"m": 1}, droppable=True) == 1
    assert ok.pushed[0][1] is True
    assert full.pushed[0][1] is True


def test_send_to_without_payload_and_empty_targets() -> None:
    r = FakeRecipient("r")
    bus = bus_with(r)
    assert bus.send_to([], "x") == 0
    assert bus.send_to(iter(["r"]), "ping") == 1
    assert r.frames == [{"type": "event", "event": "ping"}]


def test_send_to_is_not_scope_guarded() -> None:
    node = FakeRecipient("n", role="node")
    assert bus_with(node).send_to(["n"], "node.invoke.request", {"id": "i"}) == 1
