"""Cron jobs and run logs shared in a real PostgreSQL (cron/pg_store.py, cron/pg_runlog.py): two
"gateways" (two stores, schedulers and services on one database) see each other's jobs, an edit on
one and a run ending on the other keep both, and a job due once runs once even when both tick."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from homarus.cron.pg_runlog import PgRunLog
from homarus.cron.pg_store import PgCronStore, import_jobs
from homarus.cron.scheduler import CronScheduler, RunResult
from homarus.cron.service import CronService
from homarus.cron.store import CronStore
from homarus.errors import InvalidRequest
from homarus.storage.blocking import BlockingDatabase
from homarus.storage.database import StorageUnavailable
from homarus.storage.migrations import migrate_at
from tests.cron.helpers import Clock, Recorder, every

SEC = 1000
TTL = 5.0


@dataclass
class Member:
    store: PgCronStore
    scheduler: CronScheduler
    service: CronService
    runlog: PgRunLog
    runner: Recorder
    notices: list[dict[str, Any]]

    async def tick(self) -> None:
        await asyncio.gather(*await self.scheduler.tick())


async def _open(url: str) -> BlockingDatabase:
    await migrate_at(url)
    return BlockingDatabase(url, max_size=4, timeout_s=2.0)


def _alive(url: str, member: str, *, seen_ago_s: float = 0.0) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO gateway_members (id, host, pid, version, seen_at)
               VALUES (%s, 'test', 1, 'test', now() - make_interval(secs => %s))
               ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at""",
            (member, seen_ago_s),
        )


def _member(db: BlockingDatabase, url: str, clock: Clock, name: str | None = None) -> Member:
    name = name or f"gw-{uuid.uuid4().hex[:6]}"
    _alive(url, name)
    notices: list[dict[str, Any]] = []
    store = PgCronStore(db, name, TTL, announce=notices.append)
    runlog = PgRunLog(db, keep_lines=50)
    runner = Recorder(clock)
    scheduler = CronScheduler(store, runner, clock=clock, runlog=runlog, enabled=False)
    return Member(store, scheduler, CronService(store, scheduler, runlog), runlog, runner, notices)


async def _two(url: str) -> tuple[BlockingDatabase, Clock, Member, Member]:
    """Two gateways on one fresh schema; the first has read the (no) jobs."""
    db = await _open(url)
    clock = Clock()
    a, b = _member(db, url, clock, "gw-a"), _member(db, url, clock, "gw-b")
    await a.scheduler.open()
    return db, clock, a, b


def _held(release: asyncio.Event) -> Callable[[Any], Awaitable[RunResult]]:
    """A runner's behaviour: each run lasts until ``release`` is set."""

    async def run(job: Any) -> RunResult:
        await release.wait()
        return RunResult("ok")

    return run


async def test_jobs_added_changed_and_removed_on_one_gateway_are_seen_on_the_other(pg_url: str) -> None:
    db, _clock, a, b = await _two(pg_url)
    await b.scheduler.open()
    job = await a.service.add(every(10 * SEC, "first"))
    assert a.notices[-1] == {"ids": [job["id"]]}
    assert b.store.jobs == {}
    await b.store.refresh(a.notices[-1]["ids"])
    assert b.service.get(job["id"])["name"] == "first"
    assert b.service.get(job["id"])["configRevision"] == job["configRevision"]

    await b.service.update(job["id"], {"name": "renamed"}, expected_revision=job["configRevision"])
    await a.store.refresh(b.notices[-1]["ids"])
    assert a.service.get(job["id"])["name"] == "renamed"
    with pytest.raises(InvalidRequest, match="no longer matches"):  # a's editor saw the old one
        await a.service.update(job["id"], {"name": "mine"}, expected_revision=job["configRevision"])

    second = await b.service.add(every(20 * SEC, "second"))
    await a.store.sync()  # a full read, as the scheduler's tick does after a missed notice
    assert [j["name"] for j in a.service.list_jobs(sort_by="name")["jobs"]] == ["renamed", "second"]
    await a.service.remove(second["id"])
    await b.store.refresh(a.notices[-1]["ids"])
    assert list(b.store.jobs) == [job["id"]]
    assert (
        a.service.status()["storePath"].startswith("postgresql://") and "cron_jobs" in a.service.status()["storePath"]
    )
    db.close()


async def test_an_edit_here_and_a_run_ending_there_keep_both(pg_url: str) -> None:
    db, clock, a, b = await _two(pg_url)
    job = await a.service.add(every(10 * SEC))
    await b.scheduler.open()
    release = asyncio.Event()
    a.runner.behave = _held(release)
    clock.advance(10 * SEC)
    running = await a.scheduler.tick()
    await asyncio.sleep(0.2)
    await b.service.update(job["id"], {"description": "edited on b"})  # while a runs the job
    release.set()
    await asyncio.gather(*running)  # the run's end (its state, updatedAtMs) keeps b's edit
    fresh = _member(db, pg_url, clock)
    await fresh.scheduler.open()
    seen = fresh.store.get(job["id"])
    assert seen.description == "edited on b"
    assert seen.state.last_run_status == "ok" and seen.state.next_run_at_ms == clock() + 10 * SEC
    assert seen.state.running_at_ms is None
    # and a gateway that missed a job's addition never deletes it by writing its own changes
    await b.service.add(every(30 * SEC, "added on b"))
    await a.service.update(job["id"], {"name": "a renames"})
    names = {j.name for j in (await _reloaded(db, pg_url, clock)).store.jobs.values()}
    assert names == {"a renames", "added on b"}
    db.close()


async def _reloaded(db: BlockingDatabase, url: str, clock: Clock) -> Member:
    member = _member(db, url, clock)
    await member.scheduler.open()
    return member


async def test_two_schedulers_ticking_run_each_due_time_once(pg_url: str) -> None:
    db, clock, a, b = await _two(pg_url)
    job = await a.service.add(every(1 * SEC))
    await b.scheduler.open()
    for _ in range(8):
        clock.advance(SEC)
        await asyncio.gather(a.tick(), b.tick())  # a role handed over while the old holder still ticks
    calls = a.runner.calls + b.runner.calls
    assert sorted(t for _, t in calls) == [clock() - k * SEC for k in range(7, -1, -1)]
    entries, total = a.runlog.read(job["id"], limit=100)
    assert total == 8 and len({e["runAtMs"] for e in entries}) == 8
    assert all(e["status"] == "ok" for e in entries)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT running_by FROM cron_jobs").fetchall() == [(None,)]
    db.close()


async def test_a_job_running_on_a_live_gateway_is_not_run_again_and_a_gone_ones_claim_is_free(pg_url: str) -> None:
    db, _clock, a, b = await _two(pg_url)
    release = asyncio.Event()
    a.runner.behave = _held(release)
    job = await a.service.add(every(60 * SEC))
    await b.scheduler.open()
    started = await a.service.run(job["id"], wait=False)
    assert started["enqueued"] is True
    await asyncio.sleep(0.3)
    await b.store.refresh([job["id"]])
    assert b.store.busy_elsewhere(job["id"])
    assert await b.service.run(job["id"]) == {"ok": True, "ran": False, "reason": "already-running"}
    b.store._elsewhere.clear()  # even without having read it: the claim itself refuses
    assert await b.service.run(job["id"]) == {"ok": True, "ran": False, "reason": "already-running"}
    assert b.runner.calls == []

    _alive(pg_url, "gw-a", seen_ago_s=TTL + 1)  # a is gone (killed): its claim is free
    await b.store.refresh([job["id"]])
    assert not b.store.busy_elsewhere(job["id"])
    ran = await b.service.run(job["id"])
    assert ran["ran"] is True and ran["status"] == "ok"
    release.set()
    await a.scheduler.wait_idle()
    db.close()


async def test_a_run_that_cannot_be_recorded_does_not_start_and_a_lost_end_is_given_back(pg_url: str) -> None:
    db, clock, a, b = await _two(pg_url)
    job = await a.service.add(every(1 * SEC))
    clock.advance(SEC)
    db.away = True
    with pytest.raises(StorageUnavailable):  # cron.run answers with the retryable error
        await a.service.run(job["id"])
    assert a.runner.calls == [] and a.store.get(job["id"]).state.running_at_ms is None
    db.away = False
    ends: list[bool] = []

    async def cut_off(job: Any) -> RunResult:
        db.away = True  # the database goes while the job runs: its end cannot be written yet
        ends.append(True)
        return RunResult("ok")

    a.runner.behave = cut_off
    await a.tick()
    assert ends == [True]
    db.away = False
    await b.scheduler.open()
    assert b.store.busy_elsewhere(job["id"])  # still claimed by a, which is alive
    await a.store.sync()  # a's next read gives the claim back with the state after the run
    await b.store.sync()
    assert not b.store.busy_elsewhere(job["id"])
    assert b.store.get(job["id"]).state.last_run_status == "ok"
    db.close()


async def test_run_log_is_shared_newest_first_and_pruned(pg_url: str) -> None:
    db = await _open(pg_url)
    log = PgRunLog(db, keep_lines=5)
    for i in range(23):
        log.append("job-1", {"ts": i, "runAtMs": i, "status": "ok"})
    log.append("job-2", {"ts": 100, "runAtMs": 100, "status": "error"})
    entries, total = log.read("job-1", limit=3)
    assert [e["ts"] for e in entries] == [22, 21, 20] and total == 5
    with psycopg.connect(pg_url) as conn:  # pruned at the 20th append: 5 kept then, 3 added since
        assert conn.execute("SELECT count(*) FROM cron_runs WHERE job_id = 'job-1'").fetchone() == (8,)
    assert log.all_entries()[0]["ts"] == 100
    with pytest.raises(InvalidRequest):
        log.append("../escape", {})
    db.close()


async def test_jobs_move_from_the_file_once(pg_url: str, tmp_path: Any) -> None:
    db = await _open(pg_url)
    file_store = CronStore(tmp_path / "jobs.json")
    clock = Clock()
    runlog = PgRunLog(db)
    service = CronService(file_store, CronScheduler(file_store, Recorder(clock), clock=clock, enabled=False), runlog)
    for name in ("one", "two"):
        await service.add(every(SEC, name))
    ids = list(file_store.jobs)
    assert await asyncio.to_thread(import_jobs, db, file_store.jobs.values(), dry_run=True) == (ids, 0)
    assert await asyncio.to_thread(import_jobs, db, file_store.jobs.values()) == (ids, 0)
    assert await asyncio.to_thread(import_jobs, db, file_store.jobs.values()) == ([], 2)
    moved = await _reloaded(db, pg_url, clock)
    assert [j.name for j in moved.store.jobs.values()] == ["one", "two"]
    db.close()


async def test_a_row_that_does_not_validate_is_reported_and_left_alone(pg_url: str) -> None:
    db = await _open(pg_url)
    clock = Clock()
    a = await _reloaded(db, pg_url, clock)
    good = await a.service.add(every(SEC, "good"))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("""INSERT INTO cron_jobs (id, definition, state) VALUES ('bad', '{"name": 1}', '{}')""")
    b = _member(db, pg_url, clock)
    await b.scheduler.open()
    assert "bad" in (b.scheduler.load_error or "") and list(b.store.jobs) == [good["id"]]
    await b.store.sync()  # later reads leave it out too, and never delete it
    await b.service.update(good["id"], {"name": "still good"})
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM cron_jobs").fetchone() == (2,)
    db.close()
