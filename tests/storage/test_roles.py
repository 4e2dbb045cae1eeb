"""Cluster singletons (storage/roles.py) on a real PostgreSQL: one member holds a role, the next
takes it when the holder releases it or stops renewing, and a holder cut off from the database
stops the work itself before its lease runs out, so the work never runs on two members at once.
Then the gateway: the heartbeats role moves to the survivor when its holder stops."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from homarus.storage.database import Database, StorageUnavailable
from homarus.storage.migrations import migrate
from homarus.storage.roles import SELF_FENCE, Roles
from tests.conftest import TEST_TOKEN, run_gateway
from tests.pg_cluster import pg_cluster
from tests.waiting import wait_for
from tests.wsclient import open_client

TTL = 2.0


class Work:
    """A role's work: when it started and stopped."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []

    async def on(self) -> None:
        self.events.append(("on", time.monotonic()))

    async def off(self) -> None:
        self.events.append(("off", time.monotonic()))

    def running(self) -> bool:
        return bool(self.events) and self.events[-1][0] == "on"


@asynccontextmanager
async def _database(url: str) -> AsyncIterator[Database]:
    db = await Database.open(url, max_size=2, timeout_s=1.0)
    try:
        await migrate(db)
        yield db
    finally:
        await db.close()


def _member(db: Database, name: str) -> tuple[Roles, Work]:
    roles, work = Roles(db, name, TTL), Work()
    roles.want("cron", work.on, work.off)
    return roles, work


async def test_one_member_holds_a_role_and_the_next_takes_it_on_release(pg_url: str) -> None:
    async with _database(pg_url) as db:
        (a, work_a), (b, work_b) = _member(db, "a"), _member(db, "b")
        await a.tick()
        await b.tick()
        await a.settled()  # a role's work starts beside the heartbeat, not on its time
        assert a.held == ["cron"] and b.held == [] and work_a.running() and not work_b.running()
        assert (await b.holders())["cron"] == {"member": "a", "live": True}
        await a.tick()  # renewing keeps it
        await b.tick()
        assert b.held == []
        await a.release()  # returns once the work has stopped
        assert not work_a.running()
        await b.tick()
        await b.settled()
        assert b.held == ["cron"] and work_b.running()
        await a.tick()  # a released member takes nothing any more
        assert a.held == []
        await b.release()


async def test_a_holder_that_stops_renewing_stops_before_another_takes_over(pg_url: str) -> None:
    async with _database(pg_url) as db:
        (a, work_a), (b, work_b) = _member(db, "a"), _member(db, "b")
        await a.tick()
        await a.settled()
        assert work_a.running()
        # a is frozen from here on (never ticks again); b tries every tenth of a second
        await wait_for(lambda: not work_a.running(), timeout=5, what="a to stop its work itself")
        stopped_at = work_a.events[-1][1]
        while not b.held:
            await b.tick()
            await asyncio.sleep(0.1)
        await b.settled()
        started_at = work_b.events[-1][1]
        assert stopped_at < started_at  # never both at once
        took = work_a.events[0][1]
        assert TTL * SELF_FENCE - 0.05 <= stopped_at - took < TTL  # on its own, before its lease ended
        assert started_at - took >= TTL - 0.05  # not before a's lease ran out
        await a.release()
        await b.release()


async def test_a_holder_cut_off_from_the_database_stops_its_work(tmp_path: Path) -> None:
    with pg_cluster() as server:
        async with _database(server.url()) as db:
            roles, work = _member(db, "a")
            await roles.tick()
            await roles.settled()
            assert work.running()
            await asyncio.to_thread(server.stop)
            with pytest.raises(StorageUnavailable):
                await roles.tick()
            await wait_for(lambda: not work.running(), timeout=5, what="the work to stop")
            assert roles.held == []
            await asyncio.to_thread(server.start)
            await _tick_until_held(roles, timeout=10)
            await roles.settled()
            assert roles.held == ["cron"] and work.running()  # nobody else took it: back here
            await roles.release()


async def _tick_until_held(roles: Roles, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not roles.held:
        assert time.monotonic() < deadline, "the role was not taken back"
        try:
            await roles.tick()
        except StorageUnavailable:
            await asyncio.sleep(0.2)


async def test_the_heartbeats_role_moves_to_the_survivor(tmp_path: Path, pg_url: str) -> None:
    # a ttl with room for the stalls of two gateways and a client on one test loop (renewed every
    # 1.7 s, dropped by a holder after 3 s without renewal)
    storage: dict[str, Any] = {"backend": "postgres", "postgres": {"url": pg_url, "memberTtlSeconds": 5}}
    with contextlib.ExitStack() as first:
        a = first.enter_context(run_gateway(tmp_path / "a", config={"storage": storage}))
        ca = await open_client(a.url)
        assert (await ca.handshake(TEST_TOKEN))["ok"]
        await wait_for(lambda: a.gateway.heartbeats._task is not None, timeout=5, what="a to take the role")
        with run_gateway(tmp_path / "b", config={"storage": storage}) as b:
            cb = await open_client(b.url)
            assert (await cb.handshake(TEST_TOKEN))["ok"]

            async def storage_of(c: Any) -> dict[str, Any]:
                answer: dict[str, Any] = (await c.request("status"))["payload"]["storage"]
                return answer

            assert (await storage_of(ca))["heldRoles"] == ["heartbeats"]  # the first to start runs them
            seen = await storage_of(cb)
            assert seen["heldRoles"] == [] and seen["roles"]["heartbeats"]["live"] is True
            assert seen["relay"]["dropped"] == 0 and all(0 <= m["seenAgoMs"] < 5000 for m in seen["members"])
            assert not b.gateway.built("heartbeats") or b.gateway.heartbeats._task is None
            a_member = (await storage_of(ca))["member"]
            first.close()  # a stops: it lets the role go at once, without waiting out its lease
            with psycopg.connect(pg_url) as conn:
                row = conn.execute("SELECT member_id FROM cluster_roles WHERE role = 'heartbeats'").fetchone()
            assert row is None or row[0] != a_member
            await wait_for(lambda: b.gateway.heartbeats._task is not None, timeout=10, what="b to take the role")
            assert (await storage_of(cb))["heldRoles"] == ["heartbeats"]


async def test_a_slow_start_does_not_hold_up_the_renewals(pg_url: str) -> None:
    async with _database(pg_url) as db:
        roles = Roles(db, "slow", TTL)
        started = asyncio.Event()

        async def slow_start() -> None:  # a channel taking its time to connect
            await asyncio.sleep(TTL)
            started.set()

        async def stop() -> None:
            return None

        roles.want("channels", slow_start, stop)
        async with asyncio.timeout(TTL / 2):  # the heartbeat's tick returns at once, renewals go on
            await roles.tick()
            await roles.tick()
        assert roles.held == ["channels"] and not started.is_set()
        while not started.is_set():  # the heartbeat goes on meanwhile
            await asyncio.sleep(TTL / 3)
            await roles.tick()
        await roles.settled()
        assert roles.held == ["channels"]  # renewed all along: never dropped by its own watchdog
        await roles.release()
