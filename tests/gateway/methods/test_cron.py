"""`cron.*` over a real gateway: an agentTurn job runs into `agent:main:cron:<jobId>`, survives a
restart, and a run missed while the gateway was down is caught up once."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from homarus.cli import cron_cmd
from homarus.cron.service import CronService
from homarus.plugins.events import CronChangedEvent
from homarus.plugins.runner import HookRegistration
from homarus.providers.scripted import Reply, ScriptedProvider
from homarus.security.scopes import READ
from homarus.usecases.cron import stop_cron
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

T = TypeVar("T")
CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}}},
}


async def on_loop(gw: RunningGateway, fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``fn()`` on the gateway's event loop and wait for it here."""

    async def wrapped() -> T:
        return await fn()

    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(wrapped(), gw.loop))


async def cron_up(gw: RunningGateway, replies: list[Reply] | None = None) -> CronService:
    """The gateway's cron service (loaded and started on first use)."""
    gw.gateway.models.overrides["test"] = ScriptedProvider(replies or [], then="echo")

    async def up() -> CronService:
        return gw.gateway.cron

    return await on_loop(gw, up)


async def cron_down(gw: RunningGateway, service: CronService) -> None:
    await on_loop(gw, lambda: stop_cron(service))


async def client(gw: RunningGateway, scopes: list[str] | None = None) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN, scopes=scopes))["ok"]
    return c


def agent_job(**extra: Any) -> dict[str, Any]:
    return {
        "name": "digest",
        "schedule": {"kind": "every", "everyMs": 3_600_000},
        "sessionTarget": "isolated",
        "wakeMode": "next-heartbeat",
        "payload": {"kind": "agentTurn", "message": "summarise the day"},
        **extra,
    }


def transcript_texts(gw: RunningGateway, key: str) -> list[str]:
    mgr = gw.gateway.sessions
    ref = mgr.require(mgr.resolve_key(key))
    out = []
    for e in mgr.transcript_for(ref).read().entries:
        msg = e.get("message") if e.get("type") == "message" else None
        if isinstance(msg, dict):
            content = msg.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.append(" ".join(str(b.get("text", "")) for b in content if isinstance(b, dict)))
    return out


async def test_agent_turn_job_runs_into_its_cron_session(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        service = await cron_up(gw, [Reply("All quiet today.")])
        c = await client(gw)
        added = await c.request("cron.add", agent_job())
        assert added["ok"], added
        job = added["payload"]
        assert job["agentId"] == "main" and job["state"]["nextRunAtMs"] > time.time() * 1000
        # the original's way: cron.run answers at once with the run's id, cron.runs tells when it is over
        ran = (await c.request("cron.run", {"jobId": job["id"], "mode": "force"}))["payload"]
        assert ran["ok"] is True and ran["enqueued"] is True and ran["runId"].startswith(f"manual:{job['id']}:")
        for _ in range(300):
            runs = (await c.request("cron.runs", {"id": job["id"], "runId": ran["runId"]}))["payload"]["entries"]
            if runs:
                break
            await asyncio.sleep(0.02)
        assert [(e["runId"], e["status"], e["completionStatus"], e["summary"]) for e in runs] == [
            (ran["runId"], "ok", "succeeded", "All quiet today.")
        ]
        # the agent turn the job started carries the same id
        waited = (await c.request("agent.wait", {"runId": ran["runId"], "timeoutMs": 5000}))["payload"]
        assert waited["status"] == "ok", waited
        got = (await c.request("cron.get", {"id": job["id"]}))["payload"]
        assert got["id"] == job["id"] and got["state"]["lastRunStatus"] == "ok"
        unknown = await c.request("cron.get", {"id": "nope"})
        assert unknown["error"]["details"] == {"code": "CRON_JOB_NOT_FOUND", "jobId": "nope"}
        key = f"agent:main:cron:{job['id']}"
        texts = transcript_texts(gw, key)
        assert texts[0] == f"[cron:{job['id']} digest] summarise the day" and texts[-1] == "All quiet today."
        runs = (await c.request("cron.runs", {"jobId": job["id"]}))["payload"]
        entry = runs["entries"][0]
        assert entry["status"] == "ok" and entry["sessionKey"] == key and entry["deliveryStatus"] == "delivered"
        # the original's shapes: scope "job" with "id", scope "all", filters
        scoped = (await c.request("cron.runs", {"scope": "job", "id": job["id"]}))["payload"]
        assert scoped["entries"] == runs["entries"]
        every = (await c.request("cron.runs", {"scope": "all", "statuses": ["ok"], "query": "digest"}))["payload"]
        assert [e["jobId"] for e in every["entries"]] == [job["id"]] and every["total"] == 1
        none = (await c.request("cron.runs", {"scope": "all", "status": "error"}))["payload"]
        assert none["entries"] == [] and none["total"] == 0
        no_id = await c.request("cron.runs", {"scope": "job"})
        assert no_id["error"]["code"] == "INVALID_REQUEST" and 'scope "job" needs id' in no_id["error"]["message"]
        actions = [e["payload"]["action"] for e in c.events if e.get("event") == "cron"]
        assert actions[:3] == ["added", "started", "finished"]
        listed = (await c.request("cron.list"))["payload"]
        assert listed["total"] == 1 and listed["jobs"][0]["state"]["lastRunStatus"] == "ok"
        status = (await c.request("cron.status"))["payload"]
        assert status["enabled"] is True and status["jobs"] == 1 and status["storePath"].endswith("cron/jobs.json")
        await cron_down(gw, service)


async def test_job_survives_restart_and_missed_run_is_caught_up(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        service = await cron_up(gw)
        c = await client(gw)
        job = (await c.request("cron.add", agent_job(delivery={"mode": "none"})))["payload"]
        await cron_down(gw, service)
    # the gateway was down while the job's run came due
    store = tmp_path / "state" / "cron" / "jobs.json"
    doc = json.loads(store.read_text())
    doc["jobs"][0]["state"]["nextRunAtMs"] = int(time.time() * 1000) - 3_600_000
    store.write_text(json.dumps(doc))
    with run_gateway(tmp_path, config=CONFIG) as gw:
        service = await cron_up(gw, [Reply("caught up")])
        c = await client(gw)
        entries: list[dict[str, Any]] = []
        for _ in range(200):
            entries = (await c.request("cron.runs", {"jobId": job["id"]}))["payload"]["entries"]
            if entries:
                break
            await asyncio.sleep(0.05)
        assert len(entries) == 1, entries
        assert entries[0]["catchUp"] is True and entries[0]["status"] == "ok" and entries[0]["summary"] == "caught up"
        listed = (await c.request("cron.list"))["payload"]["jobs"]
        assert [j["id"] for j in listed] == [job["id"]]
        assert listed[0]["state"]["nextRunAtMs"] > time.time() * 1000
        assert transcript_texts(gw, f"agent:main:cron:{job['id']}")[-1] == "caught up"
        await cron_down(gw, service)


async def test_system_event_job_and_bad_input(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        service = await cron_up(gw)
        seen: list[tuple[str, str]] = []

        def on_cron_changed(event: CronChangedEvent, ctx: Any) -> None:
            seen.append((event.action, event.job_id))

        gw.call_soon(lambda: gw.gateway.hooks.add(HookRegistration("test", "cron_changed", on_cron_changed)))
        c = await client(gw)
        sys_job = {
            "name": "remind",
            "schedule": {"kind": "at", "at": "+10m"},
            "payload": {"kind": "systemEvent", "text": "stand up"},
            "wakeMode": "next-heartbeat",
        }
        job = (await c.request("cron.add", sys_job))["payload"]
        assert job["sessionTarget"] == "main"
        ran = (await c.request("cron.run", {"id": job["id"], "wait": True}))["payload"]
        assert ran["ran"] is True and ran["status"] == "ok"
        assert (await c.request("cron.list"))["payload"]["total"] == 0  # an `at` job is gone after success
        for _ in range(100):
            if len(seen) >= 2:
                break
            await asyncio.sleep(0.01)
        assert seen == [("added", job["id"]), ("finished", job["id"])]

        bad = await c.request("cron.add", {**sys_job, "schedule": {"kind": "cron", "expr": "0 0 30 2 *"}})
        assert bad["error"]["code"] == "INVALID_REQUEST" and "has no next run time" in bad["error"]["message"]
        bad = await c.request("cron.add", {**sys_job, "agentId": "ghost"})
        assert 'unknown agent id "ghost"' in bad["error"]["message"]
        bad = await c.request(
            "cron.add", {**agent_job(), "payload": {"kind": "agentTurn", "message": "x", "model": "nope/x"}}
        )
        assert not bad["ok"]
        bad = await c.request("cron.add", {**sys_job, "extra": 1})
        assert bad["error"]["code"] == "INVALID_REQUEST" and "extra" in bad["error"]["message"]
        missing = await c.request("cron.run", {"jobId": "nope"})
        assert missing["error"]["message"] == "cron job not found: nope"
        traversal = await c.request("cron.runs", {"jobId": "../etc"})
        assert traversal["error"]["code"] == "INVALID_REQUEST"
        no_id = await c.request("cron.update", {"patch": {"name": "x"}})
        assert "jobId is required" in no_id["error"]["message"]

        reader = await client(gw, scopes=[READ])
        assert (await reader.request("cron.list"))["ok"]
        refused = await reader.request("cron.add", sys_job)
        assert refused["error"]["details"]["missingScope"] == "operator.admin"
        assert (await c.request("health"))["ok"]
        await cron_down(gw, service)


async def test_crashing_delivery_is_a_logged_error_and_the_gateway_keeps_serving(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        service = await cron_up(gw, [Reply("report")])
        c = await client(gw)
        # loopback webhooks are refused by the SSRF guard: the run is recorded as a failed delivery
        job = (await c.request("cron.add", agent_job(delivery={"mode": "webhook", "to": "http://127.0.0.1:9/hook"})))[
            "payload"
        ]
        ran = (await c.request("cron.run", {"jobId": job["id"], "wait": True}, timeout=30))["payload"]
        assert ran["status"] == "error" and ran["error"].startswith("delivery failed:")
        state = (await c.request("cron.list"))["payload"]["jobs"][0]["state"]
        assert state["lastDeliveryStatus"] == "failed" and state["consecutiveErrors"] == 1
        assert (await c.request("health"))["ok"]
        await cron_down(gw, service)


async def test_cli_lists_adds_runs_and_removes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        service = await cron_up(gw)
        auth = ["--url", gw.url, "--token", TEST_TOKEN]
        monkeypatch.setenv("HOMARUS_STATE_DIR", str(gw.paths.state_dir))

        async def cli(*args: str) -> tuple[int, str, str]:
            # in-process (a worker thread has no event loop of its own): one interpreter start is enough
            code = await asyncio.to_thread(cron_cmd.main, [*args, *auth])
            out, err = capsys.readouterr()
            return code, out, err

        code, out, err = await cli(
            "add",
            "--name",
            "nightly",
            "--cron",
            "0 3 * * *",
            "--tz",
            "Europe/Berlin",
            "--system-event",
            "hi",
            "--json",
        )
        assert code == 0, err
        job_id = json.loads(out)["id"]
        code, out, _ = await cli("run", job_id)
        assert code == 0 and "ran: ok" in out
        code, out, _ = await cli("runs", job_id)
        assert " ok " in out
        code, _, err = await cli("add", "--name", "x", "--cron", "99 * * * *", "--system-event", "x")
        assert code == 1 and "invalid cron expression" in err
        code, _, err = await cli("add", "--name", "x", "--every", "soon", "--system-event", "x")
        assert code == 2 and "invalid duration" in err
        # the real entry point, once, as a subprocess
        listed = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "homarus.cli.cron_cmd", "list", *auth],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert job_id in listed.stdout and "nightly" in listed.stdout and "Europe/Berlin" in listed.stdout
        code, out, _ = await cli("rm", job_id)
        assert code == 0 and "removed" in out
        await cron_down(gw, service)


async def test_webhook_delivery_posts_the_finished_run(tmp_path: Path) -> None:
    from tests.fakes.http_server import Answer, serve

    config = {**CONFIG, "tools": {"web": {"fetch": {"allowPrivateNetwork": True}}}}
    async with serve(lambda req: Answer(204)) as srv:
        with run_gateway(tmp_path, config=config) as gw:
            service = await cron_up(gw, [Reply("weekly numbers")])
            c = await client(gw)
            job = (await c.request("cron.add", agent_job(delivery={"mode": "webhook", "to": srv.url("/cron")})))[
                "payload"
            ]
            ran = (await c.request("cron.run", {"jobId": job["id"], "wait": True}, timeout=30))["payload"]
            assert ran["status"] == "ok", ran
            await cron_down(gw, service)
    seen = srv.requests[0]
    assert seen.method == "POST" and seen.target == "/cron" and seen.headers["content-type"] == "application/json"
    body = json.loads(seen.body)
    assert body["jobId"] == job["id"] and body["status"] == "ok" and body["summary"] == "weekly numbers"
    assert body["sessionKey"] == f"agent:main:cron:{job['id']}"


async def test_an_editor_saving_a_job_changed_meanwhile_is_refused(tmp_path: Path) -> None:
    """The original's Control UI saves with the configRevision it read: a job edited by someone
    else since is not overwritten, and the answer says which revision is current."""
    with run_gateway(tmp_path, config=CONFIG) as gw:
        c = await client(gw)
        spec = {"name": "edit me", "schedule": {"kind": "every", "everyMs": 3_600_000}}
        spec |= {"sessionTarget": "main", "payload": {"kind": "systemEvent", "text": "x"}}
        job = (await c.request("cron.add", spec))["payload"]
        read = job["configRevision"]
        assert (
            read.startswith("sha256:")
            and (await c.request("cron.get", {"id": job["id"]}))["payload"]["configRevision"] == read
        )
        listed = (await c.request("cron.list"))["payload"]["jobs"][0]
        assert listed["configRevision"] == read
        first = await c.request(
            "cron.update", {"id": job["id"], "patch": {"name": "mine"}, "expectedConfigRevision": read}
        )
        assert first["ok"] and first["payload"]["configRevision"] != read
        stale = await c.request(
            "cron.update", {"id": job["id"], "patch": {"name": "theirs"}, "expectedConfigRevision": read}
        )
        assert stale["error"]["details"]["code"] == "CRON_JOB_CHANGED"
        assert stale["error"]["details"]["actualConfigRevision"] == first["payload"]["configRevision"]
        assert (await c.request("cron.get", {"id": job["id"]}))["payload"]["name"] == "mine"
        # a run changes the job's state, not its definition: the revision an editor holds stays good
        assert (await c.request("cron.run", {"id": job["id"], "wait": True}, timeout=30))["ok"]
        again = (await c.request("cron.get", {"id": job["id"]}))["payload"]
        assert again["configRevision"] == first["payload"]["configRevision"]
