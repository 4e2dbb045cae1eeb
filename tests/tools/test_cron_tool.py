"""The model's `cron` tool against a real cron service (store in a temp dir, fake clock)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import pytest

from homarus.errors import InvalidRequest
from homarus.tools.base import ToolContext, ToolServices
from homarus.tools.cron_tool import cron_tool
from homarus.tools.services import CronControl
from tests.cron.helpers import make_rig


def ctx(tmp_path: Path, service: object | None) -> ToolContext:
    services = ToolServices(cron=cast("CronControl | None", service))  # a fake may stand in for the scheduler
    return ToolContext("agent:work:main", "work", "run1", "call1", tmp_path, services=services)


async def test_add_list_run_runs_update_remove(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    control: CronControl = rig.service  # the service has the tool's protocol shape
    tool = cron_tool()
    assert tool.name == "cron" and "automation" in tool.tags
    c = ctx(tmp_path, control)
    spec = {
        "name": "water plants",
        "schedule": {"kind": "every", "everyMs": 86_400_000},
        "payload": {"kind": "systemEvent", "text": "water the plants"},
    }
    added = await tool.execute(c, {"action": "add", "job": spec})
    job_id = added.details["id"]
    assert added.details["agentId"] == "work"  # the calling agent owns it
    assert "water plants" in added.content[0].text  # type: ignore[union-attr]
    listed = await tool.execute(c, {"action": "list"})
    assert job_id in listed.content[0].text  # type: ignore[union-attr]
    started = await tool.execute(c, {"action": "run", "job_id": job_id})
    assert started.content[0].text == "started"  # type: ignore[union-attr]
    await rig.scheduler.wait_idle()
    runs = await tool.execute(c, {"action": "runs", "job_id": job_id})
    assert runs.details["entries"][0]["status"] == "ok"
    updated = await tool.execute(c, {"action": "update", "job_id": job_id, "patch": {"enabled": False}})
    assert updated.details["enabled"] is False
    status = await tool.execute(c, {"action": "status"})
    assert status.details["jobs"] == 1
    removed = await tool.execute(c, {"action": "remove", "job_id": job_id})
    assert removed.content[0].text == "removed"  # type: ignore[union-attr]
    await asyncio.sleep(0)


async def test_bad_calls_are_clear_errors(tmp_path: Path) -> None:
    rig = make_rig(tmp_path)
    await rig.scheduler.start()
    tool = cron_tool()
    c = ctx(tmp_path, rig.service)
    with pytest.raises(InvalidRequest, match="job is required"):
        await tool.execute(c, {"action": "add"})
    with pytest.raises(InvalidRequest, match="job_id is required"):
        await tool.execute(c, {"action": "remove"})
    with pytest.raises(InvalidRequest, match="invalid arguments"):
        await tool.execute(c, {"action": "explode"})
    bad = {"name": "x", "schedule": {"kind": "cron", "expr": "bogus"}, "payload": {"kind": "systemEvent", "text": "t"}}
    with pytest.raises(InvalidRequest, match="invalid cron expression"):
        await tool.execute(c, {"action": "add", "job": bad})
    with pytest.raises(InvalidRequest, match="not available"):
        await tool.execute(ctx(tmp_path, None), {"action": "list"})
