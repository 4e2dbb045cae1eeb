"""The scheduler's state machine with an injected clock: due runs, backoff, catch-up, caps, crashes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from homarus.cron.models import CronJob
from homarus.cron.scheduler import MAX_TIMER_MS, RunResult
from homarus.errors import NotFound
from tests.cron.helpers import T0, Clock, Recorder, at, every, make_rig

MIN = 60_000


async def test_every_job_runs_when_due_and_is_logged(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    job = await rig.service.add(every(10 * MIN))
    assert job["state"]["nextRunAtMs"] == T0 + 10 * MIN
    await rig.tick()
    assert rig.runner.calls == []
    rig.clock.advance(10 * MIN)
    await rig.tick()
    assert rig.runner.calls == [(job["id"], T0 + 10 * MIN)]
    state = rig.store.get(job["id"]).state
    assert (state.last_run_status, state.next_run_at_ms, state.running_at_ms) == ("ok", T0 + 20 * MIN, None)
    entries, total = rig.runlog.read(job["id"])
    assert total == 1 and entries[0]["status"] == "ok" and entries[0]["summary"] == "ran job"
    assert "catchUp" not in entries[0]
    assert [e["action"] for e in rig.events] == ["added", "started", "finished"]
    on_disk = json.loads(rig.store.path.read_text())
    assert on_disk["version"] == 1 and on_disk["jobs"][0]["state"]["lastRunStatus"] == "ok"


async def test_errors_back_off_30s_1_5_15_60_min_then_reset(tmp_path: Path) -> None:
    clock = Clock()
    outcomes = ["error"] * 6 + ["ok"]

    async def behave(job: CronJob) -> RunResult:
        return RunResult(outcomes.pop(0), error="boom")  # type: ignore[arg-type]

    rig = make_rig(tmp_path, clock, Recorder(clock, behave))
    await rig.scheduler.start()
    job_id = (await rig.service.add(every(10_000)))["id"]
    delays = []
    for _ in range(6):
        clock.now = rig.store.get(job_id).state.next_run_at_ms or 0
        await rig.tick()
        state = rig.store.get(job_id).state
        delays.append((state.next_run_at_ms or 0) - clock.now)
    assert delays == [30_000, 60_000, 5 * MIN, 15 * MIN, 60 * MIN, 60 * MIN]
    assert rig.store.get(job_id).state.consecutive_errors == 6
    clock.now = rig.store.get(job_id).state.next_run_at_ms or 0
    await rig.tick()
    state = rig.store.get(job_id).state
    assert state.consecutive_errors == 0 and state.last_error is None
    assert (state.next_run_at_ms or 0) - clock.now <= 10_000  # back on the regular interval


async def test_missed_runs_are_caught_up_once_after_downtime(tmp_path: Path) -> None:
    first = make_rig(tmp_path)
    await first.scheduler.start()
    job_id = (await first.service.add(every(10 * MIN)))["id"]
    await first.scheduler.stop()
    # the gateway is down for an hour: six slots pass
    clock = Clock(T0 + 60 * MIN + 5_000)
    rig = make_rig(tmp_path, clock)
    await rig.scheduler.start()
    await rig.tick()
    await rig.tick()
    assert rig.runner.calls == [(job_id, clock.now)]  # exactly once, not once per missed slot
    entries, _ = rig.runlog.read(job_id)
    assert entries[0]["catchUp"] is True
    assert rig.store.get(job_id).state.next_run_at_ms == T0 + 70 * MIN
    started = [e for e in rig.events if e["action"] == "started"]
    assert started[0]["catchUp"] is True


async def test_run_cut_short_by_a_crash_runs_again_on_start(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    job_id = (await rig.service.add(every(10 * MIN)))["id"]
    job = rig.store.get(job_id)
    job.state.running_at_ms = T0 + 10 * MIN  # the process died mid-run
    job.state.next_run_at_ms = T0 + 10 * MIN
    rig.store.save()
    after = make_rig(tmp_path, Clock(T0 + 12 * MIN))
    await after.scheduler.start()
    assert after.store.get(job_id).state.running_at_ms is None
    await after.tick()
    assert len(after.runner.calls) == 1
    assert after.runlog.read(job_id)[0][0]["catchUp"] is True


async def test_at_job_is_deleted_after_success(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    job_id = (await rig.service.add(at("+5m")))["id"]
    rig.clock.advance(5 * MIN)
    await rig.tick()
    assert job_id not in rig.store.jobs
    assert json.loads(rig.store.path.read_text())["jobs"] == []
    assert rig.runlog.read(job_id)[0][0]["deleted"] is True


async def test_at_job_kept_disabled_when_delete_after_run_is_false(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    job_id = (await rig.service.add(at("+5m", deleteAfterRun=False)))["id"]
    rig.clock.advance(5 * MIN)
    await rig.tick()
    job = rig.store.get(job_id)
    assert job.enabled is False and job.state.next_run_at_ms is None and job.state.last_run_status == "ok"


async def test_failing_at_job_retries_by_backoff_then_gives_up(tmp_path: Path) -> None:
    clock = Clock()

    async def fail(job: CronJob) -> RunResult:
        return RunResult("error", error="nope")

    rig = make_rig(tmp_path, clock, Recorder(clock, fail))
    await rig.scheduler.start()
    job_id = (await rig.service.add(at("+1m")))["id"]
    for _ in range(5):
        clock.now = rig.store.get(job_id).state.next_run_at_ms or 0
        await rig.tick()
    job = rig.store.get(job_id)
    assert len(rig.runner.calls) == 5 and job.enabled is False and job.state.last_error == "nope"


async def test_concurrency_cap(tmp_path: Path) -> None:
    clock = Clock()
    gate = asyncio.Event()
    active = 0
    peak = 0

    async def slow(job: CronJob) -> RunResult:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await gate.wait()
        active -= 1
        return RunResult("ok")

    rig = make_rig(tmp_path, clock, Recorder(clock, slow), max_concurrent=2)
    await rig.scheduler.start()
    for i in range(3):
        await rig.service.add(every(MIN, name=f"j{i}"))
    clock.advance(MIN)
    started = await rig.scheduler.tick()
    assert len(started) == 2 and len(rig.scheduler.running()) == 2
    for _ in range(200):
        if active == 2:
            break
        await asyncio.sleep(0.005)
    assert await rig.scheduler.tick() == []  # still capped
    gate.set()
    await asyncio.gather(*started)
    await rig.tick()
    assert len(rig.runner.calls) == 3 and peak == 2


async def test_a_crashing_runner_is_an_error_and_the_scheduler_goes_on(tmp_path: Path) -> None:
    clock = Clock()

    async def behave(job: CronJob) -> RunResult:
        if job.name == "bad":
            raise RuntimeError("kaboom")
        return RunResult("ok")

    rig = make_rig(tmp_path, clock, Recorder(clock, behave), max_concurrent=2)
    await rig.scheduler.start()
    bad = (await rig.service.add(every(MIN, name="bad")))["id"]
    good = (await rig.service.add(every(MIN, name="good")))["id"]
    clock.advance(MIN)
    await rig.tick()
    state = rig.store.get(bad).state
    assert state.last_run_status == "error" and state.last_error == "RuntimeError: kaboom"
    assert state.next_run_at_ms == clock.now + 60_000  # max(regular 1 min, backoff 30 s)
    assert rig.store.get(good).state.last_run_status == "ok"
    clock.advance(MIN)
    await rig.tick()
    assert len(rig.runner.calls) == 4  # both ran again


async def test_job_timeout(tmp_path: Path) -> None:
    clock = Clock()

    async def hang(job: CronJob) -> RunResult:
        await asyncio.sleep(30)
        return RunResult("ok")

    rig = make_rig(tmp_path, clock, Recorder(clock, hang), job_timeout_s=0.05)
    await rig.scheduler.start()
    job_id = (await rig.service.add(every(MIN)))["id"]
    clock.advance(MIN)
    await rig.tick()
    assert rig.store.get(job_id).state.last_error == "job timed out after 0.05s"


async def test_three_schedule_errors_disable_the_job(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    job_id = (await rig.service.add(every(MIN)))["id"]
    await rig.scheduler.stop()
    doc = json.loads(rig.store.path.read_text())
    doc["jobs"][0]["schedule"] = {"kind": "cron", "expr": "0 0 * * * * * *"}  # hand-edited, not computable
    doc["jobs"][0]["state"].pop("nextRunAtMs")
    rig.store.path.write_text(json.dumps(doc))
    again = make_rig(tmp_path)
    await again.scheduler.start()
    await again.tick()
    await again.tick()
    job = again.store.get(job_id)
    assert job.enabled is False and job.state.schedule_error_count == 3
    assert "expected 5 fields" in (job.state.last_error or "")
    assert again.runner.calls == []


async def test_timer_is_clamped_to_60_seconds(tmp_path: Path) -> None:
    clock = Clock()
    delays: list[float] = []
    done = asyncio.Event()

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        clock.advance(int(seconds * 1000))
        if len(delays) >= 12:
            done.set()
            await asyncio.Event().wait()
        await asyncio.sleep(0)

    rig = make_rig(tmp_path, clock, sleep=sleep, enabled=True)
    rig.store.save()
    await rig.service.add(every(10 * MIN))
    await rig.scheduler.start()
    await asyncio.wait_for(done.wait(), 5)
    await rig.scheduler.stop()
    assert max(delays) * 1000 <= MAX_TIMER_MS
    assert len(rig.runner.calls) == 1
    assert rig.runlog.read(rig.runner.calls[0][0])[0][0]["runAtMs"] == T0 + 10 * MIN


async def test_run_now_force_due_and_already_running(tmp_path: Path) -> None:
    clock = Clock()
    gate = asyncio.Event()

    async def wait_gate(job: CronJob) -> RunResult:
        await gate.wait()
        return RunResult("ok", summary="done")

    rig = make_rig(tmp_path, clock, Recorder(clock, wait_gate))
    await rig.scheduler.start()
    job_id = (await rig.service.add(every(10 * MIN)))["id"]
    assert await rig.service.run(job_id, mode="due") == {"ok": True, "ran": False, "reason": "not-due"}
    pending = asyncio.create_task(rig.service.run(job_id))
    await asyncio.sleep(0.01)
    assert await rig.service.run(job_id) == {"ok": True, "ran": False, "reason": "already-running"}
    gate.set()
    done = await pending
    assert done.pop("runId").startswith(f"manual:{job_id}:")
    assert done == {"ok": True, "ran": True, "status": "ok", "summary": "done"}
    assert rig.runlog.read(job_id)[0][0]["forced"] is True
    with pytest.raises(NotFound, match="cron job not found"):
        await rig.service.run("nope")


async def test_shutdown_mid_run_leaves_the_job_due_for_the_next_start(tmp_path: Path) -> None:
    clock = Clock()

    async def hang(job: CronJob) -> RunResult:
        await asyncio.sleep(30)
        return RunResult("ok")

    rig = make_rig(tmp_path, clock, Recorder(clock, hang))
    await rig.scheduler.start()
    job_id = (await rig.service.add(every(MIN)))["id"]
    clock.advance(MIN)
    await rig.scheduler.tick()
    await rig.scheduler.stop(timeout=0.05)
    job = rig.store.get(job_id)
    assert job.state.running_at_ms is None and job.state.next_run_at_ms == T0 + MIN
    assert job.state.consecutive_errors == 0
    entry = rig.runlog.read(job_id)[0][0]
    assert entry["status"] == "skipped" and "runs again on start" in entry["error"]


async def test_removed_while_running_is_only_logged(tmp_path: Path) -> None:
    clock = Clock()
    gate = asyncio.Event()

    async def wait_gate(job: CronJob) -> RunResult:
        await gate.wait()
        return RunResult("ok")

    rig = make_rig(tmp_path, clock, Recorder(clock, wait_gate))
    await rig.scheduler.start()
    job_id = (await rig.service.add(every(MIN)))["id"]
    clock.advance(MIN)
    started = await rig.scheduler.tick()
    assert (await rig.service.remove(job_id))["removed"] is True
    gate.set()
    await asyncio.gather(*started)
    assert job_id not in rig.store.jobs
    assert rig.runlog.read(job_id)[0][0]["removed"] is True
