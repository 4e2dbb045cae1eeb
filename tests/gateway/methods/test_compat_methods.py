"""The methods the original's CLI needs for its everyday commands, checked without the CLI:
shapes, capabilities, scopes and bad input (tests/compat/ drives them with the real CLI)."""

from __future__ import annotations

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
