"""Failover between real gateway processes on one real PostgreSQL: a gateway killed with SIGKILL
in the middle of webhook runs; the survivor takes them over once the dead member's ttl has passed
and every accepted run ends exactly once (one terminal journal row, one answer in its transcript,
its message written once), the one cut short resumed from its transcript. A retry of an accepted
webhook at the survivor starts nothing new."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import psycopg

from tests.fakes import Reply, run_fake_llm
from tests.gateway.crash_harness import config, crashable, operator, post_hook, user_texts
from tests.gateway.test_crash_recovery import SLOW, tagged
from tests.waiting import wait_for

TTL_S = 1.5


def _cluster_config(llm_url: str, pg_url: str) -> dict[str, Any]:
    cfg = config(llm_url)
    cfg["storage"] = {"backend": "postgres", "postgres": {"url": pg_url, "memberTtlSeconds": TTL_S}}
    return cfg


def _journal(pg_url: str) -> dict[str, dict[str, Any]]:
    with psycopg.connect(pg_url) as conn:
        cur = conn.execute("SELECT run_id, status, owner, resumes FROM runs ORDER BY accepted_at, seq")
        return {r[0]: {"status": r[1], "owner": r[2], "resumes": r[3]} for r in cur.fetchall()}


def _messages_of(pg_url: str, run_id: str) -> list[dict[str, Any]]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT entry FROM transcript_entries ORDER BY agent_id, session_id, seq").fetchall()
    entries = [json.loads(r[0]) for r in rows]
    return [e["message"] for e in entries if e.get("type") == "message" and e.get("runId") == run_id]


def _finals(pg_url: str, run_id: str) -> list[str]:
    out = []
    for m in _messages_of(pg_url, run_id):
        if m["role"] == "assistant" and not any(b.get("type") == "toolCall" for b in m["content"]):
            out.append("".join(b.get("text", "") for b in m["content"]))
    return out


async def test_the_survivor_takes_over_a_killed_gateways_runs(tmp_path: Path, pg_url: str) -> None:
    with run_fake_llm() as llm:
        cfg = _cluster_config(llm.base_url, pg_url)
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        with crashable(tmp_path / "a", cfg) as a, crashable(tmp_path / "b", cfg) as b:
            slow = {"on": True}
            llm.respond = tagged("job-", lambda tag: Reply(f"done {tag}", delay_s=SLOW if slow["on"] else 0.0))
            a.start()
            b.start()
            run_ids = []
            for i in range(6):
                res = post_hook(a.http, f"please do job-{i}", idem=f"key-{i}")
                assert res.status_code == 202, res.text
                run_ids.append(res.json()["runId"])
            await wait_for(lambda: any("job-0" in " ".join(user_texts(r.json)) for r in llm.requests), what="job-0")
            await asyncio.sleep(0.2)
            a.kill9()
            killed_at = time.monotonic()
            journal = _journal(pg_url)
            assert [journal[r]["status"] for r in run_ids] == ["running"] + ["accepted"] * 5
            seen_before = len(llm.requests)
            slow["on"] = False

            await wait_for(
                lambda: all(_journal(pg_url)[r]["status"] == "ok" for r in run_ids), what="every run ended", timeout=40
            )
            took = time.monotonic() - killed_at
            assert took > TTL_S  # not before the dead member's ttl ran out
            journal = _journal(pg_url)
            owners = {journal[r]["owner"] for r in run_ids}
            assert len(owners) == 1  # all taken over by the one survivor
            assert journal[run_ids[0]]["resumes"] == 1 and all(journal[r]["resumes"] == 0 for r in run_ids[1:])
            order = []
            for request in llm.requests[seen_before:]:
                for i in range(6):
                    if any(f"job-{i}" in t for t in user_texts(request.json)) and i not in order:
                        order.append(i)
            # each ran; across sessions (each webhook has its own) the order may differ from the
            # acceptance's by the lease round trips: a session's own runs keep theirs (its lane)
            assert sorted(order) == list(range(6))
            for i, run_id in enumerate(run_ids):
                users = [m for m in _messages_of(pg_url, run_id) if m["role"] == "user"]
                assert len(users) == 1, (i, users)  # the resumed run did not write its message twice
                assert _finals(pg_url, run_id) == [f"done job-{i}"]

            again = post_hook(b.http, "please do job-3", idem="key-3")
            assert again.status_code == 202 and again.json()["runId"] == run_ids[3]
            assert len(_journal(pg_url)) == 6
            client = await operator(b.proc)
            waited = await client.request("agent.wait", {"runId": run_ids[5], "timeoutMs": 1000})
            assert waited["payload"]["status"] == "ok"
