"""jobs.json (atomic, camelCase, corrupt files set aside), the run log, and job validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from homarus.cron.runlog import RunLog
from homarus.cron.service import read_view
from homarus.cron.store import CronStore, CronStoreCorrupt
from homarus.errors import InvalidRequest, NotFound
from tests.cron.helpers import at, every, make_rig


async def test_jobs_round_trip_camel_case(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    job = await rig.service.add(every(60_000, description="d", wakeMode="next-heartbeat"))
    raw = json.loads(rig.store.path.read_text())
    stored = raw["jobs"][0]
    assert stored["sessionTarget"] == "main" and stored["wakeMode"] == "next-heartbeat"
    assert stored["schedule"] == {"kind": "every", "everyMs": 60_000, "anchorMs": job["createdAtMs"]}
    assert oct(rig.store.path.stat().st_mode & 0o777) == "0o600"
    again = CronStore(rig.store.path)
    # read back, the job is what add answered, its configRevision included (a function of the stored definition)
    assert read_view(again.load()[job["id"]]) == job


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "not JSON"),
        (b'{"version": 2, "jobs": []}', "unsupported version 2"),
        (b'{"jobs": {}}', "expected an object"),
        (b'{"version": 1, "jobs": [{"id": "x"}]}', "jobs[0]."),
    ],
)
async def test_corrupt_store_is_moved_aside_never_emptied(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "cron" / "jobs.json"
    path.parent.mkdir()
    path.write_bytes(content)
    with pytest.raises(CronStoreCorrupt) as err:
        CronStore(path).load()
    assert reason in err.value.message and "moved aside" in err.value.message
    moved = err.value.moved_to
    assert moved is not None and moved.name.startswith("jobs.json.corrupt.")
    assert moved.read_bytes() == content and not path.exists()


async def test_scheduler_survives_a_corrupt_store_and_reports_it(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    rig.store.path.parent.mkdir(parents=True)
    rig.store.path.write_text("garbage")
    await rig.scheduler.start()
    status = rig.service.status()
    assert "cron store is not valid" in status["storeError"] and status["jobs"] == 0
    await rig.service.add(every(1000))
    corrupt = list(rig.store.path.parent.glob("jobs.json.corrupt.*"))
    assert len(corrupt) == 1 and corrupt[0].read_text() == "garbage"


def test_run_log_prunes_to_the_last_lines_and_pages_newest_first(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "runs", max_bytes=10_000, keep_lines=20)
    for i in range(300):
        log.append("job1", {"n": i, "pad": "x" * 40})
    size = (tmp_path / "runs" / "job1.jsonl").stat().st_size
    assert size <= 10_000
    entries, total = log.read("job1", limit=5)
    assert [e["n"] for e in entries] == [299, 298, 297, 296, 295]
    assert total < 300
    page, _ = log.read("job1", limit=2, offset=5)
    assert [e["n"] for e in page] == [294, 293]
    with (tmp_path / "runs" / "job1.jsonl").open("a") as fh:
        fh.write('{"torn": ')
    assert log.read("job1", limit=1)[0][0]["n"] == 299
    assert log.read("missing") == ([], 0)
    for bad in ("../x", "a/b", "a\\b", ".hidden", ""):
        with pytest.raises(InvalidRequest):
            log.read(bad)


def test_default_run_log_limits_match_the_reference(tmp_path: Path) -> None:
    log = RunLog(tmp_path)
    assert (log.max_bytes, log.keep_lines) == (2_000_000, 2000)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({**every(1000), "sessionTarget": "isolated"}, 'systemEvent" needs sessionTarget "main"'),
        ({**at("+1m"), "sessionTarget": "main"}, 'agentTurn" needs sessionTarget "isolated"'),
        ({**at("+1m"), "delivery": {"mode": "webhook"}}, "delivery.to must be an http(s) URL"),
        ({**at("+1m"), "delivery": {"mode": "webhook", "to": "file:///etc/passwd"}}, "http(s) URL"),
        ({**every(1000), "delivery": {"mode": "announce"}}, "delivery is only for isolated jobs"),
        ({**every(0)}, "everyMs"),
        ({**every(1000), "name": ""}, "name"),
        ({**every(1000), "bogus": 1}, "bogus"),
        ({**at("yesterday-ish")}, 'invalid "at" time'),
        ({**every(1000), "schedule": {"kind": "cron", "expr": "0 0 31 2 *"}}, "has no next run time"),
        ({**every(1000), "schedule": {"kind": "cron", "expr": "* * * * *", "tz": "Nowhere/Land"}}, "unknown time zone"),
        ({**every(1000), "schedule": {"kind": "cron", "expr": "60 * * * *"}}, "invalid cron expression"),
    ],
)
async def test_bad_jobs_are_refused_with_clear_errors(tmp_path: Path, spec: dict[str, object], message: str) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    with pytest.raises(InvalidRequest) as err:
        await rig.service.add(spec)
    assert message in err.value.message
    assert rig.store.jobs == {}


async def test_update_merges_payload_and_reschedules(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    job = await rig.service.add(at("+10m", name="n"))
    updated = await rig.service.update(job["id"], {"payload": {"message": "new text"}, "name": "renamed"})
    assert updated["payload"] == {"kind": "agentTurn", "message": "new text"} and updated["name"] == "renamed"
    moved = await rig.service.update(job["id"], {"schedule": {"kind": "cron", "expr": "0 12 * * *"}})
    assert moved["state"]["nextRunAtMs"] == rig.clock.now + 12 * 3_600_000
    off = await rig.service.update(job["id"], {"enabled": False})
    assert "nextRunAtMs" not in off["state"]
    with pytest.raises(InvalidRequest, match="cannot be patched: id, state"):
        await rig.service.update(job["id"], {"id": "x", "state": {}})
    with pytest.raises(InvalidRequest, match="sessionTarget"):
        await rig.service.update(job["id"], {"payload": {"kind": "systemEvent", "text": "t"}})
    assert (await rig.service.remove(job["id"])) == {"ok": True, "removed": True}
    with pytest.raises(NotFound, match="cron job not found"):
        await rig.service.remove(job["id"])


async def test_list_filters_sorts_and_pages(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    for i, ms in enumerate((300_000, 100_000, 200_000)):
        await rig.service.add(every(ms, name=f"job{i}", enabled=i != 2))
    listed = rig.service.list_jobs()
    assert [j["name"] for j in listed["jobs"]] == ["job1", "job0", "job2"]  # disabled (no next run) last
    assert [j["name"] for j in rig.service.list_jobs(include_disabled=False)["jobs"]] == ["job1", "job0"]
    page = rig.service.list_jobs(limit=1, offset=1, sort_by="name")
    assert [j["name"] for j in page["jobs"]] == ["job1"] and page["hasMore"] and page["nextOffset"] == 2
    assert rig.service.list_jobs(query="JOB2")["total"] == 1
