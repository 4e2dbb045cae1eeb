"""Cron across three real gateway processes on one real PostgreSQL: a job due every second runs
once per due time across the cluster, on the gateway holding the scheduler's role; when that
gateway is killed with SIGKILL, a survivor takes the role once the dead member's ttl has passed and
the job goes on, still once per due time. Every gateway answers ``cron.*`` from the shared jobs and
run log."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg

from tests.fakes import run_fake_llm
from tests.gateway.crash_harness import Crashable, crashable, operator
from tests.storage.test_failover import TTL_S, _cluster_config
from tests.waiting import wait_for


def _runs(url: str) -> list[dict[str, Any]]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT entry FROM cron_runs ORDER BY seq").fetchall()]


def _scheduler_pid(url: str) -> int | None:
    """The pid of the member holding the role cron's timer goes with (member ids end -pid-hex)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT member_id FROM cluster_roles WHERE role = 'heartbeats' AND expires_at > now()"
        ).fetchone()
    return int(row[0].rsplit("-", 2)[1]) if row else None


async def test_a_job_due_every_second_runs_once_per_due_time_across_a_cluster_and_a_kill(
    tmp_path: Path, pg_url: str
) -> None:
    with run_fake_llm() as llm:
        cfg = _cluster_config(llm.base_url, pg_url)
        for name in "abc":
            (tmp_path / name).mkdir()
        with (
            crashable(tmp_path / "a", cfg) as a,
            crashable(tmp_path / "b", cfg) as b,
            crashable(tmp_path / "c", cfg) as c,
        ):
            gateways: list[Crashable] = [a, b, c]
            for gw in gateways:
                gw.start()
            await wait_for(lambda: _scheduler_pid(pg_url) is not None, what="a scheduler", timeout=20)
            holder = next(gw for gw in gateways if gw.proc.proc.pid == _scheduler_pid(pg_url))
            editor = next(gw for gw in gateways if gw is not holder)  # added where the timer is not
            client = await operator(editor.proc)
            spec = {
                "name": "every second",
                "schedule": {"kind": "every", "everyMs": 1000},
                "sessionTarget": "main",
                "payload": {"kind": "systemEvent", "text": "tick"},
            }
            added = await client.request("cron.add", spec)
            assert added["ok"], added
            job_id = added["payload"]["id"]

            await wait_for(lambda: len(_runs(pg_url)) >= 4, what="four runs", timeout=20)
            holder.kill9()
            killed_at, before = time.monotonic(), len(_runs(pg_url))
            await wait_for(lambda: len(_runs(pg_url)) >= before + 4, what="four runs after the kill", timeout=30)
            assert time.monotonic() - killed_at > TTL_S * 0.9  # taken over, not run beside the dead one

            runs = _runs(pg_url)
            assert all(r["jobId"] == job_id and r["status"] == "ok" for r in runs), runs
            due = [r["nextRunAtMs"] for r in runs]
            assert due == sorted(set(due)), due  # each due time once, in order
            starts = [r["runAtMs"] for r in runs]
            assert all(later >= due_time for later, due_time in zip(starts[1:], due, strict=False)), (starts, due)
            assert len({r["runId"] for r in runs}) == len(runs)
            assert any(r.get("catchUp") for r in runs[before:]), runs[before:]  # the slot missed while down

            survivor = next(gw for gw in gateways if gw is not holder and gw is not editor)
            other = await operator(survivor.proc)
            listed = await other.request("cron.runs", {"id": job_id, "limit": 200})
            assert listed["ok"] and listed["payload"]["total"] >= len(runs), listed
            status = await other.request("cron.status", {})
            assert status["payload"]["jobs"] == 1 and "postgresql://" in status["payload"]["storePath"]
            removed = await client.request("cron.remove", {"id": job_id})
            assert removed["ok"], removed
            settled = len(_runs(pg_url))
            time.sleep(2.5)
            assert len(_runs(pg_url)) <= settled + 1  # at most the run in flight when it was removed
