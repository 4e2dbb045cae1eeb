"""The methods the original's CLI needs for its everyday commands, checked without the CLI:
shapes, capabilities, scopes and bad input (tests/compat/ drives them with the real CLI)."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import TEST_TOKEN, RunningGateway
from tests.wsclient import Client, open_client


async def client(gw: RunningGateway, scopes: list[str] | None = None) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN, scopes=scopes))["ok"]
    return c


async def test_models_list_is_published_and_shaped_like_the_originals(gw: RunningGateway) -> None:
    c = await client(gw, ["operator.read"])
    assert c.hello is not None and "published-model-catalog" in c.hello["features"]["capabilities"]
    models = (await c.request("models.list", {"view": "default", "includeDetails": True}))["payload"]["models"]
    assert models and {"id", "name", "provider", "contextWindow", "reasoning", "tags", "available"} <= set(models[0])
    bad = await c.request("models.list", {"view": "everything"})
    assert bad["ok"] is False and "view" in bad["error"]["message"]


async def test_nodes_are_an_empty_list_and_unknown(gw: RunningGateway) -> None:
    c = await client(gw, ["operator.read"])
    listed = (await c.request("node.list"))["payload"]
    assert listed["nodes"] == [] and isinstance(listed["ts"], int)
    unknown = await c.request("node.describe", {"nodeId": "x"})
    assert unknown["ok"] is False and unknown["error"]["message"] == "unknown nodeId"
    missing = await c.request("node.describe", {})
    assert missing["ok"] is False and "nodeId" in missing["error"]["message"]


async def test_logs_tail_takes_max_bytes_and_answers_lines(gw: RunningGateway) -> None:
    c = await client(gw, ["operator.read"])
    page = (await c.request("logs.tail", {"limit": 5, "maxBytes": 2000}))["payload"]
    assert {"file", "cursor", "size", "lines", "truncated", "reset"} <= set(page)
    for params, field in (({"maxBytes": 0}, "maxBytes"), ({"limit": 0}, "limit"), ({"cursor": -1}, "cursor")):
        bad = await c.request("logs.tail", params)
        assert bad["ok"] is False and bad["error"]["code"] == "INVALID_REQUEST" and field in bad["error"]["message"]
    extra = await c.request("logs.tail", {"since": 1})
    assert "unexpected property 'since'" in extra["error"]["message"]


async def test_exec_approvals_get_is_an_admins(gw: RunningGateway) -> None:
    admin = await client(gw)
    answer: dict[str, Any] = (await admin.request("exec.approvals.get"))["payload"]
    assert {"path", "exists", "file", "hash", "resolvedDefaults"} <= set(answer)
    assert answer["file"]["version"] == 1 and "security" in answer["file"]["defaults"]
    reader = await client(gw, ["operator.read"])
    refused = await reader.request("exec.approvals.get")
    assert refused["ok"] is False and refused["error"]["message"] == "missing scope: operator.admin"


async def test_cron_list_pages_carry_a_snapshot_revision(gw: RunningGateway) -> None:
    c = await client(gw)
    page = (await c.request("cron.list", {"limit": 200, "offset": 0}))["payload"]
    assert isinstance(page["snapshotRevision"], str) and page["snapshotRevision"]
    assert {"total", "offset", "limit", "hasMore", "nextOffset"} <= set(page)
    too_big = await c.request("cron.list", {"limit": 201})
    assert too_big["ok"] is False and "limit" in too_big["error"]["message"]
    unknown = await c.request("cron.runs", {"id": "nope"})
    assert unknown["ok"] is False and unknown["error"]["details"]["code"] == "CRON_JOB_NOT_FOUND"


async def test_cron_remove_of_an_unknown_job_is_not_found(gw: RunningGateway) -> None:
    c = await client(gw)
    gone = await c.request("cron.remove", {"id": "nope"})
    assert gone["ok"] is False and gone["error"]["message"] == "cron job not found: nope"
    assert gone["error"]["details"] == {"code": "CRON_JOB_NOT_FOUND", "jobId": "nope"}


async def test_sessions_compact_answers_for_a_session_without_transcript_as_the_original(
    gw: RunningGateway,
) -> None:
    c = await client(gw)
    none = (await c.request("sessions.compact", {"key": "nope"}))["payload"]
    assert none == {"ok": True, "key": "agent:main:nope", "compacted": False, "reason": "no sessionId"}
    bad = await c.request("sessions.compact", {"key": "nope", "maxLines": 0})
    assert bad["ok"] is False and "maxLines" in bad["error"]["message"]
    reader = await client(gw, ["operator.read"])
    assert (await reader.request("sessions.compact", {"key": "nope"}))["error"]["message"].startswith("missing scope")


async def test_diagnostics_stability_reads_the_audit_trail(gw: RunningGateway) -> None:
    c = await client(gw)
    assert (await c.request("agent", {"message": "hi", "sessionKey": "s", "idempotencyKey": "k2"}))["ok"]
    await c.request("agent.wait", {"runId": "k2", "timeoutMs": 10_000})
    snap = (await c.request("diagnostics.stability", {"limit": 2}))["payload"]
    assert snap["capacity"] == 1000 and snap["count"] >= 3 and len(snap["events"]) == 2
    assert snap["summary"]["byType"]["run.start"] >= 1 and snap["summary"]["memory"]["latest"]["rssBytes"] > 0
    ends = (await c.request("diagnostics.stability", {"type": "run.end"}))["payload"]
    assert [e["status"] for e in ends["events"]] == ["ok"]
    later = (await c.request("diagnostics.stability", {"sinceSeq": snap["lastSeq"]}))["payload"]
    assert later["count"] == 0
    bad = await c.request("diagnostics.stability", {"limit": 0})
    assert bad["ok"] is False and "limit" in bad["error"]["message"]


async def test_skills_curator_status_has_nothing_to_curate(gw: RunningGateway) -> None:
    c = await client(gw, ["operator.read"])
    status = (await c.request("skills.curator.status"))["payload"]
    assert status["counts"] == {"active": 0, "stale": 0, "archived": 0} and status["lastAttemptAtMs"] is None


async def test_secrets_reload_rereads_the_file_and_keeps_the_config_when_it_breaks(gw: RunningGateway) -> None:
    c = await client(gw)
    path = gw.paths.config_path
    path.write_text(json.dumps({"agents": {"defaults": {"heartbeat": {"every": "3h"}}}}))
    assert (await c.request("secrets.reload"))["payload"] == {"ok": True, "warningCount": 0}
    config = (await c.request("config.get"))["payload"]["config"]
    assert config["agents"]["defaults"]["heartbeat"]["every"] == "3h"
    path.write_text('{"agents": {"defaults": {"heartbeat": {"every": 7}}}}')
    broken = await c.request("secrets.reload")
    assert broken["ok"] is False and broken["error"] == {"code": "UNAVAILABLE", "message": "secrets.reload failed"}
    assert gw.gateway.config.agents.defaults.heartbeat.every == "3h"
    reader = await client(gw, ["operator.read"])
    assert (await reader.request("secrets.reload"))["ok"] is False
