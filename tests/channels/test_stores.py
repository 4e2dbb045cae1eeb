"""The channel stores on a real SQLite file and on a real PostgreSQL (a cluster's shared tables,
``channels/pg_db.py``), the same tests on both: the inbox (dedupe, cursor in the same
transaction), the outbox (idempotent keys, one conversation in order, the crash rules), pairing
(codes, TTL, the per-account cap). A pairing approved on one gateway holds on another."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from homarus.channels import pairing as pairing_mod
from homarus.channels.db import ChannelDb, ChannelStore
from homarus.channels.inbox import Inbox
from homarus.channels.model import InboundMessage, OutboundMessage, Target
from homarus.channels.outbox import Outbox
from homarus.channels.pairing import CODE_ALPHABET, MAX_PENDING, PairingStore
from homarus.channels.pg_db import PgChannelDb
from homarus.errors import InvalidRequest, NotFound
from homarus.storage.blocking import BlockingDatabase
from homarus.storage.migrations import migrate_at


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], ChannelStore]]:
    """Opens the store again, as a restarted gateway (or another gateway of the cluster) does."""
    opened: list[ChannelStore] = []
    pools: list[BlockingDatabase] = []
    if request.param == "sqlite":

        def open_store() -> ChannelStore:
            opened.append(ChannelDb(tmp_path / "channels.sqlite"))
            return opened[-1]

    else:
        url = request.getfixturevalue("pg_url")
        asyncio.run(migrate_at(url))

        def open_store() -> ChannelStore:
            pools.append(BlockingDatabase(url, max_size=2))
            opened.append(PgChannelDb(pools[-1]))
            return opened[-1]

    yield open_store
    for store in opened:
        store.close()
    for pool in pools:
        pool.close()


@pytest.fixture
def db(opener: Callable[[], ChannelStore]) -> ChannelStore:
    return opener()


def msg(message_id: str, chat: str = "1", text: str = "hi") -> InboundMessage:
    return InboundMessage("telegram", "default", "direct", chat, message_id, chat, text=text)


def piece(chat: str, text: str) -> OutboundMessage:
    return OutboundMessage(Target("telegram", "default", chat), text)


# -- inbox -----------------------------------------------------------------------------------------
def test_inbox_skips_redeliveries_and_stores_the_cursor_with_the_messages(
    db: ChannelStore, opener: Callable[[], ChannelStore]
) -> None:
    inbox = Inbox(db)
    first = inbox.commit([msg("1"), msg("2")], cursor=("telegram", "default", "offset", "11"))
    again = inbox.commit([msg("2"), msg("3")], cursor=("telegram", "default", "offset", "12"))
    assert len(first) == 2 and len(again) == 1  # message 2 came twice, is stored once
    assert [r.message.message_id for r in inbox.received()] == ["1", "2", "3"]
    assert [r.id for r in inbox.received()] == first + again
    db.close()
    reopened = Inbox(opener())  # what a restarted gateway (or the one taking the channels over) sees
    assert reopened.cursor("telegram", "default", "offset") == "12"
    assert len(reopened.received()) == 3
    assert reopened.commit([msg("3")], cursor=("telegram", "default", "offset", "13")) == []


def test_inbox_conversations_in_arrival_order_and_final_marks_stick(db: ChannelStore) -> None:
    inbox = Inbox(db)
    ids = inbox.commit([msg("1", chat="b"), msg("2", chat="a"), msg("3", chat="b")])
    assert inbox.conversations_waiting() == ["telegram:default:b", "telegram:default:a"]
    inbox.mark([ids[0]], "dispatched", run_id="r1")
    inbox.mark([ids[0]], "denied")  # a final row is never changed again
    row = inbox.get(ids[0])
    assert row is not None and (row.status, row.run_id) == ("dispatched", "r1")
    with pytest.raises(ValueError, match="not a final"):
        inbox.mark([ids[1]], "received")
    assert inbox.counts() == {"dispatched": 1, "received": 2}


# -- outbox ----------------------------------------------------------------------------------------
def test_outbox_keys_are_idempotent_and_a_conversation_goes_out_in_order(db: ChannelStore) -> None:
    outbox = Outbox(db)
    assert outbox.enqueue([("k1", piece("a", "one")), ("k2", piece("a", "two")), ("k3", piece("b", "x"))]) == 3
    assert outbox.enqueue([("k1", piece("a", "one again"))]) == 0
    due = outbox.due()
    assert [r.message.text for r in due] == ["one", "x"]  # only each conversation's head
    head = due[0]
    assert outbox.mark_sending(head.id) and not outbox.mark_sending(head.id)
    assert [r.message.text for r in outbox.due()] == ["x"]  # a's head is in flight: nothing else of a
    assert outbox.mark_transmitted(head.id) and outbox.mark_sent(head.id, "900")
    assert [r.message.text for r in outbox.due()] == ["two", "x"]


def test_outbox_after_a_crash_resends_what_never_left_and_trusts_what_was_transmitted(db: ChannelStore) -> None:
    outbox = Outbox(db)
    outbox.enqueue([("never-left", piece("a", "1")), ("on-the-wire", piece("b", "2"))])
    a, b = outbox.due()
    outbox.mark_sending(a.id)
    outbox.mark_sending(b.id)
    outbox.mark_transmitted(b.id)
    assert outbox.recover() == {"resent": 1, "unconfirmed": 1}
    again = outbox.get(a.id)
    trusted = outbox.get(b.id)
    assert again is not None and again.status == "pending"
    assert trusted is not None and trusted.status == "sent" and "unconfirmed" in (trusted.last_error or "")


def test_outbox_retries_wait_for_their_time_floods_do_not_use_an_attempt_and_dead_letters_replay(
    db: ChannelStore,
) -> None:
    outbox = Outbox(db)
    outbox.enqueue([("k", piece("a", "hello"))])
    (row,) = outbox.due()
    outbox.mark_sending(row.id)
    later = int(time.time() * 1000) + 60_000
    outbox.retry(row.id, "timeout", later)
    assert outbox.due() == [] and outbox.next_due_at() == later
    assert outbox.due(now=later)[0].attempts == 1
    outbox.mark_sending(row.id)
    outbox.wait_flood(row.id, "429 retry after 3", later)
    flooded = outbox.get(row.id)
    assert flooded is not None and flooded.attempts == 1  # the platform's wait is not a failure
    outbox.dead(row.id, "403 blocked")
    assert [r.id for r in outbox.dead_letters()] == [row.id]
    assert not outbox.replay(row.id + 1)
    assert outbox.replay(row.id) and outbox.due()[0].attempts == 0
    outbox.dead(row.id, "again")
    assert outbox.drop(row.id) and outbox.counts() == {"cancelled": 1}
    assert not outbox.replay(row.id)  # a dropped piece stays dropped


# -- pairing ---------------------------------------------------------------------------------------
def test_pairing_codes_are_unambiguous_one_per_sender_and_capped_per_account(db: ChannelStore) -> None:
    store = PairingStore(db)
    first, created = store.request("telegram", "default", "1", {"name": "Ada"})
    assert created and first is not None and len(first.code) == 8 and set(first.code) <= set(CODE_ALPHABET)
    assert not set(CODE_ALPHABET) & set("0O1I")
    same, created_again = store.request("telegram", "default", "1", {})
    assert same == first and not created_again  # asking again does not make a new code
    for sender in range(2, MAX_PENDING + 1):
        assert store.request("telegram", "default", str(sender), {})[0] is not None
    full, _ = store.request("telegram", "default", "99", {})
    assert full is None  # strangers cannot flood the owner
    assert store.request("telegram", "other", "99", {})[0] is not None  # the cap is per account


def test_pairing_approve_is_one_use_checks_the_account_and_expires(
    db: ChannelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PairingStore(db)
    request, _ = store.request("telegram", "default", "1", {})
    assert request is not None
    with pytest.raises(InvalidRequest):
        store.approve("telegram", "not a code")
    with pytest.raises(NotFound):
        store.approve("telegram", request.code, account_id="other")
    with pytest.raises(NotFound):
        store.approve("discord", request.code)
    approved = store.approve("telegram", request.code.lower(), by="cli")
    assert approved.sender_id == "1" and store.is_allowed("telegram", "default", "1")
    with pytest.raises(NotFound):
        store.approve("telegram", request.code)  # used
    late, _ = store.request("telegram", "default", "2", {})
    assert late is not None
    now = time.time()
    monkeypatch.setattr(pairing_mod, "_now_ms", lambda: int((now + pairing_mod.TTL_MS / 1000 + 1) * 1000))
    with pytest.raises(NotFound):
        store.approve("telegram", late.code)
    assert store.pending() == []
    assert store.revoke("telegram", "default", "1") and not store.is_allowed("telegram", "default", "1")


def test_a_pairing_approved_on_one_gateway_holds_on_another(
    db: ChannelStore, opener: Callable[[], ChannelStore]
) -> None:
    here, there = PairingStore(db), PairingStore(opener())
    request, _ = here.request("telegram", "default", "7", {"name": "Ada"})
    assert request is not None and [r.code for r in there.pending()] == [request.code]
    there.approve("telegram", request.code, by="cli")
    assert here.is_allowed("telegram", "default", "7") and here.pending() == []
    again, _ = here.request("telegram", "default", "8", {})
    assert again is not None
    there.approve("telegram", again.code)
    assert [a["senderId"] for a in here.approved("telegram")] == ["7", "8"]
