"""The audit trail in a real PostgreSQL (audit/pg_log.py): records of two gateways in one table,
in order, read with a run filter and a following cursor; writing never waits for the database,
what is queued while it is away goes in when it is back, and the queue is bounded. Then two real
gateways: a run on one is in ``logs.tail`` and ``homarus logs`` of the other."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psycopg

from homarus.audit import pg_log
from homarus.audit.log import MAX_LINE_BYTES
from homarus.audit.pg_log import PgAuditLog
from homarus.storage.blocking import BlockingDatabase
from homarus.storage.migrations import migrate_at
from tests.conftest import TEST_TOKEN, run_gateway
from tests.gateway_process import run_cli, scrubbed_env, write_config
from tests.waiting import wait_for
from tests.wsclient import open_client


async def _db(url: str) -> BlockingDatabase:
    await migrate_at(url)
    return BlockingDatabase(url, max_size=2, timeout_s=2.0)


async def test_two_gateways_write_one_trail_read_in_order_by_run_and_cursor(pg_url: str) -> None:
    db = await _db(pg_url)
    a, b = PgAuditLog(db, "gw-a"), PgAuditLog(db, "gw-b")
    raw = PgAuditLog(db, "gw-a", prefix="raw-stream")
    for i in range(5):
        (a if i % 2 else b).write({"type": "run.start", "runId": f"run-{i}"})
    raw.write({"type": "stream", "runId": "run-0"})
    a.flush()
    b.flush()
    raw.flush()
    tail = await asyncio.to_thread(a.tail, limit=10)
    assert sorted(r["runId"] for r in tail.records) == [f"run-{i}" for i in range(5)]  # raw-stream apart
    assert tail.file == "postgresql" and tail.size == tail.cursor and not tail.truncated
    assert [r["runId"] for r in (await asyncio.to_thread(b.tail, run_id="run-3")).records] == ["run-3"]
    assert len((await asyncio.to_thread(a.tail, limit=2)).records) == 2
    assert (await asyncio.to_thread(a.tail, limit=2)).truncated
    a.write({"type": "run.end", "runId": "run-9"})
    a.flush()  # written within FLUSH_S; a tail waits for the own gateway's records only
    follow = await asyncio.to_thread(b.tail, cursor=tail.cursor)  # b reads what a wrote since
    assert [r["runId"] for r in follow.records] == ["run-9"] and follow.cursor > tail.cursor
    a.write({"type": "tool", "runId": "big", "args": "x" * (2 * MAX_LINE_BYTES)})
    a.flush()
    [big] = (await asyncio.to_thread(a.tail, run_id="big")).records
    assert big["truncated"] is True and len(big["args"]) < 3000
    with psycopg.connect(pg_url) as conn:
        members: dict[str, int] = dict(
            conn.execute("SELECT member, count(*) FROM audit_records GROUP BY member").fetchall()
        )
    assert members == {"gw-a": 5, "gw-b": 3}
    for trail in (a, b, raw):
        trail.close()
    db.close()


async def test_writing_never_waits_and_what_waits_for_the_database_goes_in_later(
    pg_url: str, monkeypatch: object
) -> None:
    db = await _db(pg_url)
    trail = PgAuditLog(db, "gw-a")
    db.away = True  # as the cluster's heartbeat sets it when the database does not answer
    for i in range(3):
        trail.write({"type": "run.start", "runId": f"r{i}"})  # returns at once
    await asyncio.sleep(0.5)
    assert trail.failures >= 1 and trail.written == 0
    db.away = False
    await wait_for(lambda: trail.written == 3, what="the queued records written", timeout=10)
    assert [r["runId"] for r in (await asyncio.to_thread(trail.tail)).records] == ["r0", "r1", "r2"]
    setattr(pg_log, "MAX_QUEUED", 2)  # noqa: B010 - a smaller bound for the test
    try:
        db.away = True
        failures = trail.failures
        for i in range(5):
            trail.write({"type": "x", "runId": f"q{i}"})
        assert trail.failures - failures >= 3  # past the bound: dropped and counted
    finally:
        setattr(pg_log, "MAX_QUEUED", 20_000)  # noqa: B010
        db.away = False
    trail.close()
    db.close()


async def test_a_run_on_one_gateway_is_in_the_trail_of_the_other(tmp_path: Path, pg_url: str) -> None:
    config = {"storage": {"backend": "postgres", "postgres": {"url": pg_url}}}
    with run_gateway(tmp_path / "a", config=config) as a, run_gateway(tmp_path / "b", config=config) as b:
        ca, cb = await open_client(a.url), await open_client(b.url)
        assert (await ca.handshake(TEST_TOKEN))["ok"] and (await cb.handshake(TEST_TOKEN))["ok"]
        a.gateway.audit_log.write({"type": "run.start", "runId": "on-a", "trigger": "test"})
        tail: dict[str, object] = {}

        async def seen() -> bool:
            nonlocal tail
            tail = (await cb.request("logs.tail", {"runId": "on-a"}))["payload"]
            return bool(tail["records"])

        for _ in range(50):
            if await seen():
                break
            await asyncio.sleep(0.1)
        assert tail["file"] == "postgresql" and [r["runId"] for r in tail["records"]] == ["on-a"]  # type: ignore[attr-defined]
        assert not any(tmp_path.rglob("audit-*.jsonl"))  # no gateway wrote a trail file of its own
    state = tmp_path / "cli"
    write_config(state, json.dumps({"storage": {"backend": "postgres", "postgres": {"url": pg_url}}}))
    listed = run_cli(scrubbed_env(state), "logs", "--json", "--run", "on-a")
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["runId"] for line in listed.stdout.splitlines()] == ["on-a"]
