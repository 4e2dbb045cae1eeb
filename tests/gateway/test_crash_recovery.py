"""Accepted work survives ``kill -9``: real gateway processes killed at several points, then started
again on the same state (``docs/recovery.md``).

Each test checks the rule of its entry point: every accepted run ends exactly once (one terminal
journal row, one final answer in its transcript), queued runs run after the restart in the order
they were accepted, and no tool call runs twice.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.fakes import RecordedRequest, Reply, Step, run_fake_llm
from tests.gateway.crash_harness import (
    Crashable,
    config,
    crashable,
    operator,
    post_hook,
    text_of,
    user_texts,
)
from tests.waiting import wait_for

SLOW = 120.0  # a model answer that never comes before the kill


def tagged(tag_prefix: str, answer: Callable[[str], Step | None]) -> Callable[[RecordedRequest], Step | None]:
    """Answer by the tag (``<prefix>N``) in the request's last user message."""

    def respond(request: RecordedRequest) -> Step | None:
        texts = user_texts(request.json)
        last = texts[-1] if texts else ""
        for word in last.replace("\n", " ").split():
            if word.startswith(tag_prefix):
                return answer(word.strip(".,"))
        return None

    return respond


def finals(box: Crashable, run_id: str) -> list[str]:
    """The final answers (assistant messages without tool calls) a run left in its transcript."""
    return [
        text_of(m)
        for m in box.messages_of(run_id)
        if m.get("role") == "assistant" and not any(b.get("type") == "toolCall" for b in m.get("content", []))
    ]


async def wait_all(box: Crashable, run_ids: list[str], timeout: float = 30.0) -> dict[str, dict[str, Any]]:
    """``agent.wait`` on each run, then until the journal has each one's end (written just after)."""
    client = await operator(box.proc)
    out = {}
    for run_id in run_ids:
        res = await client.request(
            "agent.wait", {"runId": run_id, "timeoutMs": int(timeout * 1000)}, timeout=timeout + 5
        )
        out[run_id] = res["payload"]
    await wait_for(
        lambda: all(box.journal()[r]["status"] not in ("accepted", "running") for r in run_ids), what="journal ends"
    )
    return out


async def test_webhook_runs_queued_behind_a_busy_lane_run_after_kill9_in_order(tmp_path: Path) -> None:
    with run_fake_llm() as llm, crashable(tmp_path, config(llm.base_url)) as box:
        slow = {"on": True}
        llm.respond = tagged("job-", lambda tag: Reply(f"done {tag}", delay_s=SLOW if slow["on"] else 0.0))
        box.start()
        run_ids = []
        for i in range(10):
            res = post_hook(box.http, f"please do job-{i}", idem=f"key-{i}")
            assert res.status_code == 202, res.text
            run_ids.append(res.json()["runId"])
        # the first run waits on the model; the cron lane (1 slot) keeps the other nine queued
        await wait_for(lambda: any("job-0" in " ".join(user_texts(r.json)) for r in llm.requests), what="job-0")
        await asyncio.sleep(0.2)
        box.kill9()

        journal = box.journal()
        assert [journal[r]["status"] for r in run_ids] == ["running"] + ["accepted"] * 9
        seen_before = len(llm.requests)
        slow["on"] = False
        box.start()
        ends = await wait_all(box, run_ids)
        assert [ends[r]["status"] for r in run_ids] == ["ok"] * 10, ends
        assert ends[run_ids[0]].get("resumed") is True  # cut short while waiting on the model
        assert not any(ends[r].get("resumed") for r in run_ids[1:])

        # after the restart the model saw them in the order they were accepted
        order = []
        for request in llm.requests[seen_before:]:
            for i in range(10):
                if any(f"job-{i}" in t for t in user_texts(request.json)) and i not in order:
                    order.append(i)
        assert order == list(range(10))
        journal = box.journal()
        for i, run_id in enumerate(run_ids):
            assert journal[run_id]["status"] == "ok"
            users = [m for m in box.messages_of(run_id) if m["role"] == "user"]
            assert len(users) == 1, (i, users)  # the resumed run did not write its message twice
            assert finals(box, run_id) == [f"done job-{i}"]

        client = await operator(box.proc)
        status = (await client.request("status"))["payload"]
        assert status["recovery"] == {"requeued": 9, "resumed": 1, "interrupted": 0}
        # a retry of an accepted webhook (same idempotency key) after the restart starts nothing new
        again = post_hook(box.http, "please do job-3", idem="key-3")
        assert again.status_code == 202 and again.json()["runId"] == run_ids[3]
        assert len(box.journal()) == 10
        # ten model calls, and not a line each in the log (httpx logs every request at INFO)
        assert "HTTP Request:" not in box.proc.stderr and "INFO:" in box.proc.stderr  # (logging at INFO)


async def test_agent_runs_after_kill9_the_running_one_is_interrupted_the_queued_ones_run(tmp_path: Path) -> None:
    cfg = config("", maxConcurrent=1)
    with run_fake_llm() as llm:
        cfg["models"]["providers"]["fake"]["baseUrl"] = llm.base_url
        with crashable(tmp_path, cfg) as box:
            slow = {"on": True}
            llm.respond = tagged("ask-", lambda tag: Reply(f"answer {tag}", delay_s=SLOW if slow["on"] else 0.0))
            box.start()
            client = await operator(box.proc)
            sends = [
                ("a1", "agent:main:one", "ask-1"),
                ("b1", "agent:main:two", "ask-2"),
                ("a2", "agent:main:one", "ask-3"),
            ]
            for run_id, session, text in sends:
                await client.send(
                    {
                        "type": "req",
                        "id": run_id,
                        "method": "agent",
                        "params": {"message": text, "sessionKey": session, "idempotencyKey": run_id},
                    }
                )
                assert (await client.response(run_id))["payload"]["status"] == "accepted"
                if run_id == "a1":
                    await wait_for(lambda: llm.requests, what="the first model call")
            await asyncio.sleep(0.3)
            before = box.journal()
            # a1 waits on the model; a2 was steered into it (its message still in memory); b1 waits
            # for the only main-lane slot
            assert {r: before[r]["status"] for r in ("a1", "b1", "a2")} == {
                "a1": "running",
                "b1": "accepted",
                "a2": "running",
            }
            assert before["a2"]["joined_to"] == "a1"
            box.kill9()

            slow["on"] = False
            box.start()
            ends = await wait_all(box, ["a1", "b1", "a2"])
            assert ends["a1"]["status"] == "error" and ends["a1"]["interrupted"] is True
            assert ends["b1"]["status"] == "ok" and ends["a2"]["status"] == "ok"
            assert finals(box, "b1") == ["answer ask-2"] and finals(box, "a2") == ["answer ask-3"]
            notice = finals(box, "a1")
            assert len(notice) == 1 and "interrupted" in notice[0] and "Ask again" in notice[0]
            client = await operator(box.proc)
            replay = await client.request("agent", {"message": "ask-1", "idempotencyKey": "a1"})
            assert replay["ok"] is False and "interrupted" in replay["error"]["message"]
            status = (await client.request("status"))["payload"]
            assert status["recovery"] == {"requeued": 2, "resumed": 0, "interrupted": 1}
            sessions = (await client.request("sessions.list"))["payload"]["sessions"]
            one = next(s for s in sessions if s["key"] == "agent:main:one")
            assert one["status"] in ("done", "interrupted")


async def test_a_tool_call_cut_short_by_kill9_is_never_run_again(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    command = f"echo ran >> {marker} && sleep 60"
    with run_fake_llm() as llm, crashable(tmp_path, config(llm.base_url)) as box:

        def answer(tag: str) -> Step:
            return Reply(tool_calls=[("exec", {"command": command})])

        def respond(request: RecordedRequest) -> Step | None:
            messages = request.json.get("messages", [])
            if messages and messages[-1].get("role") == "tool":
                return Reply(f"after the tool: {text_of(messages[-1])[:60]}")
            return tagged("tool-", answer)(request)

        llm.respond = respond
        box.start()
        hook = post_hook(box.http, "run tool-1 now")
        assert hook.status_code == 202
        hook_run = hook.json()["runId"]
        client = await operator(box.proc)
        res = await client.request(
            "agent", {"message": "run tool-2 too", "sessionKey": "agent:main:ops", "idempotencyKey": "agent-tool"}
        )
        assert res["payload"]["status"] == "accepted"
        await wait_for(lambda: marker.exists() and marker.read_text().count("ran") == 2, what="both tools running")
        box.kill9()

        box.start()
        ends = await wait_all(box, [hook_run, "agent-tool"])
        # the webhook run resumed: its cut tool call is recorded as aborted and the model went on
        assert ends[hook_run]["status"] == "ok" and ends[hook_run]["resumed"] is True
        hook_msgs = box.messages_of(hook_run)
        results = [m for m in hook_msgs if m["role"] == "toolResult"]
        assert len(results) == 1 and results[0]["isError"] is True and "not run again" in text_of(results[0])
        assert finals(box, hook_run)[0].startswith("after the tool: [interrupted")
        # the agent run ended interrupted, its tool call closed the same way, with a notice
        assert ends["agent-tool"]["interrupted"] is True
        agent_msgs = box.messages_of("agent-tool")
        assert [m["role"] for m in agent_msgs] == ["user", "assistant", "toolResult", "assistant"]
        assert "interrupted" in text_of(agent_msgs[-1])
        await asyncio.sleep(0.5)
        assert marker.read_text().count("ran") == 2  # each tool ran once, before the crash


async def test_a_burst_of_50_webhook_runs_killed_mid_burst_each_ends_exactly_once(tmp_path: Path) -> None:
    with run_fake_llm() as llm, crashable(tmp_path, config(llm.base_url)) as box:
        llm.respond = tagged("burst-", lambda tag: Reply(f"done {tag}", delay_s=0.05))
        box.start()
        http = box.http
        accepted: dict[int, str] = {}

        def send(i: int) -> None:
            try:
                res = post_hook(http, f"burst-{i}", idem=f"burst-key-{i}")
            except httpx.HTTPError:
                return  # the gateway died under this request
            if res.status_code == 202:
                accepted[i] = res.json()["runId"]

        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(send, i) for i in range(50)]
            await wait_for(lambda: len(accepted) >= 20, what="20 accepted")
            box.kill9()
            for f in futures:
                f.result()
        assert 20 <= len(accepted) < 50
        journaled = box.journal()
        assert set(accepted.values()) <= set(journaled)  # every 202 was journaled first

        box.start()
        # the sender retries what got no answer, with the same keys: known runs are not started twice
        for i in range(50):
            if i not in accepted:
                res = await asyncio.to_thread(post_hook, box.http, f"burst-{i}", idem=f"burst-key-{i}")
                assert res.status_code == 202
                accepted[i] = res.json()["runId"]
        assert len(set(accepted.values())) == 50
        ends = await wait_all(box, list(accepted.values()), timeout=60)
        assert all(e["status"] == "ok" for e in ends.values()), ends
        journal = box.journal()
        assert len(journal) == 50 and {row["status"] for row in journal.values()} == {"ok"}
        for i, run_id in accepted.items():
            assert finals(box, run_id) == [f"done burst-{i}"], i  # ended exactly once
        with sqlite3.connect(box.state / "runs.sqlite") as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def test_a_cron_run_cut_short_by_kill9_is_continued_by_its_job_once(tmp_path: Path) -> None:
    with run_fake_llm() as llm, crashable(tmp_path, config(llm.base_url)) as box:
        slow = {"on": True}
        llm.respond = tagged("digest-", lambda tag: Reply(f"summary {tag}", delay_s=SLOW if slow["on"] else 0.0))
        box.start()
        client = await operator(box.proc)
        job = {
            "name": "digest",
            "schedule": {"kind": "every", "everyMs": 3_600_000},
            "sessionTarget": "isolated",
            "payload": {"kind": "agentTurn", "message": "write digest-7"},
            "delivery": {"mode": "none"},
        }
        job_id = (await client.request("cron.add", job))["payload"]["id"]
        await client.send({"type": "req", "id": "run", "method": "cron.run", "params": {"jobId": job_id}})
        await wait_for(lambda: llm.requests, what="the cron run's model call")
        box.kill9()
        cron_runs = [r for r in box.journal().values() if r["kind"] == "cron"]
        assert [r["status"] for r in cron_runs] == ["running"]
        run_id = cron_runs[0]["run_id"]

        slow["on"] = False
        box.start()
        client = await operator(box.proc)

        async def entries() -> list[dict[str, Any]]:
            return list((await client.request("cron.runs", {"jobId": job_id}))["payload"]["entries"])

        for _ in range(300):
            if await entries():
                break
            await asyncio.sleep(0.05)
        logged = await entries()
        assert len(logged) == 1 and logged[0]["status"] == "ok" and logged[0]["summary"] == "summary digest-7"
        await asyncio.sleep(0.3)
        cron_runs = [r for r in box.journal().values() if r["kind"] == "cron"]
        assert [(r["run_id"], r["status"], r["resumes"]) for r in cron_runs] == [(run_id, "ok", 1)]
        assert finals(box, run_id) == ["summary digest-7"]
        assert len([m for m in box.messages_of(run_id) if m["role"] == "user"]) == 1
        listed = (await client.request("cron.list"))["payload"]["jobs"]
        assert listed[0]["state"].get("runningAtMs") is None and listed[0]["state"]["nextRunAtMs"] > 0


async def test_a_webhook_message_steered_into_a_running_run_ends_with_it_after_kill9(tmp_path: Path) -> None:
    cfg = config("")
    cfg["hooks"]["defaultSessionKey"] = "hook:inbox"  # every webhook run talks in one session
    with run_fake_llm() as llm:
        cfg["models"]["providers"]["fake"]["baseUrl"] = llm.base_url
        with crashable(tmp_path, cfg) as box:
            slow = {"on": True}

            def respond(request: RecordedRequest) -> Step | None:
                texts = " ".join(user_texts(request.json))
                if "steer-second" in texts:
                    return Reply("handled both", delay_s=SLOW if slow["on"] else 0.0)
                if "steer-first" in texts:
                    return Reply(tool_calls=[("exec", {"command": "sleep 1"})])
                return None

            llm.respond = respond
            box.start()
            first = post_hook(box.http, "steer-first").json()["runId"]
            await wait_for(lambda: llm.requests, what="the first model call")
            second = post_hook(box.http, "steer-second").json()["runId"]  # arrives while the tool runs
            await wait_for(lambda: len(llm.requests) >= 2, what="the model call with the steered message")
            # it was written down before that model call, under its own run id
            assert next(text_of(m) for m in box.messages_of(second)).count("steer-second") == 1
            journal = box.journal()
            assert journal[second]["status"] == "running" and journal[second]["joined_to"] == first
            box.kill9()

            slow["on"] = False
            box.start()
            ends = await wait_all(box, [first, second])
            assert ends[first]["status"] == ends[second]["status"] == "ok"
            assert ends[first]["resumed"] is True and ends[second]["resumed"] is True
            assert finals(box, first) == ["handled both"]
            steered = [m for m in box.messages_of(second) if m["role"] == "user"]
            assert len(steered) == 1 and "steer-second" in text_of(steered[0])  # written once, under its own run
            journal = box.journal()
            assert journal[second]["result"] is not None and first not in journal[second]["result"]
            assert len(journal) == 2
