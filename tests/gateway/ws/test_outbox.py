"""Outbox: ordered delivery, byte accounting, dropping and the slow-consumer close."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from homarus.gateway.ws.outbox import Outbox


class FakeSend:
    """Records what the writer loop sends; can be paused to simulate backpressure."""

    def __init__(self, outbox: Outbox | None = None) -> None:
        self.sent: list[dict[str, Any]] = []
        self.queued_at_send: list[int] = []
        self.outbox = outbox
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        if self.outbox is not None:
            self.queued_at_send.append(self.outbox.queued_bytes)
        self.entered.set()
        await self.gate.wait()

    @property
    def texts(self) -> list[str]:
        return [m["text"] for m in self.sent if m["type"] == "websocket.send"]


def text(msg: str) -> dict[str, Any]:
    return {"type": "websocket.send", "text": msg}


def close(code: int, reason: str = "") -> dict[str, Any]:
    return {"type": "websocket.close", "code": code, "reason": reason}


async def run_until_closed(outbox: Outbox, send: FakeSend) -> None:
    await asyncio.wait_for(outbox.run(send), timeout=2)


# --- push / accounting (no loop needed beyond the test's own) -------------------------------------


def test_initial_state() -> None:
    box = Outbox(100)
    assert (box.max_bytes, box.queued_bytes, box.dropped, box.close_code, box.close_reason) == (100, 0, 0, None, "")
    assert box.closing is False


def test_push_accounts_bytes() -> None:
    box = Outbox(100)
    assert box.push("a" * 10) is True
    assert box.push("b" * 30, droppable=True) is True
    assert box.queued_bytes == 40
    assert box.dropped == 0


def test_push_up_to_exactly_max_bytes() -> None:
    box = Outbox(20)
    assert box.push("x" * 15) is True
    assert box.push("y" * 5) is True
    assert box.queued_bytes == 20
    assert box.closing is False


def test_droppable_past_max_is_dropped_and_counted() -> None:
    box = Outbox(20)
    assert box.push("x" * 15) is True
    assert box.push("d" * 6, droppable=True) is False
    assert box.push("d" * 10, droppable=True) is False
    assert box.dropped == 2
    assert box.queued_bytes == 15
    assert box.closing is False
    assert box.push("y" * 5) is True  # room is still there for a frame that fits


def test_non_droppable_past_max_closes_slow_consumer() -> None:
    box = Outbox(20)
    box.push("x" * 15)
    assert box.push("y" * 6) is False
    assert box.closing is True
    assert (box.close_code, box.close_reason) == (1008, "slow consumer")
    assert box.queued_bytes == 0  # the queue was discarded
    assert box.dropped == 0


def test_single_frame_larger_than_max_goes_out_when_idle() -> None:
    box = Outbox(10)
    assert box.push("z" * 11) is True  # one big answer is not a slow consumer
    assert box.closing is False
    assert box.push("a") is False  # but nothing more fits behind it
    assert (box.close_code, box.close_reason) == (1008, "slow consumer")


def test_size_counts_utf8_bytes_not_characters() -> None:
    box = Outbox(10)
    assert box.push("ab") is True
    assert box.queued_bytes == 2
    assert box.push("éé", droppable=True) is True  # 4 bytes
    assert box.queued_bytes == 6
    assert box.push("😀😀", droppable=True) is False  # 8 bytes would exceed 10
    assert box.dropped == 1


def test_push_after_close_is_refused_and_not_counted() -> None:
    box = Outbox(100)
    box.close(1000)
    assert box.push("late") is False
    assert box.push("late", droppable=True) is False
    assert box.queued_bytes == 0
    assert box.dropped == 0


def test_close_is_idempotent_first_wins() -> None:
    box = Outbox(100)
    box.push("keep")
    box.close(1012, "service restart")
    box.close(1008, "slow consumer", discard=True)
    assert (box.close_code, box.close_reason) == (1012, "service restart")
    assert box.queued_bytes == 4  # the second close's discard did not apply


def test_close_reason_truncated_to_120_bytes() -> None:
    box = Outbox(100)
    box.close(1008, "é" * 100)
    assert box.close_reason == "é" * 60


# --- the writer loop ---------------------------------------------------------------------------------


async def test_run_sends_in_order_then_close_last() -> None:
    box = Outbox(1000)
    for msg in ("one", "two", "three"):
        box.push(msg)
    box.close(1000)
    send = FakeSend(box)
    await run_until_closed(box, send)
    assert send.sent == [text("one"), text("two"), text("three"), close(1000)]
    assert send.queued_at_send == [8, 5, 0, 0]  # bytes leave the account as each frame is sent
    assert box.queued_bytes == 0


async def test_run_waits_for_frames_pushed_later() -> None:
    box = Outbox(1000)
    send = FakeSend(box)
    task = asyncio.create_task(box.run(send))
    await asyncio.sleep(0)
    assert send.sent == []
    box.push("a")
    await asyncio.sleep(0)
    box.push("b")
    box.push("c", droppable=True)
    await asyncio.sleep(0)
    assert send.texts == ["a", "b", "c"]
    box.close(1012, "service restart")
    await asyncio.wait_for(task, timeout=2)
    assert send.sent == [text("a"), text("b"), text("c"), close(1012, "service restart")]


async def test_close_on_idle_outbox_wakes_writer() -> None:
    box = Outbox(1000)
    send = FakeSend(box)
    task = asyncio.create_task(box.run(send))
    await asyncio.sleep(0)
    box.close(4001, "gateway auth changed")
    await asyncio.wait_for(task, timeout=2)
    assert send.sent == [close(4001, "gateway auth changed")]


async def test_close_with_discard_drops_queue() -> None:
    box = Outbox(1000)
    box.push("never")
    box.push("sent")
    box.close(1008, "bye", discard=True)
    send = FakeSend(box)
    await run_until_closed(box, send)
    assert send.sent == [close(1008, "bye")]


async def test_slow_consumer_while_send_blocked() -> None:
    box = Outbox(10)
    send = FakeSend(box)
    send.gate.clear()  # the client stopped reading
    task = asyncio.create_task(box.run(send))
    box.push("first")
    await asyncio.wait_for(send.entered.wait(), timeout=2)
    assert send.texts == ["first"]
    assert box.queued_bytes == 0
    assert box.push("1234") is True
    assert box.push("56789", droppable=True) is True
    assert box.push("delta", droppable=True) is False  # 9 + 5 > 10
    assert box.dropped == 1
    assert box.push("final") is False  # non-droppable: slow consumer
    assert box.queued_bytes == 0
    send.gate.set()
    await asyncio.wait_for(task, timeout=2)
    assert send.sent == [text("first"), close(1008, "slow consumer")]


async def test_accounting_frees_room_as_frames_are_sent() -> None:
    box = Outbox(10)
    send = FakeSend(box)
    task = asyncio.create_task(box.run(send))
    for _ in range(5):
        assert box.push("x" * 10) is True  # each fits once the previous one went out
        await asyncio.sleep(0)
    box.close(1000)
    await asyncio.wait_for(task, timeout=2)
    assert send.texts == ["x" * 10] * 5
    assert send.sent[-1] == close(1000)


async def test_send_error_propagates_out_of_run() -> None:
    box = Outbox(100)
    box.push("a")

    async def failing(message: dict[str, Any]) -> None:
        raise ConnectionResetError("peer gone")

    with pytest.raises(ConnectionResetError, match="peer gone"):
        await asyncio.wait_for(box.run(failing), timeout=2)
